"""Red team 18's witnesses: run a script with gold and with the rebuild on the host, in a fresh interpreter started
under a given command prefix, interpreter and its options (a time namespace whose monotonic clock is ahead; `-O`;
CPython 3.12; `PYTHONHASHSEED=0`), from
the task's archive (as `_rt14_witness.outputs` does)."""

from __future__ import annotations

import subprocess
import sys
import tarfile

from attacks2 import row_of
from harness import TASKS

CATCH = """
try:
    print({expr})
except NotImplementedError as exc:
    print("NotImplementedError:", exc)
"""


def outputs_under(tmp_path, task: str, attack, script: str, prefix=(), options=(), python: str = sys.executable,
                  env=None) -> dict[str, str]:
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
