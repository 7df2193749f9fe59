"""Batches a worker has signed but not yet seen uploaded, kept on disk across crashes.

A batch is written to `pending/<batch_id>.msgpack` (atomic rename) before its upload starts and
moved to `uploaded/` after the store confirmed it. A restarted worker uploads whatever is still
pending, to the same key (protocol.rollout_key), and the verifier drops a batch id it has already
seen: no batch is lost once signed, and none counts twice. Samples of a batch still being generated
when the worker died are the only work lost; they were never promised to anyone.
"""

from __future__ import annotations

import os
from pathlib import Path

from composer_prime.utils.fs import atomic_write_bytes


class Journal:
    def __init__(self, root: Path):
        self.pending = Path(root) / "pending"
        self.uploaded = Path(root) / "uploaded"
        self.pending.mkdir(parents=True, exist_ok=True)
        self.uploaded.mkdir(parents=True, exist_ok=True)

    def add(self, batch_id: str, signed: bytes) -> None:
        atomic_write_bytes(self.pending / f"{batch_id}.msgpack", signed)

    def pending_batches(self) -> list[tuple[str, bytes]]:
        """(batch id, signed bytes), oldest first."""
        files = sorted(self.pending.glob("*.msgpack"), key=lambda p: p.stat().st_mtime)
        return [(p.stem, p.read_bytes()) for p in files]

    def mark_uploaded(self, batch_id: str) -> None:
        os.replace(self.pending / f"{batch_id}.msgpack", self.uploaded / f"{batch_id}.msgpack")

    def uploaded_count(self) -> int:
        return sum(1 for _ in self.uploaded.glob("*.msgpack"))
