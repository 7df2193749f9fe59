"""Assignments and batches a worker holds but has not seen uploaded, kept on disk across crashes.

An assignment is written to `assigned/<id>.msgpack` (as the run signed it) before sampling starts. Its
batch, once signed, is written to `pending/<id>.msgpack` (atomic rename), which ends the assignment's
entry, and moved to `uploaded/` after the store confirmed it. A restarted worker uploads whatever is still
pending, to the same key (protocol.rollout_key), then samples the assignments it still holds: their noise
is keyed, so it draws the same tokens again. The verifier drops an assignment it has already seen
answered: no batch is lost once signed, and none counts twice.
"""

from __future__ import annotations

import os
from pathlib import Path

from composer_prime.utils.fs import atomic_write_bytes


class Journal:
    def __init__(self, root: Path):
        self.assigned = Path(root) / "assigned"
        self.pending = Path(root) / "pending"
        self.uploaded = Path(root) / "uploaded"
        for folder in (self.assigned, self.pending, self.uploaded):
            folder.mkdir(parents=True, exist_ok=True)

    def add_assignment(self, assignment_id: str, signed: bytes) -> None:
        atomic_write_bytes(self.assigned / f"{assignment_id}.msgpack", signed)

    def assignments(self) -> list[bytes]:
        """Signed assignments not yet answered by a batch, oldest first."""
        return [p.read_bytes() for p in _oldest_first(self.assigned)]

    def drop_assignment(self, assignment_id: str) -> None:
        (self.assigned / f"{assignment_id}.msgpack").unlink(missing_ok=True)

    def add(self, batch_id: str, signed: bytes) -> None:
        atomic_write_bytes(self.pending / f"{batch_id}.msgpack", signed)
        self.drop_assignment(batch_id)

    def pending_batches(self) -> list[tuple[str, bytes]]:
        """(batch id, signed bytes), oldest first."""
        return [(p.stem, p.read_bytes()) for p in _oldest_first(self.pending)]

    def mark_uploaded(self, batch_id: str) -> None:
        os.replace(self.pending / f"{batch_id}.msgpack", self.uploaded / f"{batch_id}.msgpack")

    def uploaded_count(self) -> int:
        return sum(1 for _ in self.uploaded.glob("*.msgpack"))


def _oldest_first(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.msgpack"), key=lambda p: p.stat().st_mtime)
