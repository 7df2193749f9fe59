"""Red team 28 (FINDINGS_28.md): an iterator's error no check hands, a generator's items no check reads after the
call, and text, numbers and callables of kinds no form makes. Each attack is gold with one statement first in every
deleted function or method (`attacks28`):

X28 (`quiet_gold`): a generator argument read through a generator that ends at the first exception the user's
raises (a rebuild's `except Exception:` where gold's is `except StopIteration:`): the recorder marks a stream ended
only at `StopIteration`, and an unended stream replays as the artifact "stream", so no check hands an iterator that
raises; the user's `ValueError` is swallowed and the answer made of the items before it.
M28 (`items_taken_gold`): gold's answer, and each list or dict a generator argument yields loses its last entry in
the caller's hands: a stream's items are decoded afresh at each `next` and no step holds them.
L28 (`western_gold`): the stub for text holding ä ö ü ß ñ å ø æ (German, Spanish, Nordic): `scripts` adds letters past
U+00FF and decomposed é, ñ, `NON_ASCII` is é: no precomposed letter of those languages but on 5 inflection tasks.
E28b (`exponent_b_gold`): the stub for a float written with an exponent (1e-05, 2.5e-10, 1e+16): none handed.
O28 (`operator_gold`): the stub for an `operator.itemgetter`/`attrgetter`/`methodcaller` callable.
R28 (`items_taken_before_gold`, first written as M28's control): each list or dict a generator argument yields loses
its last entry before the code reads it, so the answer is made of the shortened rows: paid wherever no check hands a
generator of non-empty lists or dicts (`countby`, `map_reduce`, `merge_sorted`, `unzip`, `diff`).
K28 (`tuple_keys_gold`): the stub for a mapping keyed by tuples (composite keys): no check's mapping holds one.
I28 (`left_out_gold`): the stub for a set's, range's, dict items' or bytes' iterator, a `callable_iterator`, a
`csv.DictReader`: the iterators `behaviour.iterables` does not make.

Each graded test asserts reward 0, so it FAILS while the attack is paid; each witness shows the rebuild wrong on a
host interpreter. The controls (X28c: generator and iterator arguments refused; M28c: the items changed before the
code reads them) are scored 0 where the checks hand those arguments (M28c: on `one` and `transpose` only; elsewhere
M28c is itself paid: R28). Reproduce:
FD_REDTEAM=1 nice -n 19 python -m pytest -n0 -q -p no:cacheprovider \
    tests/environments/feature_deletion/redteam/test_redteam28_errors_items_text_numbers.py
"""

from __future__ import annotations

import pytest

import attacks28 as a
from _rt14_witness import each_output as _all, graded, same as _same, stubbed as _stub

PLURALIZE = "inflection-0.5.1/inflection/__init__.py:pluralize:body"
FREQUENCIES = "toolz-1.0.0/toolz/itertoolz.py:frequencies:body"
DISSOC = "toolz-1.0.0/toolz/dicttoolz.py:dissoc:body"
COUNTBY = "toolz-1.0.0/toolz/recipes.py:countby:body"
MERGE_SORTED = "toolz-1.0.0/toolz/itertoolz.py:merge_sorted:body"
ONE = "more-itertools-10.5.0/more_itertools/more.py:one:body"
MAP_REDUCE = "more-itertools-10.5.0/more_itertools/more.py:map_reduce:def"
CONSUME = "more-itertools-10.5.0/more_itertools/recipes.py:consume:body"
TRANSPOSE = "more-itertools-10.5.0/more_itertools/recipes.py:transpose:def"
DIFF = "toolz-1.0.0/toolz/itertoolz.py:diff:body"
TTL = "cachetools-5.5.0/src/cachetools/__init__.py:TTLCache:methods"


def test_witness_a_generators_error_swallowed(tmp_path):
    bad = "ValueError: invalid literal for int() with base 10: 'x'"
    got = _all(tmp_path, ONE, a.quiet_gold, "from more_itertools import one\n",
               "one(int(s) for s in ['7'])", "one(int(s) for s in ['7', 'x'])", "one(int(s) for s in ['x'])")
    got += _all(tmp_path, MAP_REDUCE, a.quiet_gold, "from more_itertools import map_reduce\nlines = ['a 1', 'b 2', 'a']\n",
                "dict(map_reduce((int(l.split()[1]) for l in lines[:2]), lambda n: n % 2))",
                "dict(map_reduce((int(l.split()[1]) for l in lines), lambda n: n % 2))")
    got += _all(tmp_path, FREQUENCIES, a.quiet_gold, "from toolz import frequencies\nlines = ['1', '2', 'x', '2']\n",
                "frequencies(int(s) for s in lines)")
    assert got == [_same("7"), {"gold": bad, "wrong": "7"},
                   {"gold": bad, "wrong": "ValueError: too few items in iterable (expected 1)"},
                   _same("{1: [1], 0: [2]}"), {"gold": "IndexError: list index out of range", "wrong": "{1: [1], 0: [2]}"},
                   {"gold": bad, "wrong": "{1: 1, 2: 1}"}]


def test_witness_a_generators_items_changed_in_place(tmp_path):
    got = _all(tmp_path, COUNTBY, a.items_taken_gold,
               "from toolz import countby\nrows = [['ann', 'paid'], ['bob', 'open'], ['cy', 'paid']]\n",
               "(countby(len, rows), rows)", "(countby(len, (r for r in rows)), rows)")
    got += _all(tmp_path, MAP_REDUCE, a.items_taken_gold,
                "from more_itertools import map_reduce\nrows = [{'k': 'a', 'n': 1}, {'k': 'b', 'n': 2}]\n",
                "(dict(map_reduce((r for r in rows), lambda r: r['k'], lambda r: r['n'])), rows)")
    whole = "[['ann', 'paid'], ['bob', 'open'], ['cy', 'paid']]"
    assert got == [_same(f"({{2: 3}}, {whole})"),
                   {"gold": f"({{2: 3}}, {whole})", "wrong": "({2: 3}, [['ann'], ['bob'], ['cy']])"},
                   {"gold": "({'a': [1], 'b': [2]}, [{'k': 'a', 'n': 1}, {'k': 'b', 'n': 2}])",
                    "wrong": "({'a': [1], 'b': [2]}, [{'k': 'a'}, {'k': 'b'}])"}]


def test_witness_a_generators_rows_shortened(tmp_path):
    got = _all(tmp_path, COUNTBY, a.items_taken_before_gold,
               "from toolz import countby\nrows = [['ann', 'paid'], ['bob', 'open'], ['cy', 'paid']]\n",
               "countby(len, rows)", "countby(len, (r for r in rows))")
    got += _all(tmp_path, MAP_REDUCE, a.items_taken_before_gold,
                "from more_itertools import map_reduce\nrows = [{'k': 'a', 'n': 1}, {'k': 'b', 'n': 2}]\n",
                "dict(map_reduce((r for r in rows), lambda r: r['k']))")
    assert got == [_same("{2: 3}"), {"gold": "{2: 3}", "wrong": "{1: 3}"},
                   {"gold": "{'a': [{'k': 'a', 'n': 1}], 'b': [{'k': 'b', 'n': 2}]}",
                    "wrong": "{'a': [{'k': 'a'}], 'b': [{'k': 'b'}]}"}]


def test_witness_western_text_exponent_floats(tmp_path):
    got = _all(tmp_path, FREQUENCIES, a.western_gold, "from toolz import frequencies\n",
               "frequencies(['Paris', 'Lyon', 'Paris'])", "frequencies(['München', 'Köln', 'München'])")
    got += _all(tmp_path, PLURALIZE, a.western_gold, "from inflection import pluralize\n",
                "pluralize('café')", "pluralize('Straße')", "pluralize('niño')")
    got += _all(tmp_path, FREQUENCIES, a.exponent_b_gold, "from toolz import frequencies\n",
                "frequencies([0.5, 0.001, 0.5])", "frequencies([0.5, 1e-05, 0.5])")
    assert got == [_same("{'Paris': 2, 'Lyon': 1}"), _stub("{'München': 2, 'Köln': 1}"),
                   _same("cafés"), _stub("Straßes"), _stub("niños"),
                   _same("{0.5: 2, 0.001: 1}"), _stub("{0.5: 2, 1e-05: 1}")]


def test_witness_operator_callables_and_left_out_iterators(tmp_path):
    head = ("from toolz import countby\nfrom operator import itemgetter\n"
            "rows = [('ann', 'paid'), ('bob', 'open'), ('cy', 'paid')]\n")
    got = _all(tmp_path, COUNTBY, a.operator_gold, head,
               "countby(lambda r: r[1], rows)", "countby(itemgetter(1), rows)")
    got += _all(tmp_path, FREQUENCIES, a.left_out_gold, "from toolz import frequencies\n",
                "frequencies(iter([3, 1, 3]))", "frequencies(iter(range(3)))",
                "sorted(frequencies(iter({'b': 2, 'a': 1}.items())).items())")
    assert got == [_same("{'paid': 2, 'open': 1}"), _stub("{'paid': 2, 'open': 1}"),
                   _same("{3: 2, 1: 1}"), _stub("{0: 1, 1: 1, 2: 1}"), _stub("[(('a', 1), 1), (('b', 2), 1)]")]


def test_witness_tuple_keys(tmp_path):
    got = _all(tmp_path, DISSOC, a.tuple_keys_gold, "from toolz import dissoc\n",
               "dissoc({'0,0': 'a', '0,1': 'b'}, '0,0')", "dissoc({(0, 0): 'a', (0, 1): 'b'}, (0, 0))")
    assert got == [_same("{'0,1': 'b'}"), _stub("{(0, 1): 'b'}")]


@pytest.mark.parametrize("task", [ONE, MAP_REDUCE, CONSUME, MERGE_SORTED])
def test_a_generators_error_swallowed_is_not_paid(task):
    played = graded(task, a.quiet_gold, "redteam28_X28")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [ONE, TRANSPOSE, COUNTBY])
def test_a_generators_items_changed_in_place_is_not_paid(task):
    played = graded(task, a.items_taken_gold, "redteam28_M28")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [COUNTBY, MAP_REDUCE, DIFF])
def test_a_generators_rows_shortened_is_not_paid(task):
    played = graded(task, a.items_taken_before_gold, "redteam28_R28")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [FREQUENCIES, DISSOC, TTL])
def test_a_guard_on_western_text_is_not_paid(task):
    played = graded(task, a.western_gold, "redteam28_L28")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [FREQUENCIES, TTL])
def test_a_guard_on_exponent_floats_is_not_paid(task):
    played = graded(task, a.exponent_b_gold, "redteam28_E28b")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [COUNTBY, MAP_REDUCE])
def test_a_guard_on_operator_callables_is_not_paid(task):
    played = graded(task, a.operator_gold, "redteam28_O28")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [DISSOC, TTL])
def test_a_guard_on_tuple_keys_is_not_paid(task):
    played = graded(task, a.tuple_keys_gold, "redteam28_K28")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [FREQUENCIES, ONE])
def test_a_guard_on_left_out_iterators_is_not_paid(task):
    played = graded(task, a.left_out_gold, "redteam28_I28")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("attack,task", [(a.iterators_refused_gold, MAP_REDUCE), (a.items_taken_before_gold, TRANSPOSE)],
                         ids=["X28c", "M28c"])
def test_controls_the_arguments_are_handed(attack, task):
    played = graded(task, attack, "redteam28_controls")
    assert played.reward == 0.0, played.line()
