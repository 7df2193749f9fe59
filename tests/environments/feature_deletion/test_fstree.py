"""Trees sandboxed code may write, walked on the host without recursion: a 1,100-level directory chain (deeper
than Python 3.11's recursion limit and than PATH_MAX) is over quota for a read, and removed, chowned and
walked without error."""

from __future__ import annotations

import os
import shutil
import stat

import pytest
from feature_deletion.fstree import Quota, QuotaExceeded, chown_tree, mirror, remove_tree, walk

DEPTH = 1100


def _chain(root, depth=DEPTH, name="deep_directory_level"):
    """A chain of directories `depth` levels deep, built with directory descriptors (its path is longer than PATH_MAX)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        with open(os.open("leaf.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as f:
            f.write("x")
    finally:
        os.close(fd)


def test_a_deep_chain_is_over_quota_and_removed_completely(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "pkg.py").write_text("x = 1\n")
    _chain(root)
    try:
        _check_chain(root, tmp_path)
    finally:
        remove_tree(root)  # never leave the chain to pytest's own cleanup, which recurses


def _check_chain(root, tmp_path):
    assert len("deep_directory_level/" * DEPTH) > os.pathconf("/", "PC_PATH_MAX")
    with pytest.raises(QuotaExceeded, match="deeper than 64"):
        list(walk(root))
    entries = [rel for rel, _ in walk(root, quota=None)]
    assert len(entries) == DEPTH + 2 and entries[0] == "deep_directory_level" and entries[-1].endswith("leaf.txt")
    chown_tree(root, 12345, 12345)
    assert os.stat(root / "pkg.py").st_uid == 12345
    # Why the host cannot use the standard walks on an agent's tree (Python 3.11): os.walk stops silently at
    # PATH_MAX, shutil.rmtree recurses.
    assert sum(1 for _ in os.walk(root)) < DEPTH
    with pytest.raises(RecursionError):
        shutil.rmtree(root)
    remove_tree(root)
    assert not root.exists() and list(tmp_path.iterdir()) == []


def test_walk_counts_entries_and_bytes_and_never_follows_links(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f").write_bytes(b"x" * 1000)
    (tmp_path / "link").symlink_to("/etc")
    found = dict(walk(tmp_path))
    assert set(found) == {"a", "a/f", "link"}
    with pytest.raises(QuotaExceeded):
        list(walk(tmp_path, Quota(max_bytes=999)))
    with pytest.raises(QuotaExceeded):
        list(walk(tmp_path, Quota(max_entries=2)))
    remove_tree(tmp_path / "link")
    assert (tmp_path / "a").exists() and not (tmp_path / "link").is_symlink()
    remove_tree(tmp_path / "missing")  # nothing there: nothing to do


def test_mirror_replaces_links_and_never_writes_through_them(tmp_path):
    """What sandboxed code left is copied as it is: links stay links (never followed, in either tree), a link in
    the destination where the source has a directory is replaced, FIFOs are made, not opened, and extra entries
    of the destination go."""
    src, dst, outside = tmp_path / "src", tmp_path / "dst", tmp_path / "outside"
    for d in (src / "sub", dst, outside):
        d.mkdir(parents=True)
    (src / "sub" / "f.txt").write_text("new")
    os.symlink(outside, src / "link")
    os.mkfifo(src / "fifo")
    os.chmod(src / "sub" / "f.txt", 0o640)
    os.symlink(outside, dst / "sub")  # the host tree has a link where the source has a directory
    os.mkfifo(dst / "fifo")  # opened for writing, a FIFO would block
    (dst / "stale").mkdir()
    (dst / "stale" / "x").write_text("x")
    mirror(src, dst)
    assert list(outside.iterdir()) == []
    assert (dst / "sub").is_dir() and not (dst / "sub").is_symlink() and (dst / "sub" / "f.txt").read_text() == "new"
    assert os.readlink(dst / "link") == str(outside) and stat.S_ISFIFO(os.lstat(dst / "fifo").st_mode)
    assert oct(os.lstat(dst / "sub" / "f.txt").st_mode & 0o777) == "0o640" and not (dst / "stale").exists()
    assert os.lstat(dst / "sub" / "f.txt").st_mtime_ns == os.lstat(src / "sub" / "f.txt").st_mtime_ns
