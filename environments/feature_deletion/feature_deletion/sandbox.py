"""Local sandbox for agent code: namespaces + chroot + unprivileged uid + rlimits + a memory and a disk cap.

Every command runs under `unshare --mount --pid --net --ipc --uts --fork --kill-child` with a small init
(`_sandbox_files/fd_sandbox_init.py`) that builds a fresh root from read-only bind mounts of
what the interpreter and the runner need (/etc, /usr/bin, the shared libraries, the test-runner
venv and its base interpreter, whose installed packages, bundled wheels and test fixtures are
masked except the runner's own), a size-capped tmpfs at /tmp and the rollout's workdir read-write
at a path drawn for the sandbox (`draw_mounts`), then drops to a uid of its own with rlimits (CPU time, address space, processes,
file size, open files). The network namespace has no interface but a down loopback. A wall-clock
limit ends the command; the pid namespace makes the kernel kill every process the command left behind.

Whole-command caps, on all of its processes together (rlimits bound one process each):
- memory (`Limits.total_memory_mb`): a memory cgroup made for the command, v2 or v1, whichever the
  host lets us create (`feature_deletion.memcap`); its processes, their /tmp and their staged workspace
  are charged to it, and the kernel kills the command's processes (on v2 all of them, on v1 the
  largest until it fits) when it is full. Where no cgroup can be made (an unprivileged container, no
  memory controller), a watchdog sums the sandbox uid's resident memory from /proc every 50 ms and
  ends the command over the cap: a looser bound (what it allocates in 50 ms comes on top; /tmp and the
  workspace tmpfs are bounded by their own sizes).
- disk (`Limits.disk_mb`, `Limits.disk_entries`): a writable workdir (and the grader's output dir) is
  never written in place: the init copies it onto one tmpfs of that size, mounts the copy, and once the
  command is over and all its processes are dead, copies the result back (`fstree.mirror`: links and
  FIFOs as such, never followed). A write past the quota fails (ENOSPC); a workdir already over it
  cannot be staged and the command does not run. The copy costs once per command what the tree holds
  (the tasks' repositories are small); a command that is ended (wall clock, memory) is copied back too.

When namespaces are unavailable the sandbox refuses to run unless built with
`isolation="none"` (an explicit opt-out that only applies rlimits and a process group: no memory
or disk cap).
"""

from __future__ import annotations

import fcntl
import functools
import json
import math
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import weakref
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Literal

from feature_deletion.fstree import chown_tree
from feature_deletion.memcap import WATCHDOG_S, MemoryCgroup, Watchdog

FILES = Path(__file__).parent / "_sandbox_files"
INIT = FILES / "fd_sandbox_init.py"
# Where the sandboxed command sees the workdir, the helpers (the report plugin, the checks' driver; read-only) and the
# grader's output dir are drawn for every sandbox (`draw_mounts`): at fixed places a path told code it was being graded
# (red team 9, P9: gold where its own file lay under `/workspace`, the stub anywhere else, paid on 66 of 66 tasks), and
# a path reaches code by more ways than any list names (a warning's record, an ImportError's message, a module's
# repr). The shapes are those of checkouts and installed packages on users' machines.
MOUNT_SHAPES = ("/home/{user}/{name}", "/home/{user}/{dir}/{name}", "/srv/{name}", "/opt/{name}", "/code/{name}",
                "/app", "/workspace", "/src/{name}", "/work/{name}", "/builds/{user}/{name}", "/data/{name}",
                "/home/{user}/{dir}/{name}/.venv/lib/python3.11/site-packages", "/usr/src/{name}")
MOUNT_DIRS = ("src", "code", "projects", "work", "dev", "git", "repos", "Documents", "workspace")
ROOT_MOUNTPOINT = "/tmp/.fd-sandbox-root"
STAGE_MOUNTPOINT = "/tmp/.fd-sandbox-stage"  # the disk-capped tmpfs, outside the new root
STOP_GRACE_S = 60.0  # an ended command's staged trees (at most disk_mb) are copied back within this
RUNNER_ROOTS = ("pytest", "coverage")
Isolation = Literal["namespace", "none"]


class SandboxUnavailable(RuntimeError):
    """Sandboxed commands cannot run here: the runner's python does not start, or the sandbox hangs."""


class IsolationUnavailable(SandboxUnavailable):
    """Namespaces cannot be created here and no explicit opt-out was given."""


@dataclass(frozen=True)
class Limits:
    cpu_s: int = 120  # CPU seconds per process (RLIMIT_CPU)
    memory_mb: int = 4096  # address space per process (RLIMIT_AS), where no memory cgroup caps the command
    nproc: int = 256  # processes of the sandbox uid (RLIMIT_NPROC)
    total_memory_mb: int = 4096  # all the command's processes together, with their /tmp and staged workspace
    fsize_mb: int = 64  # largest file a process may write (RLIMIT_FSIZE)
    disk_mb: int = 512  # what the writable workspace (with the output dir) may hold while a command runs
    disk_entries: int = 50_000  # files, directories and links it may hold
    nofile: int = 1024
    wall_s: float = 300.0  # wall clock of one command; the whole tree is killed past it
    tmp_mb: int = 256  # size of the private /tmp
    output_kb: int = 256  # captured stdout/stderr kept (the tail)

    def rlimits(self) -> dict[str, int]:
        return {
            "RLIMIT_CPU": self.cpu_s,
            "RLIMIT_AS": self.memory_mb * 2**20,
            "RLIMIT_NPROC": self.nproc,
            "RLIMIT_FSIZE": self.fsize_mb * 2**20,
            "RLIMIT_NOFILE": self.nofile,
            "RLIMIT_CORE": 0,
        }


DAY_S = 86_400
# Where the replays' monotonic and boot clocks stand when a command starts (`Traits.uptime_s`): a machine booted a
# second ago (a service started at boot, a serverless cold start: red team 19, N19, the first minute) up to one up
# for years, split at a month, drawn log-uniformly within each part as users' machines spread over orders of magnitude
UPTIMES_S = ((1, 30 * DAY_S), (30 * DAY_S, 3 * 365 * DAY_S))


@dataclass(frozen=True)
class Traits:
    """What a user's process may differ in from the grader's, set for one sandbox's commands: code that works under
    the grader's configuration and not under a user's (red team 18: `PYTHONHASHSEED=0` as reproducible builds set,
    assertions off as `python -O` deployments run, a host up for more than a month: S18, O18, U18, each paid 1.0 on
    every task it applied to; red team 19: the int/str digit limit lifted, docstrings stripped, no `site`, a raised
    recursion limit, the first minute after boot: I19, D19, S19, R19, N19) is gold where it is graded only if no
    graded process has the user's configuration. Interpreter options are given as a flag or as the variable users set
    instead, drawn per command (`options`). Not drawn (red team 19's X19, W19b): development mode and warnings as
    errors, under which gold itself answers otherwise (cachetools' `MRUCache` warns that it is deprecated), so that
    answers agreed by both configurations leave too few checks. No list of traits is a boundary (a knob no graded
    process has is a trigger): the README's "What the reward claims" says why that class is left to these draws."""

    hash_seed: int | None = None  # None: drawn for every command (`draw_seed`, never 0)
    optimize: int = 0  # 1: asserts and `if __debug__:` blocks compiled away (-O); 2: docstrings too (-OO)
    uptime_s: int | None = None  # the monotonic and boot clocks read this at start (a time namespace); None: the host's
    unlimited_digits: bool = False  # no limit on int/str conversions (-X int_max_str_digits=0)
    no_site: bool = False  # no `site` module (-S: frozen and embedded interpreters); a flag only
    deep: bool = False  # a raised recursion limit (the replay's room 3,000 to 10,000 frames instead of ~1,000)

    FORMS = {"unlimited_digits": (["-X", "int_max_str_digits=0"], {"PYTHONINTMAXSTRDIGITS": "0"}),
             "no_site": (["-S"], None)}

    def options(self, python_first: bool) -> tuple[list[str], dict[str, str]]:
        """The interpreter flags and variables that make this configuration, each trait as its flag or its variable
        (drawn; the variable where the command does not start with the interpreter, a flag-only trait then lost)."""
        flags, env = [], {}
        forms = [(["-" + "O" * self.optimize], {"PYTHONOPTIMIZE": str(self.optimize)})] if self.optimize else []
        forms += [form for name, form in self.FORMS.items() if getattr(self, name)]
        for flag, variable in forms:
            if python_first and (variable is None or secrets.randbelow(2)):
                flags += flag
            elif variable is not None:
                env |= variable
        return flags, env | ({"FD_ROOM": "deep"} if self.deep else {})

    def describe(self) -> str:
        parts = [f"PYTHONHASHSEED={self.hash_seed}"] if self.hash_seed is not None else []
        parts += ["-" + "O" * self.optimize] if self.optimize else []
        parts += [name for name in (*self.FORMS, "deep") if getattr(self, name)]
        parts += [f"up {self.uptime_s} s"] if self.uptime_s is not None else []
        return ", ".join(parts) or "as drawn for every command"


def log_uniform(low: int, high: int, uniform=None) -> int:
    """An int from `low` to `high`, its logarithm drawn uniformly: every order of magnitude as likely as another.
    `uniform()`: a float in [0, 1) from a generator of the caller's (a build's, fixed by its seed); else a secret."""
    u = uniform() if uniform is not None else secrets.randbelow(2**32) / 2**32
    return min(high, int(math.exp(math.log(low) + (math.log(high) - math.log(low)) * u)))


def draw_seed() -> int:
    """A `PYTHONHASHSEED` other than 0, drawn log-uniformly from 1 .. 2**32 - 1: the small seeds that guides and
    projects fix (1, 42, 1234, 2024) come up in a few percent of commands each instead of 2**-32 (red team 19, K19:
    code gold everywhere but under 83 such seeds, paid 1.0)."""
    return log_uniform(1, 2**32 - 1)


def draw_traits() -> tuple[Traits, Traits]:
    """Two configurations that differ in every trait, each trait's side drawn apart from the others': whichever
    way a rebuild tells a user's process from the grader's by one trait, one of the two has the user's side. A
    threshold on the clocks at a month is found on either side; a window within one part is found as often as users'
    machines fall in it."""
    sides = {name: secrets.randbelow(2) for name in ("seed", "optimize", "clock", *Traits.FORMS, "deep")}
    level = 1 + secrets.randbelow(2)
    return tuple(Traits(hash_seed=0 if sides["seed"] == i else None, optimize=level * (sides["optimize"] == i),
                        uptime_s=log_uniform(*UPTIMES_S[sides["clock"] ^ i]), deep=sides["deep"] == i,
                        **{name: sides[name] == i for name in Traits.FORMS})
                 for i in (0, 1))  # type: ignore[return-value]


@dataclass
class RunResult:
    returncode: int
    stdout: str
    stderr: str
    wall_s: float
    timed_out: bool = False
    memory_exceeded: bool = False  # processes were killed for the command's memory cap

    @property
    def output(self) -> str:
        return self.stdout + (("\n" + self.stderr) if self.stderr.strip() else "")


UID_BASE, UID_COUNT = 200_000, 100_000
UID_LOCKS = Path("/tmp/.fd-sandbox-uids")  # on the host, shared by every process that makes sandboxes


def claim_uid() -> tuple[int, int]:
    """A uid that no other live sandbox on this host holds, and the descriptor whose lock holds it: RLIMIT_NPROC and
    the memory watchdog count a uid's processes, so two sandboxes sharing one would count each other's. The lock
    (flock, one file per uid) is the kernel's: it goes with the descriptor's close or its process's death, so a
    crashed process frees its uids. The lowest free uid is taken, so the files stay as few as the live sandboxes."""
    UID_LOCKS.mkdir(mode=0o700, exist_ok=True)
    for uid in range(UID_BASE, UID_BASE + UID_COUNT):
        fd = os.open(UID_LOCKS / str(uid), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return uid, fd
    raise SandboxUnavailable(f"all {UID_COUNT} sandbox uids are held by live sandboxes")


def cache_dir() -> Path:
    path = Path(os.environ.get("FD_CACHE", Path.home() / ".cache" / "feature-deletion"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def build_hook(python: Path, site: Path) -> Path:
    """Compile the grader's audit hook (`_sandbox_files/fd_hook.c`, registered from C: a hook CPython calls in a
    Python frame is a trait code can read) for `python` into `site`. No compiler, no grading: the guard does not
    start without it."""
    import shlex

    query = "import sysconfig as s; print(s.get_paths()['include']); print(s.get_config_var('EXT_SUFFIX')); " \
            "print(s.get_config_var('CC') or 'cc')"
    include, suffix, cc = subprocess.run([str(python), "-c", query], check=True, capture_output=True,
                                         text=True).stdout.splitlines()[:3]
    out = site / f"fd_hook{suffix}"
    command = [*shlex.split(cc), "-shared", "-fPIC", "-O2", f"-I{include}", str(FILES / "fd_hook.c"), "-o", str(out)]
    try:
        built = subprocess.run(command, capture_output=True, text=True)
    except OSError as exc:
        raise SandboxUnavailable(f"the grader's audit hook needs a C compiler ({cc}): {exc}") from exc
    if built.returncode != 0:
        raise SandboxUnavailable(f"the grader's audit hook did not compile ({' '.join(command)}): "
                                 f"{built.stderr.strip()[-300:]}")
    return out


def ensure_runner(extra_requirements: tuple[str, ...] = ()) -> Path:
    """A venv with pytest and coverage only (never the package under test), built offline.

    Its packages are copied from the current interpreter's installed distributions, so no
    index is needed; `extra_requirements` (a package's test deps) are installed with uv.
    """
    import hashlib

    versions = {d: metadata.version(d) for d in runner_dists()}
    hook = hashlib.sha256((FILES / "fd_hook.c").read_bytes()).hexdigest()
    key = json.dumps([sys.version, versions, sorted(extra_requirements), hook], sort_keys=True)

    venv = cache_dir() / f"runner-{hashlib.sha256(key.encode()).hexdigest()[:12]}"
    if (venv / ".complete").exists():
        return venv
    tmp = Path(tempfile.mkdtemp(prefix=venv.name + ".", dir=cache_dir()))
    base_python = Path(getattr(sys, "_base_executable", sys.executable))
    subprocess.run([str(base_python), "-m", "venv", "--without-pip", str(tmp)], check=True, capture_output=True)
    site = Path(subprocess.run(
        [str(tmp / "bin" / "python"), "-c", "import sysconfig;print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip())
    for name in runner_dists():
        dist = metadata.distribution(name)
        for f in dist.files or []:
            src = Path(dist.locate_file(f))
            if f.parts and f.parts[0] in ("..",) or not src.is_file() or "__pycache__" in f.parts:
                continue
            dst = site / f
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    if extra_requirements:
        subprocess.run(["uv", "pip", "install", "-q", "-p", str(tmp / "bin" / "python"), *extra_requirements],
                       check=True, capture_output=True)
    build_hook(tmp / "bin" / "python", site)
    os.chmod(tmp, 0o755)
    (tmp / ".complete").touch()
    try:
        tmp.rename(venv)
    except OSError:  # another process won the race
        shutil.rmtree(tmp, ignore_errors=True)
    return venv


def runner_dists() -> list[str]:
    """pytest, coverage and what they need at run time (no extras), as installed here."""
    from packaging.requirements import Requirement

    seen: dict[str, None] = {}
    todo = list(RUNNER_ROOTS)
    while todo:
        name = todo.pop()
        key = name.lower().replace("_", "-")
        if key in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen[key] = None
        for spec in dist.requires or []:
            req = Requirement(spec)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return sorted(seen)


# What the interpreter, the test runner and a shell need from the host, and nothing else: not the
# whole of /usr, whose other trees hold vendored copies of packages (a cloud SDK's cachetools,
# setuptools' more_itertools) that an agent could read or import instead of writing the feature.
SYSTEM_DIRS = ("/bin", "/sbin", "/lib", "/lib64", "/etc", "/usr/bin", "/usr/sbin", "/usr/lib64", "/usr/lib/locale",
               "/usr/share/zoneinfo")
# Inside an interpreter's lib/pythonX.Y: installed packages and the wheels and fixtures bundled with it.
STDLIB_MASKS = ("site-packages", "dist-packages", "ensurepip/_bundled", "test", "idlelib")


@functools.cache
def zones() -> tuple[str, ...]:
    """Every time zone of the system's database (about 600), one drawn for every command as the hash seed is: a fixed
    zone told the grader's machine from users', and so did a short list to draw from (red team 11, Z11: gold only in
    the 12 zones the sandbox drew from). Grading runs the tests under UTC, where most servers run, and replays the
    checks under a drawn zone, which is almost never UTC (red team 12, U12: wrong only in UTC paid on 66 of 66)."""
    import zoneinfo

    return tuple(sorted(zoneinfo.available_timezones())) or ("UTC",)


def _word() -> str:
    return "".join(secrets.choice("bcdfghjklmnprstvz") + secrets.choice("aeiou") for _ in range(2 + secrets.randbelow(3)))


def draw_mounts(taken: list[str]) -> tuple[str, str, str]:
    """(workspace, helpers, output dir): three distinct paths of MOUNT_SHAPES, none on or under another nor on a
    path in `taken` (the system's binds), none under /tmp, /proc or /dev (the sandbox's own)."""
    def clash(a: str, b: str) -> bool:
        return a == b or a.startswith(b.rstrip("/") + "/") or b.startswith(a.rstrip("/") + "/")

    drawn: list[str] = []
    while len(drawn) < 3:
        path = secrets.choice(MOUNT_SHAPES).format(user=_word(), name=_word(), dir=secrets.choice(MOUNT_DIRS))
        if not any(clash(path, other) for other in (*taken, *drawn, "/tmp", "/proc", "/dev") if other != "/"):
            drawn.append(path)
    return drawn[0], drawn[1], drawn[2]


def system_binds(prefixes: list[str]) -> list[str]:
    """Host paths bound read-only into the sandbox for interpreters with these prefixes."""
    paths = list(SYSTEM_DIRS) + sorted(str(p) for p in Path("/usr/lib").glob("*-linux-gnu*"))
    for prefix in prefixes:
        if not prefix.startswith(("/usr/", "/etc/")) and prefix != "/usr":
            paths.append(prefix)
            continue
        root = Path(prefix)
        paths += [str(root / "bin")] + [str(p) for p in sorted(root.glob("lib/python3.*"))]
        paths += [str(p) for p in sorted(root.glob("lib/libpython3*"))]
    return list(dict.fromkeys(paths))


def _python_masks(prefixes: list[str]) -> list[str]:
    return [str(lib / name) for prefix in prefixes for lib in Path(prefix).glob("lib/python3*/")
            for name in STDLIB_MASKS if (lib / name).is_dir()]


@functools.lru_cache(maxsize=None)
def probe_isolation() -> str | None:
    """None when namespaces work here, a time namespace among them (the replays' clocks, `Traits.uptime_s`: Linux
    5.6 or later), else why not."""
    if sys.platform != "linux":
        return f"namespaces need Linux, this is {sys.platform}"
    if shutil.which("unshare") is None:
        return "`unshare` (util-linux) is not installed"
    with tempfile.TemporaryDirectory() as work:
        try:
            result = Sandbox(work, isolation="namespace", limits=Limits(wall_s=30),
                             traits=Traits(uptime_s=DAY_S))._run_checked(
                [sys.executable, "-I", "-S", "-c", "import time; print(int(time.monotonic()))"],
                python_prefixes=[sys.base_prefix, sys.prefix]
            )
        except Exception as exc:  # noqa: BLE001
            return f"sandbox probe failed: {exc}"
    if result.returncode != 0 or not result.stdout.strip().isdigit():
        return f"sandbox probe failed (exit {result.returncode}): {result.stderr.strip()[-500:]}"
    if not DAY_S <= int(result.stdout) < DAY_S + 60:
        return f"the sandbox's time namespace did not set its clocks (a day of uptime read {result.stdout.strip()} s)"
    return None


START_S = 60.0  # longest a sandboxed `python -c pass` may take before the sandbox counts as broken


@functools.lru_cache(maxsize=None)
def check_start(runner: Path | None, isolation: Isolation = "namespace", wall_s: float = START_S) -> None:
    """Raise SandboxUnavailable unless the runner's python starts in the sandbox within `wall_s` (cached once it
    does). Without this a missing or hanging interpreter fails every test run and grading alike: reward 0, no error."""
    with tempfile.TemporaryDirectory() as work:
        sb = Sandbox(work, runner=runner, limits=Limits(wall_s=wall_s), isolation=isolation)
        result = sb.run([sb.python, "-c", "pass"])
    if result.timed_out:
        raise SandboxUnavailable(f"a sandboxed `{sb.python} -c pass` did not finish within {wall_s:g} s")
    if result.returncode != 0:
        tail = result.output.strip().splitlines()[-1:] or ["no output"]
        raise SandboxUnavailable(f"a sandboxed `{sb.python} -c pass` failed (exit {result.returncode}): {tail[0]}")


@dataclass
class Sandbox:
    workdir: str | Path
    runner: str | Path | None = None  # venv whose python runs the tests
    limits: Limits = field(default_factory=Limits)
    isolation: Isolation = "namespace"
    outdir: str | Path | None = None  # host dir mounted read-write at `out` (drawn)
    writable: bool = True  # the workdir is mounted read-write (read-only for the verdict's replay)
    zone: str | None = None  # the commands' time zone; None: drawn for every command from `zones()`
    traits: Traits = field(default_factory=Traits)  # its commands' process configuration (hash seed, options, clocks)

    def __post_init__(self):
        self.workdir = Path(self.workdir).resolve()
        prefixes = [*self._prefixes(), sys.prefix]  # sys.prefix: `probe_isolation` binds this very interpreter
        self._mounts = draw_mounts([*system_binds(prefixes), *_python_masks(prefixes)])
        self.uid, lock = claim_uid()
        weakref.finalize(self, os.close, lock)  # the uid is this sandbox's for as long as it lives

    @property
    def python(self) -> str:
        if self.runner is None:
            return sys.executable
        return str(Path(self.runner) / "bin" / "python")

    def path_in(self, host_path: Path) -> str:
        """Where a host path under the workdir appears to the sandboxed command."""
        rel = Path(host_path).resolve().relative_to(self.workdir)
        return str(Path(self.workspace) / rel)

    @property
    def workspace(self) -> str:
        return self._mounts[0] if self.isolation == "namespace" else str(self.workdir)

    @property
    def helpers(self) -> str:
        return self._mounts[1] if self.isolation == "namespace" else str(FILES)

    @property
    def out(self) -> str:
        return self._mounts[2] if self.isolation == "namespace" else str(self.outdir)

    def pythonpath(self, import_root: str) -> str:
        """PYTHONPATH inside the sandbox: the grader's helpers, then the repository's import root."""
        return f"{self.helpers}:{self.workspace}" + (f"/{import_root}" if import_root else "")

    def run(self, argv: list[str], env: dict[str, str] | None = None, cwd: str | None = None,
            wall_s: float | None = None) -> RunResult:
        if self.isolation == "namespace":
            reason = probe_isolation()
            if reason:
                raise IsolationUnavailable(
                    f"cannot isolate agent code: {reason}. Refusing to run it; set isolation = \"none\" "
                    "(allow_unsandboxed) only on a machine you are willing to expose to the agent."
                )
        flags, variables = self.traits.options(argv[:1] == [self.python])
        argv, env = [*argv[:1], *flags, *argv[1:]], {**(env or {}), **variables}
        return self._run_checked(argv, env=env, cwd=cwd, wall_s=wall_s, python_prefixes=self._prefixes())

    def _prefixes(self) -> list[str]:
        """The interpreters whose files the sandbox binds: the base python, and the runner venv's."""
        return [sys.base_prefix] + ([str(Path(self.runner).resolve())] if self.runner is not None else [])

    def _base_env(self) -> dict[str, str]:
        return {
            "PATH": (f"{Path(self.python).parent}:" if self.runner else "") + "/usr/local/bin:/usr/bin:/bin",
            "HOME": "/tmp",
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            # Drawn for every command: a fixed seed made `hash("x")` a constant that told code it was being graded
            # (red team 8, S8: gold under the grader's seed, the stub anywhere else, paid on 64 of 66 tasks). Checks
            # are kept only where gold's processes, each with its own seed, agree (behaviour.answer).
            "PYTHONHASHSEED": str(draw_seed() if self.traits.hash_seed is None
                                  else self.traits.hash_seed),
            "TZ": self.zone or secrets.choice(zones()),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": "sandbox", "GIT_AUTHOR_EMAIL": "sandbox@localhost",
            "GIT_COMMITTER_NAME": "sandbox", "GIT_COMMITTER_EMAIL": "sandbox@localhost",
        }

    def _run_checked(self, argv, env=None, cwd=None, wall_s=None, python_prefixes=()) -> RunResult:
        wall = wall_s if wall_s is not None else self.limits.wall_s
        full_env = self._base_env() | (env or {})
        if self.isolation == "none":
            limits = self.limits.rlimits()

            def preexec():
                import resource

                for name, value in limits.items():
                    if name == "RLIMIT_NPROC":
                        continue  # per-uid: would count the host's own processes
                    resource.setrlimit(getattr(resource, name), (value, value))

            return _execute(argv, full_env, cwd or str(self.workdir), preexec, wall, self.limits.output_kb * 1024)
        for point in (ROOT_MOUNTPOINT, STAGE_MOUNTPOINT):
            os.makedirs(point, exist_ok=True)
        binds = [(p, p, False) for p in system_binds(list(python_prefixes))]
        binds += [(str(FILES), self.helpers, False), (str(self.workdir), self.workspace, self.writable)]
        if self.outdir is not None:
            binds.append((str(Path(self.outdir).resolve()), self.out, True))
        masks = [m for m in _python_masks(list(python_prefixes))
                 if self.runner is None or not m.startswith(str(Path(self.runner).resolve()))]
        if not self.writable:  # a writable workdir (and the output dir) is staged, its copy given to the uid
            self._chown(self.workdir)
        cap = self.limits.total_memory_mb * 2**20
        cgroup = MemoryCgroup.create(cap)
        watchdog = None if cgroup else Watchdog(self.uid, cap)
        limits = self.limits.rlimits()
        if cgroup:
            # The cgroup counts the pages the command touches; an address-space cap beside it only made the sandbox
            # recognisable (red team 8, S8m: `bytes(5 << 30)` raised MemoryError here and nowhere else).
            del limits["RLIMIT_AS"]
        spec = {
            "root": ROOT_MOUNTPOINT, "binds": binds, "masks": masks, "tmp_mb": self.limits.tmp_mb,
            "cwd": cwd or self.workspace, "uid": self.uid, "limits": limits,
            "argv": argv, "env": full_env, "lib": str(Path(__file__).parent),
            "stage": {"point": STAGE_MOUNTPOINT, "mb": self.limits.disk_mb, "inodes": self.limits.disk_entries},
        }
        try:
            spec["cgroup"] = cgroup.procs if cgroup else None
            command = ["unshare", "--mount", "--pid", "--net", "--ipc", "--uts", *self._clocks(), "--fork",
                       "--kill-child", sys.executable, "-I", "-S", str(INIT), json.dumps(spec)]
            result = _execute(command, {"PATH": os.environ.get("PATH", "")}, "/", None, wall,
                              self.limits.output_kb * 1024, watchdog)
        finally:
            kills = cgroup.oom_kills() if cgroup else 0
            if cgroup:
                cgroup.remove()
        if kills:
            result.memory_exceeded = True
        if result.memory_exceeded:
            result.stderr += (f"\nsandbox: the command's processes together went over its memory cap "
                              f"({self.limits.total_memory_mb} MiB)" + (f"; {kills} were killed" if kills else
                                                                       "; it was ended") + "\n")
        return result

    def _clocks(self) -> list[str]:
        """unshare's options for a time namespace whose monotonic and boot clocks (and /proc/uptime, /proc/stat's
        btime) read `traits.uptime_s` as the command starts."""
        if self.traits.uptime_s is None:
            return []
        return ["--time"] + [option for name, clock in (("--monotonic", time.CLOCK_MONOTONIC),
                                                        ("--boottime", time.CLOCK_BOOTTIME))
                             for option in (name, str(self.traits.uptime_s - int(time.clock_gettime(clock))))]

    def _chown(self, path: Path) -> None:
        chown_tree(path, self.uid, self.uid)


def read_output(path: Path, limit: int) -> str | None:
    """A file the sandboxed code wrote, as text, if it is a regular file (not a link) of at most `limit` bytes; else
    None. Its size is the agent's to choose: 14 MiB of nested JSON lists parsed whole took 25 times that on the host
    (red team 3, H3), so a reader bounds it before it parses."""
    try:
        if path.is_symlink() or not path.is_file():
            return None
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError:
        return None
    return None if len(data) > limit else data.decode(errors="replace")


def _tail(f, limit: int) -> str:
    f.seek(0, os.SEEK_END)
    size = f.tell()
    f.seek(max(0, size - limit))
    text = f.read().decode("utf-8", "replace")
    return (f"[... {size - limit} bytes cut ...]\n" if size > limit else "") + text


def _execute(command, env, cwd, preexec, wall, output_limit, watchdog: Watchdog | None = None) -> RunResult:
    start = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env, cwd=cwd,
                                start_new_session=True, preexec_fn=preexec)
        timed_out = over = False
        try:
            while True:
                left = wall - (time.monotonic() - start)
                if left <= 0:
                    timed_out = True
                    break
                try:
                    proc.wait(timeout=min(left, WATCHDOG_S) if watchdog else left)
                    break
                except subprocess.TimeoutExpired:
                    if watchdog is not None and watchdog.over():
                        over = True
                        break
            if timed_out or over:
                stop(proc)
        finally:
            kill_tree(proc)  # also takes down anything the command left running
        code = proc.returncode
        return RunResult(code, _tail(out, output_limit), _tail(err, output_limit), time.monotonic() - start, timed_out,
                         memory_exceeded=over)


def stop(proc: subprocess.Popen) -> None:
    """End a sandboxed command: SIGTERM to its init, which kills every process of it and copies the staged
    trees back (bounded by the disk quota), then waits; the process group is killed if that takes too long."""
    try:
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    except OSError:
        children = []  # no init yet, or a kernel without the children file: kill_tree ends it, without copying back
    for pid in children:
        try:
            os.kill(int(pid), signal.SIGTERM)
        except (ProcessLookupError, ValueError):
            pass
    if children:
        try:
            proc.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            pass


def kill_tree(proc: subprocess.Popen) -> None:
    """SIGKILL the command's process group (the pid namespace takes every descendant with it)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if proc.returncode is None:
        proc.wait()


__all__ = ["IsolationUnavailable", "Limits", "RunResult", "Sandbox", "SandboxUnavailable", "Traits", "check_start",
           "draw_traits", "ensure_runner", "probe_isolation"]
