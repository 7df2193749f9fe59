"""Shared by red teams 14-18's tests: run a script with gold and with the rebuild on the host, in a fresh `python -c`,
from the task's archive (as red team 13's witnesses do); play an attack on a task as a rollout is graded."""

from __future__ import annotations

import subprocess
import sys
import tarfile

from attacks2 import row_of
from harness import TASKS, Played, play, record


# A witness's loop: `call` made `n` times in one process, and the call that first raised NotImplementedError
LOOP = """
try:
    for i in range({n}):
        {call}
    print("ok", i + 1)
except NotImplementedError as exc:
    print("NotImplementedError at call", i + 1)
"""


# A witness's one call: what it printed, or the stub's error
CATCH = """
try:
    print({expr})
except NotImplementedError as exc:
    print("NotImplementedError:", exc)
"""


def outputs(tmp_path, task: str, attack, script: str, prefix=(), options=(), python: str = sys.executable,
            env=None) -> dict[str, str]:
    """{"gold": ..., "wrong": ...}: `script`'s output with gold's file and with `attack(row)`'s, each in a fresh
    interpreter (`python` with `options`, started under the command `prefix`, with `env` added: red team 18's time
    namespace, `-O`, CPython 3.12, `PYTHONHASHSEED=0`) in the task's archive."""
    row = row_of(task)
    with tarfile.open(TASKS.parent / row.archive) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / row.root
    [(_, call)] = attack(row)
    got = {}
    for who, text in (("gold", row.gold_files[call["path"]]), ("wrong", call["content"])):
        (root / call["path"]).write_text(text)
        environ = {"PYTHONIOENCODING": "utf-8", "PATH": "/usr/bin:/bin", **(env or {})}
        got[who] = subprocess.run([*prefix, python, *options, "-c", script], cwd=root / row.import_root,
                                  capture_output=True, text=True, check=True, env=environ).stdout.strip()
    return got


STUB = "NotImplementedError: this feature was deleted; rebuild it"  # what the stub's error prints in a witness
# a witness's one call: what it printed, or the exception it raised, whatever its type (red teams 28-31)
RAISED = CATCH.replace("except NotImplementedError as exc:", "except Exception as exc:").replace(
    'print("NotImplementedError:", exc)', 'print(type(exc).__name__ + ":", exc)')


def each_output(tmp_path, task, attack, head, *exprs):
    """`outputs` of `head` then each of `exprs` printed (`RAISED`), one script per expression."""
    return [outputs(tmp_path, task, attack, head + RAISED.format(expr=e)) for e in exprs]


def same(text):
    return {"gold": text, "wrong": text}


def stubbed(text):
    return {"gold": text, "wrong": STUB}

def graded(task: str, attack, name: str) -> Played:
    """`attack(row)`'s tool calls played on the bundled task `task` as a rollout is graded, recorded in
    results/`name`.jsonl and printed with the attack's id (`name`'s part after "redteamNN_")."""
    row = row_of(task)
    calls = attack(row)
    assert calls is not None
    played = play(row, calls)
    record(name, [played])
    print(f"{name.split('_', 1)[1]} {task}: {played.line()}")
    return played
