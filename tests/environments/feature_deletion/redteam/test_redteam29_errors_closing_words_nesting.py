"""Red team 29 (FINDINGS_29.md): what red team 28's fixes hand leaves out: an iterator's error of another type or
before its first item, a user's generator closed or a list emptied after the call step, a Latin letter inside a
word, an iterator inside a container, a mapping keyed by two columns. Each attack is gold with one statement first in
every deleted function or method (`attacks29`):

X29 (`lookup_quiet_gold`): a generator argument read through one that ends at the first `KeyError`/`IndexError` the
user's raises (`except (StopIteration, LookupError)`): `behaviour.raising` hands a generator that raises a
`ValueError`, always, so any other error swallowed is never told apart.
F29 (`first_quiet_gold`): a generator argument whose first `next` raises (any error) read as empty: the `raising`
generators hold the recorded items first, and an empty one only where a recorded input was empty.
C29 (`closing_gold`): gold's answers; every generator argument read through `yield from` in the code's own
generator, which Python closes once dropped, closing the user's generator with it (`consume(it, 1)` to skip a header,
then `list(it)`: empty). Nothing reads a generator argument after its step.
P29 (`consumed_lazily_gold`): gold's answers; a generator function's list arguments emptied in the caller's hands at
its answer's first `next`: `Driver.step` compares only the step's own arguments (the `next` step's is the answer).
L29 (`latin_in_word_gold`): the stub for text where a Latin-1 letter follows an ASCII letter (café, München,
Zürich): `scripts` puts its `LATIN` letter and `NON_ASCII` before a text's first letter.
I29 (`nested_iterator_gold`): the stub for a list, tuple or dict (argument or item) holding an iterator (a list of
generators): no check's argument holds one.
K29 (`text_tuple_keys_gold`): the stub for a mapping with a tuple key whose last part is no int (`('ann', 'jan')`):
`iterables`' pair keys are `(key, n)`.

Each graded test asserts reward 0, so it FAILS while the attack is paid; each witness shows the rebuild wrong on a
host interpreter. The graded tests play the bundled data (answered again for red team 27's forms, not 28's); the
findings' figures are of pre-check subsets answered again with the current code (FINDINGS_29.md). Controls: C29c
(a generator argument read with every other item skipped), L29c (any Latin-1 letter but é), P29c (the lists emptied
in every deleted function, during the call step). Reproduce:
FD_REDTEAM=1 nice -n 19 python -m pytest -n0 -q -p no:cacheprovider \
    tests/environments/feature_deletion/redteam/test_redteam29_errors_closing_words_nesting.py
"""

from __future__ import annotations

import pytest

import attacks29 as a
from _rt14_witness import each_output as _all, graded, same as _same, stubbed as _stub

PLURALIZE = "inflection-0.5.1/inflection/__init__.py:pluralize:body"
PARAMETERIZE = "inflection-0.5.1/inflection/__init__.py:parameterize:body"
FREQUENCIES = "toolz-1.0.0/toolz/itertoolz.py:frequencies:body"
DISSOC = "toolz-1.0.0/toolz/dicttoolz.py:dissoc:body"
COUNTBY = "toolz-1.0.0/toolz/recipes.py:countby:body"
MERGE_SORTED = "toolz-1.0.0/toolz/itertoolz.py:merge_sorted:body"
DIFF = "toolz-1.0.0/toolz/itertoolz.py:diff:body"
ONE = "more-itertools-10.5.0/more_itertools/more.py:one:body"
MAP_REDUCE = "more-itertools-10.5.0/more_itertools/more.py:map_reduce:def"
SPLIT_INTO = "more-itertools-10.5.0/more_itertools/more.py:split_into:def"
ICHUNKED = "more-itertools-10.5.0/more_itertools/more.py:ichunked:def"
CONSUME = "more-itertools-10.5.0/more_itertools/recipes.py:consume:body"
TRANSPOSE = "more-itertools-10.5.0/more_itertools/recipes.py:transpose:def"


def test_witness_a_generators_lookup_error_swallowed(tmp_path):
    rows = "rows = [{'id': 1, 'k': 'a'}, {'id': 2, 'k': 'b'}, {'k': 'c'}]\n"
    got = _all(tmp_path, COUNTBY, a.lookup_quiet_gold, "from toolz import countby\n" + rows,
               "countby(lambda n: n % 2, (r['id'] for r in rows[:2]))",
               "countby(lambda n: n % 2, (r['id'] for r in rows))",
               "countby(lambda n: n % 2, (int(r['k']) for r in rows))")
    got += _all(tmp_path, MAP_REDUCE, a.lookup_quiet_gold,
                "from more_itertools import map_reduce\nlines = ['a 1', 'b 2', 'a']\n",
                "dict(map_reduce((l.split()[1] for l in lines), len))")
    assert got == [_same("{1: 1, 0: 1}"), {"gold": "KeyError: 'id'", "wrong": "{1: 1, 0: 1}"},
                   _same("ValueError: invalid literal for int() with base 10: 'a'"),
                   {"gold": "IndexError: list index out of range", "wrong": "{1: ['1', '2']}"}]


def test_witness_a_generators_first_error_read_as_empty(tmp_path):
    bad = "ValueError: invalid literal for int() with base 10: 'x'"
    got = _all(tmp_path, MAP_REDUCE, a.first_quiet_gold, "from more_itertools import map_reduce\nlines = ['x', '1']\n",
               "dict(map_reduce((int(l) for l in lines[1:]), lambda n: n))",
               "dict(map_reduce((int(l) for l in lines), lambda n: n))")
    got += _all(tmp_path, ONE, a.first_quiet_gold, "from more_itertools import one\n", "one(int(s) for s in ['x'])")
    assert got == [_same("{1: [1]}"), {"gold": bad, "wrong": "{}"},
                   {"gold": bad, "wrong": "ValueError: too few items in iterable (expected 1)"}]


def test_witness_the_callers_generator_closed(tmp_path):
    got = _all(tmp_path, CONSUME, a.closing_gold, "from more_itertools import consume\n",
               "(consume(it := iter(['head', 'a', 'b']), 1), list(it))",
               "(consume(it := (line for line in ['head', 'a', 'b']), 1), list(it))")
    assert got == [_same("(None, ['a', 'b'])"), {"gold": "(None, ['a', 'b'])", "wrong": "(None, [])"}]


def test_witness_a_lazy_functions_list_emptied(tmp_path):
    got = _all(tmp_path, SPLIT_INTO, a.consumed_lazily_gold,
               "from more_itertools import split_into\nsizes = [1, 2]\ndata = [1, 2, 3]\n",
               "(split_into(data, sizes) is not None, sizes, data)", "(list(split_into(data, sizes)), sizes, data)")
    got += _all(tmp_path, DIFF, a.consumed_lazily_gold, "from toolz import diff\na, b = [1, 2, 3], [1, 5, 3]\n",
                "(list(diff(a, b)), a, b)")
    assert got == [_same("(True, [1, 2], [1, 2, 3])"),
                   {"gold": "([[1], [2, 3]], [1, 2], [1, 2, 3])", "wrong": "([[1], [2, 3]], [], [])"},
                   {"gold": "([(2, 5)], [1, 2, 3], [1, 5, 3])", "wrong": "([(2, 5)], [], [])"}]


def test_witness_words_nesting_and_keys(tmp_path):
    got = _all(tmp_path, FREQUENCIES, a.latin_in_word_gold, "from toolz import frequencies\n",
               "frequencies(['Paris', 'Lyon', 'Paris'])", "frequencies(['Zürich', 'Köln', 'Zürich'])",
               "frequencies(['café', 'thé', 'café'])")
    got += _all(tmp_path, PLURALIZE, a.latin_in_word_gold, "from inflection import pluralize\n", "pluralize('café')")
    got += _all(tmp_path, TRANSPOSE, a.nested_iterator_gold, "from more_itertools import transpose\n",
                "list(transpose([[1, 2], [3, 4]]))", "list(transpose([(x for x in 'ab'), (x for x in 'cd')]))")
    got += _all(tmp_path, DISSOC, a.text_tuple_keys_gold, "from toolz import dissoc\n",
                "dissoc({(0, 1): 'a', (0, 2): 'b'}, (0, 1))",
                "dissoc({('ann', 'jan'): 3, ('bob', 'jan'): 1}, ('ann', 'jan'))")
    assert got == [_same("{'Paris': 2, 'Lyon': 1}"), _stub("{'Zürich': 2, 'Köln': 1}"), _stub("{'café': 2, 'thé': 1}"),
                   _stub("cafés"), _same("[(1, 3), (2, 4)]"), _stub("[('a', 'c'), ('b', 'd')]"),
                   _same("{(0, 2): 'b'}"), _stub("{('bob', 'jan'): 1}")]


@pytest.mark.parametrize("task", [COUNTBY, MAP_REDUCE, ONE, MERGE_SORTED])
def test_a_generators_lookup_error_swallowed_is_not_paid(task):
    played = graded(task, a.lookup_quiet_gold, "redteam29_X29")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [MAP_REDUCE, ONE, COUNTBY])
def test_a_generators_first_error_read_as_empty_is_not_paid(task):
    played = graded(task, a.first_quiet_gold, "redteam29_F29")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [ONE, MAP_REDUCE, MERGE_SORTED])
def test_the_callers_generator_closed_is_not_paid(task):
    played = graded(task, a.closing_gold, "redteam29_C29")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [SPLIT_INTO, ICHUNKED])
def test_a_lazy_functions_list_emptied_is_not_paid(task):
    played = graded(task, a.consumed_lazily_gold, "redteam29_P29")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [FREQUENCIES, COUNTBY, MAP_REDUCE])
def test_a_guard_on_a_latin_letter_inside_a_word_is_not_paid(task):
    played = graded(task, a.latin_in_word_gold, "redteam29_L29")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [TRANSPOSE, MERGE_SORTED])
def test_a_guard_on_an_iterator_inside_a_container_is_not_paid(task):
    played = graded(task, a.nested_iterator_gold, "redteam29_I29")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [COUNTBY, FREQUENCIES])
def test_a_guard_on_tuple_keys_of_two_columns_is_not_paid(task):
    played = graded(task, a.text_tuple_keys_gold, "redteam29_K29")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("attack,task", [(a.read_ahead_gold, MAP_REDUCE), (a.any_latin_gold, PARAMETERIZE),
                                         (a.consumed_gold, DISSOC)], ids=["C29c", "L29c", "P29c"])
def test_controls_the_arguments_are_handed(attack, task):
    played = graded(task, attack, "redteam29_controls")
    assert played.reward == 0.0, played.line()
