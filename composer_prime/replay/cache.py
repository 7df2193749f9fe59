"""The on-disk answer cache that makes a replay resumable without paying twice.

SQLite (stdlib), one row per successful teacher answer, committed as soon as the answer arrives.
In WAL mode a committed row survives the process being SIGKILLed, so a rerun finds every answer
that was paid for. The key is a hash of everything that determines the answer (teacher name,
model, the rendered request: state, tools, sampling parameters), see `Teacher.key`. Failed calls
are not cached: a rerun retries them. Student entropies (VOI gating) are cached in a second table.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path


class AnswerCache:
    def __init__(self, path: Path):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.path = Path(path)
        self._db = sqlite3.connect(self.path, isolation_level=None)  # autocommit: each put is its own transaction
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        self._db.execute("CREATE TABLE IF NOT EXISTS scores (key TEXT PRIMARY KEY, value REAL NOT NULL)")

    def get(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM answers WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def put(self, key: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO answers (key, value) VALUES (?, ?)", (key, value))

    def get_score(self, key: str) -> float | None:
        row = self._db.execute("SELECT value FROM scores WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def put_score(self, key: str, value: float) -> None:
        self._db.execute("INSERT OR REPLACE INTO scores (key, value) VALUES (?, ?)", (key, value))

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]

    def close(self) -> None:
        self._db.close()
