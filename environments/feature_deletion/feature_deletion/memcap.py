"""One cap on the memory of all of a sandboxed command's processes together.

RLIMIT_AS bounds one process, and RLIMIT_NPROC lets a command have many: only a bound on the sum
keeps one rollout from exhausting the host. The cap is a memory cgroup made for the command, v2 or v1,
whichever this host lets us create (`MemoryCgroup.create`): the sandbox's init joins it before anything
else runs, so every process of the command and every tmpfs page it writes (its /tmp, its staged
workspace) is charged to it, and the kernel kills processes of the command, never others, when it is
full. It is removed after the command, also when the command was killed, and an empty cgroup left by a
host process that died is removed by the next one made beside it.

Where no memory cgroup can be made (an unprivileged container, no memory controller), `Watchdog` sums
the resident memory of the sandbox uid's processes from /proc every `WATCHDOG_S` and kills the command
when the sum is over the cap: a bound, not an exact one (what the processes allocate within one
interval comes on top; the tmpfs of /tmp and of the staged workspace are bounded by their own sizes).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

PREFIX = "fd-sandbox-"
WATCHDOG_S = 0.05
_names = itertools.count()


@dataclass(frozen=True)
class _Hierarchy:
    version: int  # 2 or 1
    parents: tuple[Path, ...]  # where a child cgroup may be made, best first


def _mounts() -> list[tuple[str, str, str, str]]:
    """(mount point, root within the hierarchy, fs type, super options) of each cgroup mount."""
    found = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
                found.append((fields[4].replace("\\040", " "), fields[3], tail[0], tail[2]))
    return found


def _own_paths() -> dict[str, str]:
    """{controller list ("" for v2): this process's cgroup path} from /proc/self/cgroup."""
    paths = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            paths[controllers] = path
    return paths


def _under(mount: str, root: str, path: str) -> Path | None:
    if path != root and not path.startswith(root.rstrip("/") + "/"):
        return None
    return Path(mount) / path[len(root):].lstrip("/")


@functools.lru_cache(maxsize=None)
def hierarchies() -> tuple[_Hierarchy, ...]:
    """The memory hierarchies of this host, v2 before v1, each with the parents to try: our own cgroup
    (nested under whatever bounds us), then the hierarchy's root."""
    own = _own_paths()
    found = []
    for mount, root, fstype, options in _mounts():
        if fstype == "cgroup2":
            try:
                if "memory" not in Path(mount, "cgroup.controllers").read_text().split():
                    continue
            except OSError:
                continue
            path = own.get("")
        elif "memory" in options.split(","):
            path = next((p for c, p in own.items() if "memory" in c.split(",")), None)
        else:
            continue
        parents = [p for p in (_under(mount, root, path) if path else None, Path(mount)) if p is not None]
        found.append(_Hierarchy(2 if fstype == "cgroup2" else 1, tuple(dict.fromkeys(parents))))
    return tuple(sorted(found, key=lambda h: -h.version))


class MemoryCgroup:
    """A memory cgroup capped at `limit` bytes, with no swap; `procs` is the file a process writes "0" to, to join."""

    def __init__(self, path: Path, version: int, limit: int):
        self.path, self.version, self.limit = path, version, limit
        self.procs = str(path / "cgroup.procs")

    @classmethod
    def create(cls, limit: int) -> MemoryCgroup | None:
        """A new cgroup capped at `limit` bytes, or None where none can be made here."""
        for hierarchy in hierarchies():
            for parent in hierarchy.parents:
                group = cls._make(parent, hierarchy.version, limit)
                if group is not None:
                    return group
        return None

    @classmethod
    def _make(cls, parent: Path, version: int, limit: int) -> MemoryCgroup | None:
        _sweep(parent)
        if version == 2:
            try:
                if "memory" not in (parent / "cgroup.subtree_control").read_text().split():
                    (parent / "cgroup.subtree_control").write_text("+memory")
            except OSError:
                return None
        path = parent / f"{PREFIX}{os.getpid()}-{next(_names)}-{os.urandom(3).hex()}"
        try:
            path.mkdir()
        except OSError:
            return None
        group = cls(path, version, limit)
        try:
            if version == 2:
                _write(path / "memory.max", limit)
                _write_if_present(path / "memory.swap.max", 0)
                _write(path / "memory.oom.group", 1)  # the kernel kills the whole command, not one process of it
                ok = int((path / "memory.max").read_text()) <= limit
            else:
                _write(path / "memory.limit_in_bytes", limit)
                _write_if_present(path / "memory.memsw.limit_in_bytes", limit)
                ok = int((path / "memory.limit_in_bytes").read_text()) <= limit
            if ok:
                return group
        except (OSError, ValueError):
            pass
        with contextlib.suppress(OSError):
            group.remove()
        return None

    def oom_kills(self) -> int:
        """Processes of the command the kernel killed because the cgroup was full."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            for line in (self.path / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def peak(self) -> int:
        """The most memory the command's processes held at once, in bytes (0 where the kernel does not say)."""
        for name in ("memory.peak", "memory.max_usage_in_bytes"):
            with contextlib.suppress(OSError, ValueError):
                return int((self.path / name).read_text())
        return 0

    def remove(self) -> None:
        """Kill whatever is still in the cgroup and remove it (retried while the kernel finishes the exits)."""
        _remove(self.path)


def _write(path: Path, value: int) -> None:
    path.write_text(str(value))


def _write_if_present(path: Path, value: int) -> None:
    if path.exists():
        with contextlib.suppress(OSError):
            _write(path, value)


def _remove(path: Path, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError):
            (path / "cgroup.kill").write_text("1")
        with contextlib.suppress(OSError, ValueError):
            for pid in (path / "cgroup.procs").read_text().split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                raise
        time.sleep(0.01)


def _sweep(parent: Path) -> None:
    """Remove the empty cgroups of host processes that died while their command ran (never killing what is
    in one: a host process of another pid namespace may share this parent)."""
    with contextlib.suppress(OSError):
        for child in parent.iterdir():
            pid = child.name[len(PREFIX):].split("-", 1)[0]
            if child.name.startswith(PREFIX) and pid.isdigit() and not Path("/proc", pid).exists():
                with contextlib.suppress(OSError):
                    child.rmdir()


class Watchdog:
    """Sums the resident memory of `uid`'s processes; `over()` once the sum passes `limit` bytes."""

    def __init__(self, uid: int, limit: int):
        self.uid, self.limit, self.peak = uid, limit, 0
        self.page = os.sysconf("SC_PAGE_SIZE")

    def resident(self) -> int:
        total = 0
        with os.scandir("/proc") as it:
            for entry in it:
                if not entry.name.isdigit():
                    continue
                try:
                    if entry.stat(follow_symlinks=False).st_uid != self.uid:
                        continue
                    with open(f"/proc/{entry.name}/statm", "rb") as f:
                        total += int(f.read().split()[1]) * self.page
                except (OSError, ValueError, IndexError):
                    continue
        return total

    def over(self) -> bool:
        used = self.resident()
        self.peak = max(self.peak, used)
        return used > self.limit
