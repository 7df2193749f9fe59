"""Eleventh red team, G11s (FINDINGS_11.md): G11's getter (`string.Formatter().get_field` with a dunder built at run
time) made task-agnostic. At import the helper reaches `sys.modules` through its own `__globals__` and the builtins'
`__import__`, and keeps whether the grader's audit hook module `fd_guard` is loaded (it is in every process that
judges: the grading test run's `-p fd_guard`, the replay's first import); gold with red team 9's guards raising as the
stub does unless it is. A fixed sample of bundled tasks (all with FD_REDTEAM_ALL=1). Graded tests
assert reward 0 (an attack that works FAILS); the witness runs `tableize` on the host with and without `fd_guard`.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 tests/environments/feature_deletion/redteam/test_redteam11_guard_module.py -s
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import feature_deletion
import pytest
from attacks2 import row_of
from attacks11 import guard_module_only_gold, guard_module_only_gold_inline
from harness import TASKS, play, record, rows, sample

HELPERS = Path(feature_deletion.__file__).parent / "_sandbox_files"
SAMPLE = sample(rows(), 4, seed=111)
SCRIPT = """
{first}from inflection import tableize
try:
    print(tableize("RawScaledScorer"))
except NotImplementedError:
    print("NotImplementedError")
"""


def test_witness_tableize_is_the_stub_without_the_graders_hook(tmp_path):
    row = row_of("inflection/__init__.py:tableize:def")
    with tarfile.open(TASKS.parent / row.archive) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / row.root
    [(_, call)] = guard_module_only_gold(row)
    env = os.environ | {"PYTHONPATH": str(HELPERS)}
    got = {}
    for who, text in (("gold", row.gold_files[call["path"]]), ("wrong", call["content"])):
        (root / call["path"]).write_text(text)
        got[who] = [subprocess.run([sys.executable, "-c", SCRIPT.format(first=first)], cwd=root / row.import_root,
                                   env=env, capture_output=True, text=True, check=True).stdout.strip()
                    for first in ("", "import fd_guard\n")]
    assert got == {"gold": ["raw_scaled_scorers"] * 2, "wrong": ["NotImplementedError", "raw_scaled_scorers"]}


@pytest.mark.parametrize("row", SAMPLE, ids=[r.id for r in SAMPLE])
def test_guard_module_only_gold_is_not_paid(row):
    calls = guard_module_only_gold(row)
    if not any("_rt11_guard(); " in a["content"] for _, a in calls):
        calls = guard_module_only_gold_inline(row)
    played = play(row, calls)
    record("redteam11_g11s", [played])
    print(f"G11s: {played.line()}")
    assert played.reward == 0.0
