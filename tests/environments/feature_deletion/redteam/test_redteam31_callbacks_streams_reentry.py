"""Red team 31 (FINDINGS_31.md): what the driver still never reads or hands: the object a callback is handed (a copy
of the user's row answers alike), the object a callback answered (copied alike), the user's own error (remade
alike), the user's function's attributes, the order of a stream's pulls against the callback's calls (a stream read
whole first), the package called from inside the user's generator or a callback's later call, and an iterable or an
iterator of a user's class. Each attack is gold with statements first in every deleted function or method
(`attacks31`):

C31 (`callback_copies_gold`): every callable argument called with copies of the lists, dicts and sets gold hands it.
K31 (`answer_copies_gold`): the lists, dicts and sets a callable argument answers copied before gold uses them.
B31 (`read_whole_gold`): each generator argument read to its end (or its error, raised where gold meets it) first.
P31 (`prefetched_gold`): B31 where one callable meets one generator: read whole with the callable called on each item
as it is read (gold's order), gold then served the items and those answers (`keys = [key(x) for x in seq]` first).
G31 (`reentry_gold`): the stub for a deleted function called from inside a generator a deleted call is pulling from.
G31b (`reentry_later_gold`): the stub for a deleted function called from inside a callback's second or later call.
R31 (`unsized_gold`): the stub for an iterable of a user's class with `__iter__` only.
R31b (`users_iterator_gold`): the stub for an iterator of a user's own class.
E31 (`errors_remade_gold`): the error a user's callable or generator raises re-raised as a copy `from None`.
F31 (`callable_marked_gold`): each callable argument given an attribute of the code's own.

Each graded test asserts reward 0, so it FAILS while the attack is paid; each witness shows the rebuild wrong on a
host interpreter. The graded tests play the bundled data (stale at 9c674d4: gold itself scores 0.000 there,
856/1259 on `countby`, until it is answered again with H30/O30's driver); the findings' figures are of pre-check
subsets answered again with the current code (FINDINGS_31.md). Controls: B31c (generator arguments refused), C31c
(`sweep31.py`: red team 30's E30c, callable arguments refused). Reproduce:
FD_REDTEAM=1 nice -n 19 python -m pytest -n0 -q -p no:cacheprovider \
    tests/environments/feature_deletion/redteam/test_redteam31_callbacks_streams_reentry.py
"""

from __future__ import annotations

import pytest

import attacks31 as a
from _rt14_witness import each_output as _all, graded, same as _same, stubbed as _stub

COUNTBY = "toolz-1.0.0/toolz/recipes.py:countby:body"
FREQUENCIES = "toolz-1.0.0/toolz/itertoolz.py:frequencies:body"
MAP_REDUCE = "more-itertools-10.5.0/more_itertools/more.py:map_reduce:def"
DISSOC = "toolz-1.0.0/toolz/dicttoolz.py:dissoc:body"


ROWS = "rows = [{'name': 'ann'}, {'name': 'bob'}, {'name': 'al'}]\n"


def test_witness_a_callback_handed_copies(tmp_path):
    got = _all(tmp_path, COUNTBY, a.callback_copies_gold, "from toolz import countby\n" + ROWS,
               "countby(lambda r: r['name'][0], rows)",
               "(countby(lambda r: r.setdefault('initial', r['name'][0]), rows), rows)",
               "countby(lambda r: r is rows[0], rows)")
    got += _all(tmp_path, MAP_REDUCE, a.callback_copies_gold, "from more_itertools import map_reduce\n" + ROWS,
                "(dict(map_reduce(rows, lambda r: r.pop('name')[0], lambda r: 1, sum)), rows)")
    assert got == [_same("{'a': 2, 'b': 1}"),
                   {"gold": "({'a': 2, 'b': 1}, [{'name': 'ann', 'initial': 'a'}, {'name': 'bob', 'initial': 'b'}, "
                            "{'name': 'al', 'initial': 'a'}])",
                    "wrong": "({'a': 2, 'b': 1}, [{'name': 'ann'}, {'name': 'bob'}, {'name': 'al'}])"},
                   {"gold": "{True: 1, False: 2}", "wrong": "{False: 3}"},
                   {"gold": "({'a': 2, 'b': 1}, [{}, {}, {}])",
                    "wrong": "({'a': 2, 'b': 1}, [{'name': 'ann'}, {'name': 'bob'}, {'name': 'al'}])"}]


def test_witness_a_callbacks_answer_copied(tmp_path):
    head = ("from more_itertools import map_reduce\n"
            "rows = [{'k': 'a', 'tags': ['x']}, {'k': 'b', 'tags': []}]\n"
            "m = map_reduce(rows, lambda r: r['k'], lambda r: r['tags'])\n")
    got = _all(tmp_path, MAP_REDUCE, a.answer_copies_gold, head,
               "dict(m)", "m['a'][0] is rows[0]['tags']",
               "(rows[0]['tags'].append('y'), m['a'])[1]")
    assert got == [_same("{'a': [['x']], 'b': [[]]}"), {"gold": "True", "wrong": "False"},
                   {"gold": "[['x', 'y']]", "wrong": "[['x']]"}]


def test_witness_a_stream_read_whole_first(tmp_path):
    head = ("from toolz import countby\nlog = []\n"
            "def words():\n    for w in ['a', 'bb', 'cc']:\n        log.append('read ' + w)\n        yield w\n")
    got = _all(tmp_path, COUNTBY, a.read_whole_gold, head,
               "(countby(lambda w: log.append('key ' + w) or len(w), words()), log)")
    got += _all(tmp_path, FREQUENCIES, a.read_whole_gold,
                "from toolz import frequencies\nimport tracemalloc\ntracemalloc.start()\n",
                "(frequencies(str(i % 3) * 1000 for i in range(20000)), "
                "tracemalloc.get_traced_memory()[1] > 10_000_000)")
    assert got == [{"gold": "({1: 1, 2: 2}, ['read a', 'key a', 'read bb', 'key bb', 'read cc', 'key cc'])",
                    "wrong": "({1: 1, 2: 2}, ['read a', 'read bb', 'read cc', 'key a', 'key bb', 'key cc'])"},
                   {"gold": "({'0' * 1000: 6667, '1' * 1000: 6667, '2' * 1000: 6666}, False)".replace(
                       "'0' * 1000", repr("0" * 1000)).replace("'1' * 1000", repr("1" * 1000)).replace(
                       "'2' * 1000", repr("2" * 1000)),
                    "wrong": "({'0' * 1000: 6667, '1' * 1000: 6667, '2' * 1000: 6666}, True)".replace(
                        "'0' * 1000", repr("0" * 1000)).replace("'1' * 1000", repr("1" * 1000)).replace(
                        "'2' * 1000", repr("2" * 1000))}]


def test_witness_keys_prefetched(tmp_path):
    head = "from toolz import countby\nimport tracemalloc\ntracemalloc.start()\n"
    got = _all(tmp_path, COUNTBY, a.prefetched_gold, head,
               "countby(len, (w for w in ['a', 'bb', 'cc']))",
               "countby(len, (int(s) for s in ['1', 'x']))",
               "(countby(len, (str(i % 3) * 1000 for i in range(20000))), "
               "tracemalloc.get_traced_memory()[1] > 10_000_000)")
    assert got == [_same("{1: 1, 2: 2}"), _same("TypeError: object of type 'int' has no len()"),
                   {"gold": "({1000: 20000}, False)", "wrong": "({1000: 20000}, True)"}]


def test_witness_reentry_and_an_unsized_iterable(tmp_path):
    got = _all(tmp_path, FREQUENCIES, a.reentry_gold, "from toolz import frequencies\n",
               "frequencies(len(set(w)) for w in ['ab', 'ba', 'cc'])",
               "frequencies(tuple(sorted(frequencies(w).items())) for w in ['ab', 'ba'])")
    words = ("class Words:\n    def __init__(self, text):\n        self.text = text\n"
             "    def __iter__(self):\n        return iter(self.text.split())\n")
    got += _all(tmp_path, FREQUENCIES, a.unsized_gold, "from toolz import frequencies\n" + words,
                "frequencies('a b a'.split())", "frequencies(Words('a b a'))")
    pages = ("class Pages:\n    def __init__(self, pages):\n        self.pages = list(pages)\n"
             "    def __iter__(self):\n        return self\n"
             "    def __next__(self):\n        if not self.pages:\n            raise StopIteration\n"
             "        return self.pages.pop(0)\n")
    got += _all(tmp_path, FREQUENCIES, a.users_iterator_gold, "from toolz import frequencies\n" + pages,
                "frequencies(iter(['a', 'b', 'a']))", "frequencies(Pages(['a', 'b', 'a']))")
    assert got == [_same("{2: 2, 1: 1}"), _stub("{(('a', 1), ('b', 1)): 2}"),
                   _same("{'a': 2, 'b': 1}"), _stub("{'a': 2, 'b': 1}"),
                   _same("{'a': 2, 'b': 1}"), _stub("{'a': 2, 'b': 1}")]


def test_witness_the_users_error_remade(tmp_path):
    head = ("from toolz import countby\nimport traceback\n"
            "def initial(r):\n    try:\n        return r['name'][0]\n    except KeyError:\n"
            "        raise ValueError('a row without a name')\n"
            "def caught(f):\n    try:\n        f()\n    except Exception as e:\n"
            "        return (type(e).__name__, type(e.__context__).__name__,\n"
            "                traceback.extract_tb(e.__traceback__)[-1].name)\n")
    got = _all(tmp_path, COUNTBY, a.errors_remade_gold, head,
               "countby(initial, [{'name': 'ann'}])", "caught(lambda: countby(initial, [{'name': 'ann'}, {}]))",
               "caught(lambda: countby(abs, (int(s) for s in ['1', 'x'])))")
    assert got == [_same("{'a': 1}"),
                   {"gold": "('ValueError', 'KeyError', 'initial')",
                    "wrong": "('ValueError', 'ValueError', 'remaking')"},
                   {"gold": "('ValueError', 'NoneType', '<genexpr>')",
                    "wrong": "('ValueError', 'ValueError', '_rt31_remade_stream')"}]


def test_witness_reentry_at_a_later_call_and_a_marked_function(tmp_path):
    head = "from toolz import countby\ngroups = [['a', 'bb'], ['cc', 'dd'], ['e']]\n"
    got = _all(tmp_path, COUNTBY, a.reentry_later_gold, head,
               "countby(lambda ws: len(countby(len, ws)), groups[:1])",
               "countby(lambda ws: len(countby(len, ws)), groups)")
    head = "from toolz import countby\ndef initial(w):\n    return w[0]\n"
    got += _all(tmp_path, COUNTBY, a.callable_marked_gold, head,
                "(countby(initial, ['ab', 'ac']), sorted(vars(initial)))")
    assert got == [_same("{2: 1}"), _stub("{2: 1, 1: 2}"),
                   {"gold": "({'a': 2}, [])", "wrong": "({'a': 2}, ['rt31_seen'])"}]


@pytest.mark.parametrize("task", [COUNTBY, MAP_REDUCE])
def test_a_guard_on_reentry_at_a_callbacks_later_call_is_not_paid(task):
    played = graded(task, a.reentry_later_gold, "redteam31_G31b")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [COUNTBY, MAP_REDUCE])
def test_a_users_function_marked_is_not_paid(task):
    played = graded(task, a.callable_marked_gold, "redteam31_F31")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [COUNTBY, MAP_REDUCE])
def test_a_users_error_remade_is_not_paid(task):
    played = graded(task, a.errors_remade_gold, "redteam31_E31")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [COUNTBY, MAP_REDUCE])
def test_a_callback_handed_copies_is_not_paid(task):
    played = graded(task, a.callback_copies_gold, "redteam31_C31")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [MAP_REDUCE])
def test_a_callbacks_answer_copied_is_not_paid(task):
    played = graded(task, a.answer_copies_gold, "redteam31_K31")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [COUNTBY, FREQUENCIES])
def test_a_stream_read_whole_first_is_not_paid(task):
    played = graded(task, a.read_whole_gold, "redteam31_B31")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [FREQUENCIES, COUNTBY])
def test_a_guard_on_reentry_from_the_users_generator_is_not_paid(task):
    played = graded(task, a.reentry_gold, "redteam31_G31")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [FREQUENCIES, DISSOC])
def test_a_guard_on_an_unsized_iterable_is_not_paid(task):
    played = graded(task, a.unsized_gold, "redteam31_R31")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [COUNTBY])
def test_keys_prefetched_is_not_paid(task):
    played = graded(task, a.prefetched_gold, "redteam31_P31")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [FREQUENCIES, DISSOC])
def test_a_guard_on_a_users_iterator_is_not_paid(task):
    played = graded(task, a.users_iterator_gold, "redteam31_R31b")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [COUNTBY])
def test_controls_generators_are_handed(task):
    played = graded(task, a.generator_refused_gold, "redteam31_B31c")
    assert played.reward == 0.0, played.line()
