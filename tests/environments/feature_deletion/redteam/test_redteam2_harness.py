"""The second red team's harness is sound on every task its attacks use (held-out ones with FD_REDTEAM_HELDOUT):
gold 1.0 and untouched 0.0 through `ToolSession`, so that an attack's reward means what it says.

Reproduce: FD_REDTEAM=1 [FD_REDTEAM_HELDOUT=...] uv run pytest tests/environments/feature_deletion/redteam/test_redteam2_harness.py -q
"""

from __future__ import annotations

import pytest
from attacks2 import ATTACKS, HELDOUT, needs_heldout, row_of, tasks_dir_of
from harness import gold_calls, play


@pytest.mark.parametrize("task", sorted({a.task for a in ATTACKS.values()}))
def test_gold_pays_one_and_untouched_zero(task):
    if needs_heldout(task) and not HELDOUT:
        pytest.skip("held-out package: set FD_REDTEAM_HELDOUT")
    row = row_of(task)
    gold = play(row, gold_calls(row), tasks_dir=tasks_dir_of(task))
    untouched = play(row, [], tasks_dir=tasks_dir_of(task))
    print(gold.line(), untouched.line(), sep="\n")
    assert gold.reward == 1.0 and not gold.invalid, gold.line()
    assert untouched.reward == 0.0, untouched.line()
