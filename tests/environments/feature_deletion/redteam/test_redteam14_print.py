"""Fourteenth red team (FINDINGS_14.md), P14: output on the side. Gold's answers plus a `print(...)` at every call of
a deleted function (`print` is no risky builtin): no check compares what the code writes to standard output (the
replay's answers go to a results file of their own, pytest captures output), so the rebuild is paid while, for a
user, the library writes into their program's output at every call (a JSON or CSV stream on stdout is corrupted).
Task-agnostic: `attacks14.print_everywhere_gold`, sampled on 6 tasks of the 4 packages; `frequencies_prints` is the
hand-written one.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 -q -p no:cacheprovider \
    tests/environments/feature_deletion/redteam/test_redteam14_print.py
"""

from __future__ import annotations

import pytest

import attacks14 as a
from _rt14_witness import outputs
from attacks2 import row_of
from harness import play, record

SAMPLE = [
    "inflection-0.5.1/inflection/__init__.py:ordinal:def",
    "toolz-1.0.0/toolz/itertoolz.py:partition:body",
    "toolz-1.0.0/toolz/functoolz.py:juxt:methods",
    "cachetools-5.5.0/src/cachetools/__init__.py:LRUCache.__init__:body",
    "more-itertools-10.5.0/more_itertools/recipes.py:nth_combination:def",
    "more-itertools-10.5.0/more_itertools/more.py:split_into:def",
]


def test_witness_frequencies_writes_into_the_users_output(tmp_path):
    script = "import json; from toolz import frequencies; print(json.dumps(frequencies('aab')))"
    assert outputs(tmp_path, a.FREQUENCIES, a.frequencies_prints, script) == {
        "gold": '{"a": 2, "b": 1}', "wrong": 'frequencies: 2 distinct\n{"a": 2, "b": 1}'}


def test_witness_ordinal_writes_into_the_users_output(tmp_path):
    script = "from inflection import ordinalize; print(ordinalize(3))"
    assert outputs(tmp_path, "inflection-0.5.1/inflection/__init__.py:ordinal:def", a.print_everywhere_gold,
                   script) == {"gold": "3rd", "wrong": "ordinal: called\n3rd"}


def test_printing_frequencies_is_not_paid():
    row = row_of(a.FREQUENCIES)
    played = play(row, a.frequencies_prints(row))
    record("redteam14_P14_frequencies", [played])
    print(f"P14 frequencies: {played.line()}")
    assert played.reward == 0.0


@pytest.mark.parametrize("task", SAMPLE)
def test_gold_that_prints_is_not_paid(task):
    row = row_of(task)
    calls = a.print_everywhere_gold(row)
    assert calls is not None
    played = play(row, calls)
    record("redteam14_P14_sweep", [played])
    print(f"P14 {task}: {played.line()}")
    assert played.reward == 0.0
