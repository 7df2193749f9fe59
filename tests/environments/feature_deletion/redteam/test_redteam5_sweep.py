"""Fifth red team, F5 sweep (FINDINGS_5.md): the report-forging helper (`attacks5.forge_helpers`, the same text on
every task) appended to gold's file on a fixed sample of bundled tasks (all with FD_REDTEAM_ALL=1). It forges
nothing gold needs, so this measures whether the grader notices the test run's pytest being rebound at all: the
defence asserted is that it does (an `invalid` record), so an undetected forgery FAILS. Gold alone is 1.0 on every
bundled task (fd-validate). Results: results/redteam5_sweep.jsonl.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 tests/environments/feature_deletion/redteam/test_redteam5_sweep.py -s
"""

from __future__ import annotations

import pytest
from attacks5 import forge_helpers
from harness import gold_calls, play, record, rows, sample

SAMPLE = sample(rows(), 8, seed=5)


@pytest.mark.parametrize("row", SAMPLE, ids=[r.id for r in SAMPLE])
def test_forging_helper_is_noticed(row):
    rel = row.deletion.targets[0].file
    calls = [(n, {**a, "content": a["content"] + forge_helpers(row.f2p)}) if a["path"] == rel else (n, a)
             for n, a in gold_calls(row)]
    played = play(row, calls)
    record("redteam5_sweep", [played])
    print(f"gold + F5 helper: {played.line()}")
    assert played.invalid
