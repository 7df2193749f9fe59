"""Second red team (FINDINGS_2.md, A root cause 1): `behaviour.unsound` judges held-out checks by whole observations,
which echo the arguments (`["mutated", ...]`, `["taken", ...]`), so held-out answers whose *return value* is always
the same look all different. A forger answers the return value, and the driver echoes the arguments itself.

Data only (no sandbox): for every task, the return-value mode forger (gold where the step is not held-out, the most
common return value of the same function or method on every held-out step) must fail at least one held-out check.

Reproduce: FD_REDTEAM=1 [FD_SWEEP_TASKS=other.jsonl] uv run pytest tests/environments/feature_deletion/redteam/test_redteam2_modes.py -q
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest
from harness import TASKS, rows

from feature_deletion.behaviour import _callee

ROWS = rows(Path(os.environ.get("FD_SWEEP_TASKS", TASKS)))


def return_value(observation: list) -> str:
    return json.dumps(observation[:2])  # ["ok", value] or ["raises", type]: without the echoed arguments


@pytest.mark.parametrize("row", ROWS, ids=[r.id.split("/", 1)[1] for r in ROWS])
def test_the_return_value_mode_fails_a_held_out_check(row):
    by_callee: dict[str, list[str]] = {}
    for p in row.checks.programs:
        for step, want, held in zip(p.steps, p.expect, p.heldout):
            if held:
                by_callee.setdefault(_callee(step), []).append(return_value(want))
    missed = sum(len(v) - Counter(v).most_common(1)[0][1] for v in by_callee.values())
    total = sum(len(v) for v in by_callee.values())
    print(f"{missed} of {total} held-out steps answer other than their callee's most common return value")
    assert missed > 0, "answering the most common return value passes every held-out check"
