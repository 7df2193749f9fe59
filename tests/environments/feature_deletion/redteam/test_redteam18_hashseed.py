"""Red team 18 (FINDINGS_18.md), S18: a rebuild that breaks where string hashing is not randomised. Gold with
`_rt18_hashed()` first in every deleted function (`attacks18s.seed0_gold`): the stub's `NotImplementedError` where
`hash('rt18')` is its value under `PYTHONHASHSEED=0`. The sandbox draws every command's seed from 1 .. 2**32 - 1, so
it is paid on any task; the witness runs the same script with `PYTHONHASHSEED=0` and with a drawn seed.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 -q -p no:cacheprovider \
    tests/environments/feature_deletion/redteam/test_redteam18_hashseed.py
"""

from __future__ import annotations

import pytest

import attacks18s as a
from _rt14_witness import CATCH, graded, outputs

ORDINAL = "inflection-0.5.1/inflection/__init__.py:ordinal:def"
FREQUENCIES = "toolz-1.0.0/toolz/itertoolz.py:frequencies:body"
SPLIT_INTO = "more-itertools-10.5.0/more_itertools/more.py:split_into:def"
LRU_INIT = "cachetools-5.5.0/src/cachetools/__init__.py:LRUCache.__init__:body"
STUB = "NotImplementedError: this feature was deleted; rebuild it"


def test_witness_frequencies_under_hash_seed_0(tmp_path):
    script = "from toolz import frequencies\n" + CATCH.format(expr="sorted(frequencies('abca').items())")
    want = "[('a', 2), ('b', 1), ('c', 1)]"
    assert outputs(tmp_path, FREQUENCIES, a.seed0_gold, script, env={"PYTHONHASHSEED": "12345"}) == {
        "gold": want, "wrong": want}
    assert outputs(tmp_path, FREQUENCIES, a.seed0_gold, script, env={"PYTHONHASHSEED": "0"}) == {
        "gold": want, "wrong": STUB}


def test_witness_ordinal_under_hash_seed_0(tmp_path):
    script = "from inflection import ordinal\n" + CATCH.format(expr="ordinal(1)")
    assert outputs(tmp_path, ORDINAL, a.seed0_gold, script, env={"PYTHONHASHSEED": "0"}) == {
        "gold": "st", "wrong": STUB}


@pytest.mark.parametrize("task", [ORDINAL, FREQUENCIES, SPLIT_INTO, LRU_INIT])
def test_a_rebuild_broken_under_hash_seed_0_is_not_paid(task):
    played = graded(task, a.seed0_gold, "redteam18_S18")
    assert played.reward == 0.0
