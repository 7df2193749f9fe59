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
        parent_fd = os.open(root.parent, _DIR_FLAGS)
    except FileNotFoundError:
        return
    try:
        remove_at(parent_fd, root.name)
    finally:
        os.close(parent_fd)


def remove_at(parent_fd: int, name: str) -> None:
    """Remove entry `name` of the directory open as `parent_fd` and everything under it, never following a link."""
    try:
        st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(name, dir_fd=parent_fd)
        return
    with contextlib.suppress(OSError):
        os.chmod(name, 0o700, dir_fd=parent_fd, follow_symlinks=False)
    stack: list[tuple[int, str, int]] = []
    try:
        stack.append((parent_fd, name, os.open(name, _DIR_FLAGS, dir_fd=parent_fd)))
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


def mirror(src: str | Path | int, dst: str | Path | int, owner: int | None = None) -> None:
    """Make the directory `dst` (a path or an open directory) hold what `src` holds: the same directories, regular files (contents, modes,
    mtimes), links (as links) and FIFOs; entries of `dst` that `src` lacks are removed. Neither tree's links
    are ever followed. A regular file whose size, mode and mtime match is taken as unchanged (rsync's rule),
    so a second mirror of an unchanged tree only reads metadata. Sockets and devices are skipped (an
    unprivileged process can make only the overlay whiteout 0:0, which nothing here reads). Every entry it
    writes is given to `owner` (uid = gid) when set. Hard links become separate files."""
    src_fd, dst_fd = (os.dup(p) if isinstance(p, int) else os.open(p, _DIR_FLAGS) for p in (src, dst))
    # (src fd, dst fd, src stat to apply on leaving, or None while entering)
    stack: list[tuple[int, int, os.stat_result | None]] = [(src_fd, dst_fd, None)]
    try:
        while stack:
            s_fd, d_fd, leaving = stack.pop()
            if leaving is not None:
                _set_meta(d_fd, leaving, owner)
                os.close(s_fd)
                os.close(d_fd)
                continue
            stack.append((s_fd, d_fd, os.fstat(s_fd)))
            names = set(os.listdir(s_fd))
            for name in set(os.listdir(d_fd)) - names:
                remove_at(d_fd, name)
            for name in sorted(names):
                st = os.stat(name, dir_fd=s_fd, follow_symlinks=False)
                try:
                    have = os.stat(name, dir_fd=d_fd, follow_symlinks=False)
                except FileNotFoundError:
                    have = None
                kind = stat.S_IFMT(st.st_mode)
                if have is not None and stat.S_IFMT(have.st_mode) != kind:
                    remove_at(d_fd, name)
                    have = None
                if kind == stat.S_IFDIR:
                    if have is None:
                        os.mkdir(name, 0o700, dir_fd=d_fd)
                    child_s = os.open(name, _DIR_FLAGS, dir_fd=s_fd)
                    stack.append((child_s, os.open(name, _DIR_FLAGS, dir_fd=d_fd), None))
                elif kind == stat.S_IFREG:
                    if have is None or (have.st_size, have.st_mtime_ns, have.st_mode) != \
                            (st.st_size, st.st_mtime_ns, st.st_mode):
                        _copy_file(s_fd, d_fd, name, st, owner)
                elif kind == stat.S_IFLNK:
                    target = os.readlink(name, dir_fd=s_fd)
                    if have is not None and os.readlink(name, dir_fd=d_fd) == target:
                        continue
                    if have is not None:
                        os.unlink(name, dir_fd=d_fd)
                    os.symlink(target, name, dir_fd=d_fd)
                    if owner is not None:
                        os.chown(name, owner, owner, dir_fd=d_fd, follow_symlinks=False)
                elif kind == stat.S_IFIFO:
                    if have is None:
                        os.mkfifo(name, 0o600, dir_fd=d_fd)
                    _set_path_meta(d_fd, name, st, owner)
    finally:
        for s_fd, d_fd, _ in stack:
            os.close(s_fd)
            os.close(d_fd)


def _copy_file(s_fd: int, d_fd: int, name: str, st: os.stat_result, owner: int | None) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), dir_fd=s_fd)
    try:
        dst = os.open(name, flags, 0o600, dir_fd=d_fd)
        try:
            while os.sendfile(dst, src, None, 1 << 20):
                pass
            _set_meta(dst, st, owner)
        finally:
            os.close(dst)
    finally:
        os.close(src)


def _set_meta(fd: int, st: os.stat_result, owner: int | None) -> None:
    if owner is not None:
        os.fchown(fd, owner, owner)
    os.fchmod(fd, stat.S_IMODE(st.st_mode))
    os.utime(fd, ns=(st.st_atime_ns, st.st_mtime_ns))


def _set_path_meta(d_fd: int, name: str, st: os.stat_result, owner: int | None) -> None:
    if owner is not None:
        os.chown(name, owner, owner, dir_fd=d_fd, follow_symlinks=False)
    os.chmod(name, stat.S_IMODE(st.st_mode), dir_fd=d_fd)  # a FIFO (lstat'd, nothing else runs): no link
    os.utime(name, ns=(st.st_atime_ns, st.st_mtime_ns), dir_fd=d_fd, follow_symlinks=False)


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
