"""Trees the agent's code may have written, walked on the host without recursion and within a quota.

Sandboxed code writes into its workspace and output directory, and those are walked on the host
afterwards (what changed, ownership, cleanup). A directory chain a thousand levels deep breaks every
recursive walk of Python 3.11 (`os.walk`, `shutil.rmtree`: RecursionError) and any path-based call past
PATH_MAX; here every walk is an explicit stack of directory file descriptors (`dir_fd`, never following a
link), and every walk that reads stops at `Quota` with `QuotaExceeded`. Removal has no quota: it always
finishes.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class QuotaExceeded(RuntimeError):
    """A tree is deeper or holds more entries or bytes than its quota allows."""


@dataclass(frozen=True)
class Quota:
    max_depth: int = 64  # directory levels below the root
    max_entries: int = 50_000  # files, directories and links
    max_bytes: int = 512 * 2**20  # sum of regular files' sizes


def walk(root: str | Path, quota: Quota | None = Quota()) -> Iterator[tuple[str, os.stat_result]]:
    """(relative path, lstat) of every entry under `root`, directories before their contents; links are
    reported, never followed. Raises QuotaExceeded as soon as the tree is over `quota` (None: no quota)."""
    entries = size = 0
    root_fd = os.open(root, _DIR_FLAGS)
    stack: list[tuple[int, str, int]] = [(root_fd, "", 0)]
    try:
        while stack:
            fd, prefix, depth = stack.pop()
            try:
                with os.scandir(fd) as it:
                    names = sorted(e.name for e in it)
                for name in names:
                    rel = prefix + name
                    try:
                        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    entries += 1
                    if stat.S_ISREG(st.st_mode):
                        size += st.st_size
                    if quota is not None and (entries > quota.max_entries or size > quota.max_bytes):
                        raise QuotaExceeded(f"more than {quota.max_entries} entries or {quota.max_bytes >> 20} MiB")
                    yield rel, st
                    if stat.S_ISDIR(st.st_mode):
                        if quota is not None and depth + 1 > quota.max_depth:
                            raise QuotaExceeded(f"directories nested deeper than {quota.max_depth} levels ({rel[:120]}...)")
                        try:
                            child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                        except OSError:
                            continue
                        stack.append((child, rel + "/", depth + 1))
            finally:
                os.close(fd)
    finally:
        for fd, _, _ in stack:
            os.close(fd)


def remove_tree(root: str | Path) -> None:
    """Remove `root` and everything under it, however deep; a missing root is fine."""
    root = Path(root)
    try:
        st = os.stat(root, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        root.unlink()
        return
    _make_writable(root)
    parent_fd = os.open(root.parent, _DIR_FLAGS)
    stack: list[tuple[int, str, int]] = []
    try:
        stack.append((parent_fd, root.name, os.open(root.name, _DIR_FLAGS, dir_fd=parent_fd)))
        while stack:
            up, name, fd = stack[-1]
            child = None
            with os.scandir(fd) as it:
                for entry in it:
                    if entry.is_dir(follow_symlinks=False):
                        child = entry.name
                        break
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(entry.name, dir_fd=fd)
            if child is not None:
                with contextlib.suppress(OSError):
                    os.chmod(child, 0o700, dir_fd=fd, follow_symlinks=False)
                stack.append((fd, child, os.open(child, _DIR_FLAGS, dir_fd=fd)))
                continue
            stack.pop()
            os.close(fd)
            with contextlib.suppress(FileNotFoundError):
                os.rmdir(name, dir_fd=up)
    finally:
        for _, _, fd in stack:
            os.close(fd)
        os.close(parent_fd)


def _make_writable(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.chmod(path, 0o700, follow_symlinks=False)


def chown_tree(root: str | Path, uid: int, gid: int) -> None:
    """Give `root` and every entry under it (links themselves) to uid:gid, however deep."""
    os.chown(root, uid, gid, follow_symlinks=False)
    root_fd = os.open(root, _DIR_FLAGS)
    stack = [root_fd]
    try:
        while stack:
            fd = stack.pop()
            try:
                with os.scandir(fd) as it:
                    names = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
                for name, is_dir in names:
                    with contextlib.suppress(FileNotFoundError):
                        os.chown(name, uid, gid, dir_fd=fd, follow_symlinks=False)
                    if is_dir:
                        with contextlib.suppress(OSError):
                            stack.append(os.open(name, _DIR_FLAGS, dir_fd=fd))
            finally:
                os.close(fd)
    finally:
        for fd in stack:
            os.close(fd)


@contextlib.contextmanager
def temporary_directory(prefix: str) -> Iterator[str]:
    """tempfile.TemporaryDirectory whose cleanup survives whatever sandboxed code left in it."""
    path = tempfile.mkdtemp(prefix=prefix)
    try:
        yield path
    finally:
        remove_tree(path)
