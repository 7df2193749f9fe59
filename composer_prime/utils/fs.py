"""Crash-safe file writes: readers see a complete file or none, never half of one."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write to a temporary sibling, fsync, then rename over `path` (atomic on POSIX)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Unique per thread too: two threads of one process may save the same file at once.
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def atomic_publish_dir(tmp_dir: Path, final_dir: Path) -> None:
    """Move a fully written directory into place; an existing `final_dir` is replaced."""
    final_dir = Path(final_dir)
    if final_dir.exists():
        trash = final_dir.with_name(f".{final_dir.name}.old-{os.getpid()}")
        os.replace(final_dir, trash)
        os.replace(tmp_dir, final_dir)
        shutil.rmtree(trash, ignore_errors=True)
    else:
        os.replace(tmp_dir, final_dir)
