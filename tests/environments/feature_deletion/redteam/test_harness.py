"""The red team's harness is sound: through `ToolSession`, the gold patch scores 1.0 and an untouched submission
0.0 (on one task of each bundled package). Without this an attack's 0 would mean nothing.

Reproduce: FD_REDTEAM=1 uv run pytest tests/environments/feature_deletion/redteam/test_harness.py -q
"""

from __future__ import annotations

import pytest
from harness import gold_calls, play, rows

PICKED = {r.id.split("-")[0]: r for r in rows()}  # the last task of each package


@pytest.mark.parametrize("package", sorted(PICKED))
def test_gold_pays_one_and_untouched_zero(package):
    row = PICKED[package]
    gold, untouched = play(row, gold_calls(row)), play(row, [])
    print(gold.line(), untouched.line(), sep="\n")
    assert gold.reward == 1.0 and not gold.invalid, gold.line()
    assert untouched.reward == 0.0, untouched.line()
