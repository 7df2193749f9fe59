"""Crash-safe file writes: readers see a complete file or none, never half of one.

Published directories are named `step_<N>`; what a crash leaves behind is dot-named (staged
directories, replaced copies), so readers never list it and the next start deletes it.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
from pathlib import Path

_STEP_DIR = re.compile(r"^step_(\d+)$")


def _write_temporary(path: Path, data: bytes) -> Path:
    """`data` in a synced temporary sibling of `path`, dot-named so readers never list it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # Unique per thread too: two threads of one process may save the same file at once.
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return tmp


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write to a temporary sibling, fsync, then rename over `path` (atomic on POSIX)."""
    path = Path(path)
    os.replace(_write_temporary(path, data), path)


def atomic_create_bytes(path: Path, data: bytes) -> None:
    """Like atomic_write_bytes, but never replaces: FileExistsError when `path` exists.

    link(2) fails when the target exists, atomically, where an exists-then-rename check would race.
    """
    path = Path(path)
    tmp = _write_temporary(path, data)
    try:
        os.link(tmp, path)
    finally:
        tmp.unlink()


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


def step_dirs(root: Path) -> dict[int, Path]:
    """The `root/step_<N>` directories by N; none when `root` does not exist."""
    root = Path(root)
    if not root.is_dir():
        return {}
    return {int(m.group(1)): child for child in root.iterdir() if (m := _STEP_DIR.match(child.name))}


def remove_hidden(root: Path) -> None:
    """Delete the dot-named directories a crash left under `root`."""
    for child in Path(root).iterdir() if Path(root).is_dir() else ():
        if child.name.startswith("."):
            shutil.rmtree(child, ignore_errors=True)
