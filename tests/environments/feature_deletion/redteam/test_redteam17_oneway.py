"""Seventeenth red team (FINDINGS_17.md), M17: a counter bumped only in a step where gold's object changes too.
`own_state` is compared one way (a step that leaves gold's object as it was must leave the rebuild's as it was), so
a private attribute made and bumped only in a step that also changes gold's object is never compared. Gold of
`LFUCache.popitem` plus `_rt17_pops(self)` before its return (`attacks17.popitem_counted_gold`): the 45,001st
eviction of one cache raises the stub's `NotImplementedError`, from `c[key] = value` of a full cache.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 -q -p no:cacheprovider \
    tests/environments/feature_deletion/redteam/test_redteam17_oneway.py
"""

from __future__ import annotations

import pytest

import attacks17 as a
from _rt14_witness import LOOP, graded, outputs

def test_witness_a_long_lived_full_lfu_cache_stops_accepting_values(tmp_path):
    """`LFUCache(maxsize=10)`: from the 11th assignment on each one evicts (`popitem`); the 45,001st eviction is
    assignment 45,011."""
    script = "from cachetools import LFUCache\nc = LFUCache(maxsize=10)\n" + LOOP.format(n=60_000, call="c[i] = i")
    assert outputs(tmp_path, a.LFU_POPITEM, a.popitem_counted_gold, script) == {
        "gold": "ok 60000", "wrong": "NotImplementedError at call 45011"}


@pytest.mark.parametrize("task", sorted(a.POPITEMS))
def test_a_counter_bumped_where_gold_changes_too_is_not_paid(task):
    played = graded(task, a.popitem_counted_gold, "redteam17_M17")
    assert played.reward == 0.0
