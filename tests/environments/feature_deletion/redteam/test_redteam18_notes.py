"""Eighteenth red team (FINDINGS_18.md), E18: text on the side through exceptions' notes (PEP 678). The replay
observes a raised exception by its type and arguments (`fd_calls._exception_args`), pytest by its type and `str`;
nothing reads `__notes__`, which the interpreter prints under the traceback of every exception that reaches the top
and `traceback`/`logging.exception` write into a user's logs. Gold with every deleted function's body wrapped in
`try: ... except Exception as _rt18_exc: _rt18_exc.add_note(NOTE); raise` (`attacks18.noted_gold`, task-agnostic):
every exception is gold's, with a line of text gold never writes.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 -q -p no:cacheprovider \
    tests/environments/feature_deletion/redteam/test_redteam18_notes.py
"""

from __future__ import annotations

import pytest

import attacks18 as a
from _rt14_witness import graded, outputs

ONE = "more-itertools-10.5.0/more_itertools/more.py:one:body"
LFU_POPITEM = "cachetools-5.5.0/src/cachetools/__init__.py:LFUCache.popitem:body"
SAMPLE = [
    ONE,
    LFU_POPITEM,
    "toolz-1.0.0/toolz/itertoolz.py:get:body",
    "more-itertools-10.5.0/more_itertools/recipes.py:nth_combination:def",
    "more-itertools-10.5.0/more_itertools/more.py:exactly_n:def",
    "toolz-1.0.0/toolz/functoolz.py:excepts:methods",
]

SHOW = """
import traceback
try:
    {call}
except Exception:
    print(traceback.format_exc().strip().splitlines()[-1])
"""


def test_witness_one_of_nothing_prints_a_note(tmp_path):
    script = "from more_itertools import one\n" + SHOW.format(call="one([])")
    assert outputs(tmp_path, ONE, a.noted_gold, script) == {
        "gold": "ValueError: too few items in iterable (expected 1)", "wrong": a.NOTE}


def test_witness_an_empty_lfu_cache_prints_a_note(tmp_path):
    script = "from cachetools import LFUCache\n" + SHOW.format(call="LFUCache(maxsize=2).popitem()")
    assert outputs(tmp_path, LFU_POPITEM, a.noted_gold, script) == {
        "gold": "KeyError: 'LFUCache is empty'", "wrong": a.NOTE}


@pytest.mark.parametrize("task", SAMPLE)
def test_a_note_on_the_side_is_not_paid(task):
    played = graded(task, a.noted_gold, "redteam18_E18")
    assert played.reward == 0.0


CONTEXT = [
    LFU_POPITEM,
    "cachetools-5.5.0/src/cachetools/__init__.py:TTLCache.popitem:body",
    "cachetools-5.5.0/src/cachetools/__init__.py:TLRUCache.popitem:def",
    "cachetools-5.5.0/src/cachetools/__init__.py:FIFOCache:methods",
    "cachetools-5.5.0/src/cachetools/__init__.py:MRUCache:methods",
    "cachetools-5.5.0/src/cachetools/__init__.py:TTLCache:methods",
]
CHAINED = """
import traceback
try:
    {call}
except Exception as exc:
    print(type(exc.__context__).__name__, exc.__suppress_context__, "During handling" in traceback.format_exc())
"""


def test_witness_an_empty_lfu_cache_shows_the_exception_gold_suppressed(tmp_path):
    """E18c: `raise KeyError(...)` without gold's `from None`."""
    script = "from cachetools import LFUCache\n" + CHAINED.format(call="LFUCache(maxsize=2).popitem()")
    assert outputs(tmp_path, LFU_POPITEM, a.context_kept_gold, script) == {
        "gold": "ValueError True False", "wrong": "ValueError False True"}


@pytest.mark.parametrize("task", CONTEXT)
def test_an_exception_chained_where_gold_suppresses_it_is_not_paid(task):
    played = graded(task, a.context_kept_gold, "redteam18_E18c")
    assert played.reward == 0.0
