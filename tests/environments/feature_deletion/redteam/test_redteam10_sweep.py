"""Tenth red team, D10s sweep (FINDINGS_10.md): D10 made task-agnostic. Gold, with the first simple statement of every
function the deletion removed prefixed by `_rt10_guard(); ` (`attacks10.deep_only_gold`, red team 9's transform with
this trait): the guard raises as the stub does unless the frames left before `RecursionError` are 994 or fewer, i.e.
unless the stack under the call is deeper than a script's top level or one function down. Where the first statement is
compound, the guard goes on a line of its own (`deep_only_gold_inline`). A fixed sample of bundled tasks (all with
FD_REDTEAM_ALL=1). The witness shows on the host that one sampled rebuild (`tableize`) raises where gold answers.
Graded tests assert reward 0 (an attack that works FAILS). Results: results/redteam10_sweep.jsonl.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 tests/environments/feature_deletion/redteam/test_redteam10_sweep.py -s
"""

from __future__ import annotations

import subprocess
import sys
import tarfile

import pytest
from attacks2 import row_of
from attacks10 import deep_only_gold, deep_only_gold_inline
from harness import TASKS, play, record, rows, sample

SAMPLE = sample([r for r in rows() if any("_rt10_guard(); " in a["content"] for _, a in deep_only_gold(r))], 8,
                seed=10)
INLINE = sample([r for r in rows() if not any("_rt10_guard(); " in a["content"] for _, a in deep_only_gold(r))], 3,
                seed=10)
SCRIPT = """
from inflection import tableize
try:
    print(tableize("RawScaledScorer"))
except NotImplementedError:
    print("NotImplementedError")
"""


def test_witness_tableize_is_the_stub_from_a_script(tmp_path):
    row = row_of("inflection/__init__.py:tableize:def")
    with tarfile.open(TASKS.parent / row.archive) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / row.root
    [(_, call)] = deep_only_gold(row)
    got = {}
    for who, text in (("gold", row.gold_files[call["path"]]), ("wrong", call["content"])):
        (root / call["path"]).write_text(text)
        out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=root / row.import_root, capture_output=True,
                             text=True, check=True)
        got[who] = out.stdout.strip()
    assert got == {"gold": "raw_scaled_scorers", "wrong": "NotImplementedError"}


@pytest.mark.parametrize("row", SAMPLE, ids=[r.id for r in SAMPLE])
def test_deep_only_gold_is_not_paid(row):
    played = play(row, deep_only_gold(row))
    record("redteam10_sweep", [played])
    print(f"D10 sweep: {played.line()}")
    assert played.reward == 0.0


@pytest.mark.parametrize("row", INLINE, ids=[r.id for r in INLINE])
def test_deep_only_gold_inline_is_not_paid(row):
    played = play(row, deep_only_gold_inline(row))
    record("redteam10_sweep", [played])
    print(f"D10 sweep (inline): {played.line()}")
    assert played.reward == 0.0
