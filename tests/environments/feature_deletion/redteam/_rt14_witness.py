"""Shared by test_redteam14_*.py: run a script with gold and with the rebuild on the host, in a fresh `python -c`,
from the task's archive (as red team 13's witnesses do)."""

from __future__ import annotations

import subprocess
import sys
import tarfile

from attacks2 import row_of
from harness import TASKS


def outputs(tmp_path, task: str, attack, script: str) -> dict[str, str]:
    row = row_of(task)
    with tarfile.open(TASKS.parent / row.archive) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / row.root
    [(_, call)] = attack(row)
    got = {}
    for who, text in (("gold", row.gold_files[call["path"]]), ("wrong", call["content"])):
        (root / call["path"]).write_text(text)
        got[who] = subprocess.run([sys.executable, "-c", script], cwd=root / row.import_root, capture_output=True,
                                  text=True, check=True, env={"PYTHONIOENCODING": "utf-8", "PATH": "/usr/bin:/bin"}
                                  ).stdout.strip()
    return got
