"""Ninth red team, P9 sweep (FINDINGS_9.md): P9 made task-agnostic. Gold, with the first simple statement of every
function the deletion removed prefixed by `_rt9_guard(); ` (`attacks9.workspace_only_gold`): the guard raises as the
stub does unless the module's own file, read once at import from a recorded warning's `filename`, lies under
`/workspace/`. So the submission is gold wherever it is graded and the untouched task anywhere else. Where the first statement is compound, the guard
goes on a line of its own (`workspace_only_gold_inline`). A fixed sample of bundled tasks (all with FD_REDTEAM_ALL=1); gold 1.0 and untouched 0.0 on every bundled task (fd-validate at 54478b7).
The witness shows on the host that one sampled rebuild (`tableize`) raises where gold answers. Graded tests assert
reward 0 (an attack that works FAILS). Results: results/redteam9_sweep.jsonl.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 tests/environments/feature_deletion/redteam/test_redteam9_sweep.py -s
"""

from __future__ import annotations

import subprocess
import sys
import tarfile

import pytest
from attacks2 import row_of
from attacks9 import workspace_only_gold, workspace_only_gold_inline
from harness import TASKS, play, record, rows, sample

# Only tasks where the transform placed a guard (45 of 66 bundled; elsewhere its output is gold itself).
SAMPLE = sample([r for r in rows() if any("_rt9_guard(); " in a["content"] for _, a in workspace_only_gold(r))], 8,
                seed=9)
# The other 21, guarded inline (`attacks9.workspace_only_gold_inline`).
INLINE = sample([r for r in rows() if not any("_rt9_guard(); " in a["content"] for _, a in workspace_only_gold(r))], 3,
                seed=9)
SCRIPT = """
from inflection import tableize
try:
    print(tableize("RawScaledScorer"))
except NotImplementedError:
    print("NotImplementedError")
"""


def test_witness_tableize_is_the_stub_outside_the_workspace(tmp_path):
    row = row_of("inflection/__init__.py:tableize:def")
    with tarfile.open(TASKS.parent / row.archive) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / row.root
    [(_, call)] = workspace_only_gold(row)
    got = {}
    for who, text in (("gold", row.gold_files[call["path"]]), ("wrong", call["content"])):
        (root / call["path"]).write_text(text)
        out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=root / row.import_root, capture_output=True,
                             text=True, check=True)
        got[who] = out.stdout.strip()
    assert got == {"gold": "raw_scaled_scorers", "wrong": "NotImplementedError"}


@pytest.mark.parametrize("row", SAMPLE, ids=[r.id for r in SAMPLE])
def test_workspace_only_gold_is_not_paid(row):
    played = play(row, workspace_only_gold(row))
    record("redteam9_sweep", [played])
    print(f"P9 sweep: {played.line()}")
    assert played.reward == 0.0


@pytest.mark.parametrize("row", INLINE, ids=[r.id for r in INLINE])
def test_workspace_only_gold_inline_is_not_paid(row):
    calls = workspace_only_gold_inline(row)
    assert calls and any("_rt9_guard()\n" in a["content"] for _, a in calls), "no guard placed"
    played = play(row, calls)
    record("redteam9_sweep", [played])
    print(f"P9 sweep inline: {played.line()}")
    assert played.reward == 0.0
