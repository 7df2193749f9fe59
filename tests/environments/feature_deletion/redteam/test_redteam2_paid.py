"""Second red team (FINDINGS_2.md, A): wrong rebuilds that the verdict pays, one task of each package at least.

Each attack is a list of tool calls through `ToolSession` (attacks2.PAID); the test asserts the defence (reward 0),
so an attack that is paid FAILS. The held-out packages' attacks need FD_REDTEAM_HELDOUT (attacks2's docstring).
Results are appended to results/redteam2_paid.jsonl.

Reproduce: FD_REDTEAM=1 [FD_REDTEAM_HELDOUT=/path/tasks.jsonl] \\
    uv run pytest tests/environments/feature_deletion/redteam/test_redteam2_paid.py -q -s [-k NAME]
"""

from __future__ import annotations

import pytest
from attacks2 import EQUIVALENT_REBUILDS, HELDOUT, PAID, needs_heldout, row_of, tasks_dir_of
from harness import play, record


@pytest.mark.parametrize("name", sorted(PAID))
def test_wrong_rebuild_is_not_paid(name):
    attack = PAID[name]
    if needs_heldout(attack.task) and not HELDOUT:
        pytest.skip("held-out package: set FD_REDTEAM_HELDOUT")
    row = row_of(attack.task)
    played = play(row, attack.calls(row), tasks_dir=tasks_dir_of(attack.task))
    record("redteam2_paid", [played])
    print(f"{name} ({attack.what}): {played.line()}")
    assert played.reward == 0.0, f"{attack.what}: paid {played.reward:.3f}"


@pytest.mark.parametrize("name", sorted(EQUIVALENT_REBUILDS))
def test_an_equivalent_rebuild_is_paid(name):
    """The mutants the red team found paid but equivalent (`head[-1]` of a one-item `head`, ...): an implementation,
    which the checks must keep paying (a check that refused them would cost honest agents reward)."""
    attack = EQUIVALENT_REBUILDS[name]
    row = row_of(attack.task)
    played = play(row, attack.calls(row), tasks_dir=tasks_dir_of(attack.task))
    print(f"{name} ({attack.what}): {played.line()}")
    assert played.reward == 1.0, f"{attack.what}: paid {played.reward:.3f}"
