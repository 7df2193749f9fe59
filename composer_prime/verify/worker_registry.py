"""Registered workers: public keys, bans, open assignments, and per-worker accept/reject statistics.

Saved as JSON (atomic rename) so that bans and counts survive an orchestrator restart; written only when
something in it changed (a new worker, an assignment issued or answered, a verdict), never on a repeated join.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from composer_prime import keys
from composer_prime.utils.fs import atomic_write_bytes


@dataclass
class WorkerStats:
    batches_accepted: int = 0
    batches_rejected: int = 0
    samples_accepted: int = 0
    samples_rejected: int = 0
    batches_dropped: int = 0
    """Batches set aside without counting against the worker: stale ones (gone stale after they were assigned), and the same batch uploaded again."""
    reasons: Counter = field(default_factory=Counter)
    """Why batches or samples were rejected (reason -> count)."""

    @property
    def failure_rate(self) -> float:
        total = self.samples_accepted + self.samples_rejected
        return self.samples_rejected / total if total else 0.0


@dataclass
class WorkerEntry:
    public_key: str
    banned: bool = False
    ban_reason: str = ""
    stats: WorkerStats = field(default_factory=WorkerStats)
    assignments: dict[str, list[float]] = field(default_factory=dict)
    """Open assignments: id -> [expires_at, samples expected, upload granted (0 or 1)] (coordinator/assign.py)."""
    token: str = ""
    """SHA-256 of the volunteer token it joined with, when the run gives one per volunteer (else empty)."""


class WorkerRegistry:
    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path else None
        self.workers: dict[str, WorkerEntry] = {}
        # The orchestrator's coordinator thread registers workers while its verifier records and saves.
        self._lock = threading.RLock()
        if self.path and self.path.is_file():
            for worker_id, raw in json.loads(self.path.read_text()).items():
                stats = raw.pop("stats")
                stats["reasons"] = Counter(stats["reasons"])
                raw.setdefault("assignments", {})
                self.workers[worker_id] = WorkerEntry(**raw, stats=WorkerStats(**stats))

    def register(self, worker_id: str, public_key_hex: str, token: str = "") -> bool:
        """Register `worker_id` with this key (and volunteer token digest); True when it is new (False: it was)."""
        keys.parse_public_key(public_key_hex)  # refuse a malformed key at registration, not at first batch
        with self._lock:
            existing = self.workers.get(worker_id)
            if existing is not None:
                if existing.public_key != public_key_hex:
                    raise ValueError(f"worker {worker_id!r} is already registered with another key")
                return False
            self.workers[worker_id] = WorkerEntry(public_key=public_key_hex, token=token)
            self.save()
            return True

    def token_holder(self, token: str) -> str | None:
        """The worker a volunteer token (its digest) admitted, if any."""
        with self._lock:
            return next((w for w, e in self.workers.items() if e.token == token), None)

    def sampling(self, worker_id: str, now: float) -> int:
        """Assignments `worker_id` holds, not expired, with no upload granted yet: the batches it is still sampling.
        One it has uploaded no longer counts, answered or not, so a worker never waits on the verifier."""
        with self._lock:
            return sum(1 for expires, _, granted in self.workers[worker_id].assignments.values()
                       if expires > now and not granted)

    def add_assignment(self, worker_id: str, assignment_id: str, expires_at: float, samples: int) -> None:
        with self._lock:
            self.workers[worker_id].assignments[assignment_id] = [expires_at, samples, 0]
            self.save()

    def mark_granted(self, worker_id: str, assignment_id: str) -> None:
        """An upload was granted for this open assignment. Not saved on its own: lost at a restart, the
        assignment only counts as being sampled again until it is answered or expires."""
        with self._lock:
            self.workers[worker_id].assignments[assignment_id][2] = 1

    def close_assignment(self, worker_id: str, assignment_id: str) -> bool:
        """Mark it answered; False when it was not open (never issued, answered before, or abandoned)."""
        with self._lock:
            if self.workers[worker_id].assignments.pop(assignment_id, None) is None:
                return False
            self.save()
            return True

    def is_open(self, worker_id: str, assignment_id: str, now: float) -> bool:
        with self._lock:
            entry = self.workers.get(worker_id)
            held = entry.assignments.get(assignment_id) if entry else None
            return held is not None and held[0] > now

    def public_key(self, worker_id: str) -> Ed25519PublicKey | None:
        entry = self.workers.get(worker_id)
        return keys.parse_public_key(entry.public_key) if entry else None

    def ban(self, worker_id: str, reason: str) -> None:
        entry = self.workers[worker_id]
        entry.banned, entry.ban_reason = True, reason
        self.save()

    def summary(self) -> dict[str, dict]:
        """Per worker: counts, failure rate, ban state (for metrics.jsonl)."""
        with self._lock:
            return {w: {**_stats_dict(e.stats), "failure_rate": e.stats.failure_rate, "banned": e.banned}
                    for w, e in self.workers.items()}

    def save(self) -> None:
        if self.path is not None:
            with self._lock:
                data = {w: {"public_key": e.public_key, "banned": e.banned, "ban_reason": e.ban_reason,
                            "stats": _stats_dict(e.stats), "assignments": e.assignments, "token": e.token}
                        for w, e in self.workers.items()}
                atomic_write_bytes(self.path, json.dumps(data, indent=1).encode())


def _stats_dict(stats: WorkerStats) -> dict:
    # dataclasses.asdict would rebuild the Counter from (key, value) pairs, counting the pairs.
    return {**{k: v for k, v in vars(stats).items() if k != "reasons"}, "reasons": dict(stats.reasons)}
