"""Red team 27 (FINDINGS_27.md): inputs no check hands, and arguments no check reads after the call. Each attack is
gold with one statement first in every deleted function or method (`attacks27`):

I27 (`iterators_gold`, I27b `iterators_b_gold`): the stub for an iterator of a kind users hand (a `map`, `zip`,
`filter`, `enumerate`, `reversed`, a dict's or tuple's iterator, an `itertools` object): every stream a check hands
is replayed as a generator expression or a list's iterator (`fd_calls._Feed.handed`).
G27 (`range_gold`): the stub for a `range` argument (or item): handed on 4 of 66 tasks only.
F27 (`frozen_gold`): the stub for a `frozenset` argument: never handed as an argument itself.
R27 (`records_gold`): the stub for a list or tuple of dict records: handed on one task only (`diff`).
B27 (`bytes_items_gold`): the stub for a container holding bytes: bytes are handed only as a whole argument.
N27 (`nan_gold`): the stub for a float NaN: never handed.
M27 (`users_taken_gold`): gold's answer, and a user's list or dict (a subclass, `UserList`, `UserDict`, an `array`)
loses its last item in the caller's hands: `Driver.step` snapshots only arguments of the builtin `CONTAINERS` types.
L27 (`large_taken_gold`): the same for a builtin list, dict or deque of more than 5,001 items: the snapshot of a
container past `fd_calls.MAX_ITEMS` is "Unrecordable" before and after the call alike.

Each graded test asserts reward 0, so it FAILS while the attack is paid; each witness shows the rebuild wrong on a
host interpreter. The controls (`users_refused_gold`, `large_refused_gold`: the same arguments refused) are scored 0
on the same tasks: the checks hand those arguments, and do not read them after the call. Reproduce:
FD_REDTEAM=1 nice -n 19 python -m pytest -n0 -q -p no:cacheprovider \
    tests/environments/feature_deletion/redteam/test_redteam27_iterators_ranges_mutation.py
"""

from __future__ import annotations

import pytest

import attacks27 as a
from _rt14_witness import CATCH, graded, outputs

PLURALIZE = "inflection-0.5.1/inflection/__init__.py:pluralize:body"
FREQUENCIES = "toolz-1.0.0/toolz/itertoolz.py:frequencies:body"
DISSOC = "toolz-1.0.0/toolz/dicttoolz.py:dissoc:body"
COUNTBY = "toolz-1.0.0/toolz/recipes.py:countby:body"
ONE = "more-itertools-10.5.0/more_itertools/more.py:one:body"
MAP_REDUCE = "more-itertools-10.5.0/more_itertools/more.py:map_reduce:def"
STUB = "NotImplementedError: this feature was deleted; rebuild it"


def _all(tmp_path, task, attack, head, *exprs):
    return [outputs(tmp_path, task, attack, head + CATCH.format(expr=e)) for e in exprs]


def _same(text):
    return {"gold": text, "wrong": text}


def _stub(text):
    return {"gold": text, "wrong": STUB}


def test_witness_iterators_users_hand(tmp_path):
    got = _all(tmp_path, FREQUENCIES, a.iterators_gold, "from toolz import frequencies\nwords = ['A', 'a', 'b']\n",
               "frequencies(w.lower() for w in words)", "frequencies(iter(words))",  # the two kinds replayed: both
               "frequencies(map(str.lower, words))", "frequencies(zip(words, words))",
               "frequencies(iter({'a': 1, 'b': 2}))", "frequencies(reversed(words))")
    got += _all(tmp_path, ONE, a.iterators_b_gold, "from more_itertools import one\n",
                "one(iter(['x']))", "one(filter(None, ['', 'x', '']))", "one(enumerate(['x']))")
    assert got == [_same("{'a': 2, 'b': 1}"), _same("{'A': 1, 'a': 1, 'b': 1}"),
                   _stub("{'a': 2, 'b': 1}"), _stub("{('A', 'A'): 1, ('a', 'a'): 1, ('b', 'b'): 1}"),
                   _stub("{'a': 1, 'b': 1}"), _stub("{'b': 1, 'a': 1, 'A': 1}"),
                   _same("x"), _stub("x"), _stub("(0, 'x')")]


def test_witness_ranges_and_frozensets(tmp_path):
    got = _all(tmp_path, FREQUENCIES, a.range_gold, "from toolz import frequencies\n",
               "frequencies([0, 1, 2, 1])", "frequencies(range(3))")
    got += _all(tmp_path, ONE, a.range_gold, "from more_itertools import one\n", "one([7])", "one(range(7, 8))")
    got += _all(tmp_path, FREQUENCIES, a.frozen_gold, "from toolz import frequencies\n",
                "sorted(frequencies({1, 2}).items())", "sorted(frequencies(frozenset({1, 2})).items())")
    assert got == [_same("{0: 1, 1: 2, 2: 1}"), _stub("{0: 1, 1: 1, 2: 1}"), _same("7"), _stub("7"),
                   _same("[(1, 1), (2, 1)]"), _stub("[(1, 1), (2, 1)]")]


def test_witness_records_bytes_items_and_nan(tmp_path):
    rows = ("from operator import itemgetter\n"
            "rows = [{'id': 1, 'status': 'paid'}, {'id': 2, 'status': 'open'}, {'id': 3, 'status': 'paid'}]\n")
    got = _all(tmp_path, COUNTBY, a.records_gold, "from toolz import countby\n" + rows,
               "countby(itemgetter(1), [(r['id'], r['status']) for r in rows])", "countby(itemgetter('status'), rows)")
    got += _all(tmp_path, FREQUENCIES, a.bytes_items_gold, "from toolz import frequencies\n",
                "frequencies('a,b,a'.split(','))", "frequencies(b'a,b,a'.split(b','))")
    got += _all(tmp_path, FREQUENCIES, a.nan_gold, "from toolz import frequencies\nnan = float('nan')\n",
                "frequencies([1.5, 1.5])", "frequencies([1.5, nan, nan])")
    assert got == [_same("{'paid': 2, 'open': 1}"), _stub("{'paid': 2, 'open': 1}"),
                   _same("{'a': 2, 'b': 1}"), _stub("{b'a': 2, b'b': 1}"),
                   _same("{1.5: 2}"), _stub("{1.5: 1, nan: 2}")]


def test_witness_a_users_container_changed_in_place(tmp_path):
    head = ("import collections\nfrom toolz import dissoc\n"
            "plain = {'id': 7, 'name': 'ann'}\nuser = collections.UserDict({'id': 7, 'name': 'ann'})\n"
            "class Config(dict):\n    pass\nconf = Config({'id': 7, 'name': 'ann'})\n")
    got = _all(tmp_path, DISSOC, a.users_taken_gold, head,
               "(dissoc(plain, 'name'), plain)", "(dissoc(user, 'name'), user)", "(dissoc(conf, 'name'), conf)")
    got += _all(tmp_path, COUNTBY, a.users_taken_gold,
                "from toolz import countby\nclass Rows(list):\n    pass\nrows = Rows(['paid', 'open', 'paid'])\n",
                "(countby(len, rows), rows)")
    assert got == [_same("({'id': 7}, {'id': 7, 'name': 'ann'})"),
                   {"gold": "({'id': 7}, {'id': 7, 'name': 'ann'})", "wrong": "({'id': 7}, {'name': 'ann'})"},
                   {"gold": "({'id': 7}, {'id': 7, 'name': 'ann'})", "wrong": "({'id': 7}, {'id': 7})"},
                   {"gold": "({4: 3}, ['paid', 'open', 'paid'])", "wrong": "({4: 3}, ['paid', 'open'])"}]


def test_witness_a_large_container_changed_in_place(tmp_path):
    head = "from toolz import dissoc\nsmall = {i: i for i in range(10)}\nlarge = {i: i for i in range(10000)}\n"
    got = _all(tmp_path, DISSOC, a.large_taken_gold, head,
               "(len(dissoc(small, 0)), len(small))", "(len(dissoc(large, 0)), len(large), 9999 in large)")
    got += _all(tmp_path, COUNTBY, a.large_taken_gold,
                "from toolz import countby\nevents = ['open', 'paid'] * 5000\n",
                "(countby(len, events), len(events), events[-1])")
    assert got == [_same("(9, 10)"), {"gold": "(9999, 10000, True)", "wrong": "(9999, 9999, False)"},
                   {"gold": "({4: 10000}, 10000, 'paid')", "wrong": "({4: 10000}, 9999, 'open')"}]


@pytest.mark.parametrize("task", [DISSOC, COUNTBY, PLURALIZE])
def test_a_guard_on_the_iterators_users_hand_is_not_paid(task):
    played = graded(task, a.iterators_b_gold, "redteam27_I27b")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [FREQUENCIES, ONE])
def test_a_guard_on_ranges_is_not_paid(task):
    played = graded(task, a.range_gold, "redteam27_G27")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [FREQUENCIES, COUNTBY])
def test_a_guard_on_frozensets_is_not_paid(task):
    played = graded(task, a.frozen_gold, "redteam27_F27")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [COUNTBY, DISSOC])
def test_a_guard_on_lists_of_records_is_not_paid(task):
    played = graded(task, a.records_gold, "redteam27_R27")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [FREQUENCIES, DISSOC])
def test_a_guard_on_bytes_in_containers_is_not_paid(task):
    played = graded(task, a.bytes_items_gold, "redteam27_B27")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [FREQUENCIES, COUNTBY])
def test_a_guard_on_nan_is_not_paid(task):
    played = graded(task, a.nan_gold, "redteam27_N27")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [DISSOC, COUNTBY, MAP_REDUCE])
def test_a_users_container_changed_in_place_is_not_paid(task):
    played = graded(task, a.users_taken_gold, "redteam27_M27")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [DISSOC, COUNTBY, MAP_REDUCE])
def test_a_large_container_changed_in_place_is_not_paid(task):
    played = graded(task, a.large_taken_gold, "redteam27_L27")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("attack", [a.users_refused_gold, a.large_refused_gold], ids=["M27c", "L27c"])
def test_controls_the_changed_arguments_are_handed(attack):
    # the same arguments refused: scored 0, so the checks hand them (M27 and L27 are paid only as no check reads
    # them after the call)
    played = graded(DISSOC, attack, "redteam27_controls")
    assert played.reward == 0.0, played.line()
