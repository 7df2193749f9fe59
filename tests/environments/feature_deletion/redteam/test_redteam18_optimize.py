"""Red team 18 (FINDINGS_18.md), O18: a rebuild that works only while assertions run. Gold with `_rt18_asserted()`
first in every deleted function (`attacks18o.asserted_gold`): the helper's `assert False` is caught and it returns;
under `python -O` (or `PYTHONOPTIMIZE=1`) the assertion is compiled away and it raises the stub's
`NotImplementedError`. Every grading process runs with assertions on, so it is paid on any task.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 -q -p no:cacheprovider \
    tests/environments/feature_deletion/redteam/test_redteam18_optimize.py
"""

from __future__ import annotations

import pytest

import attacks18o as a
from _rt14_witness import CATCH, graded, outputs

ORDINAL = "inflection-0.5.1/inflection/__init__.py:ordinal:def"
FREQUENCIES = "toolz-1.0.0/toolz/itertoolz.py:frequencies:body"
LRU_INIT = "cachetools-5.5.0/src/cachetools/__init__.py:LRUCache.__init__:body"
NTH_COMBINATION = "more-itertools-10.5.0/more_itertools/recipes.py:nth_combination:def"
STUB = "NotImplementedError: this feature was deleted; rebuild it"


def test_witness_ordinal_under_python_O(tmp_path):
    script = "from inflection import ordinal\n" + CATCH.format(expr="ordinal(1)")
    assert outputs(tmp_path, ORDINAL, a.asserted_gold, script) == {"gold": "st", "wrong": "st"}
    assert outputs(tmp_path, ORDINAL, a.asserted_gold, script, options=("-O",)) == {"gold": "st", "wrong": STUB}


def test_witness_frequencies_under_python_O(tmp_path):
    script = "from toolz import frequencies\n" + CATCH.format(expr="frequencies('abca')")
    assert outputs(tmp_path, FREQUENCIES, a.asserted_gold, script, options=("-O",)) == {
        "gold": "{'a': 2, 'b': 1, 'c': 1}", "wrong": STUB}


def test_witness_lru_cache_under_python_O(tmp_path):
    script = "from cachetools import LRUCache\n" + CATCH.format(expr="LRUCache(maxsize=2).maxsize")
    assert outputs(tmp_path, LRU_INIT, a.asserted_gold, script, options=("-O",)) == {"gold": "2", "wrong": STUB}


@pytest.mark.parametrize("task", [ORDINAL, FREQUENCIES, LRU_INIT, NTH_COMBINATION])
def test_a_rebuild_broken_under_python_O_is_not_paid(task):
    played = graded(task, a.asserted_gold, "redteam18_O18")
    assert played.reward == 0.0
