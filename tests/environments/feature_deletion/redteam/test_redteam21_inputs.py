"""Red team 21 (FINDINGS_21.md): kinds of input no check hands, after red team 20's fixes (`behaviour.sizes`,
`behaviour.subclasses`). Each attack is gold with a guard first in every deleted function or method:

P21 (`attacks21.long_gold`): the stub for a text, bytes, list or tuple of more than 1,000 items that is not k copies
of a shorter piece. `behaviour.sizes` hands large inputs only as `["times", [input, k]]` (k copies of a recorded
input), so every large input a check hands is a repetition, and every real long input is refused.

D21 (`attacks21.mapping_gold`): the stub for a dict, set or frozenset of more than 1,000 items (`sizes` grows only
sequences).

C21 (`attacks21.container_gold`): the stub for a list, tuple, dict, set, frozenset or bytes whose type is a subclass
(`subclasses` hands subclassed text and numbers only).

S21 (`attacks21.keeps_type_gold`): the stub for a str or int of a subclass whose `+` answers its own type (`Markup`);
the checks' subclasses are enum members and empty-bodied classes.

F21 (`attacks21.full_gold`, scored 0: its graded tests are controls that pass): the stub in a deleted method of an
object holding more than 1,000 entries (`len(self)`), refused on the objects' state (`_TimedCache.__len__` expires).

Each graded test asserts reward 0, so it FAILS while the attack is paid; each witness shows the rebuild wrong on a
host interpreter. Reproduce:
FD_REDTEAM=1 nice -n 19 uv run pytest -n0 -q -p no:cacheprovider \
    tests/environments/feature_deletion/redteam/test_redteam21_inputs.py
"""

from __future__ import annotations

import pytest

import attacks21 as a
from _rt14_witness import CATCH, graded, outputs

PLURALIZE = "inflection-0.5.1/inflection/__init__.py:pluralize:body"
FREQUENCIES = "toolz-1.0.0/toolz/itertoolz.py:frequencies:body"
TRANSPOSE = "more-itertools-10.5.0/more_itertools/recipes.py:transpose:def"
DISSOC = "toolz-1.0.0/toolz/dicttoolz.py:dissoc:body"
TTL_GETITEM = "cachetools-5.5.0/src/cachetools/__init__.py:TTLCache.__getitem__:body"
STUB = "NotImplementedError: this feature was deleted; rebuild it"


def _two(tmp_path, task, attack, head, *exprs):
    return [outputs(tmp_path, task, attack, head + CATCH.format(expr=e)) for e in exprs]


# P21 -----------------------------------------------------------------------------------------------------------

def test_witness_pluralize_a_long_sentence(tmp_path):
    got = _two(tmp_path, PLURALIZE, a.long_gold, "from inflection import pluralize\n",
               "pluralize('the black cat ' * 100)[-6:]",  # 1,400 characters, 100 copies: what `sizes` hands
               "pluralize('the black cat ' * 99 + 'the black dog')[-6:]")  # 1,399 characters, no repetition
    assert got == [{"gold": "cat s", "wrong": "cat s"}, {"gold": "k dogs", "wrong": STUB}]


def test_witness_frequencies_of_distinct_items(tmp_path):
    got = _two(tmp_path, FREQUENCIES, a.long_gold, "from toolz import frequencies\n",
               "len(frequencies(list(range(10)) * 500))",  # 5,000 items, 500 copies of 10
               "len(frequencies(list(range(5000))))")  # 5,000 distinct items
    assert got == [{"gold": "10", "wrong": "10"}, {"gold": "5000", "wrong": STUB}]


def test_witness_transpose_of_distinct_rows(tmp_path):
    got = _two(tmp_path, TRANSPOSE, a.long_gold, "from more_itertools import transpose\n",
               "[sum(r) for r in transpose([(1, 2)] * 1001)]",
               "[sum(r) for r in transpose([(i, 2 * i) for i in range(1001)])]")
    assert got == [{"gold": "[1001, 2002]", "wrong": "[1001, 2002]"}, {"gold": "[500500, 1001000]", "wrong": STUB}]


def test_witness_ttl_cache_long_url_key(tmp_path):
    head = "from cachetools import TTLCache\nc = TTLCache(10, 60)\n"
    got = _two(tmp_path, TTL_GETITEM, a.long_gold, head,
               "(c.__setitem__('ab' * 600, 1), c['ab' * 600])[1]",
               "(c.__setitem__('https://example.com/?q=' + 'x' * 1000, 1), c['https://example.com/?q=' + 'x' * 1000])[1]")
    assert got == [{"gold": "1", "wrong": "1"}, {"gold": "1", "wrong": STUB}]


@pytest.mark.parametrize("task", [PLURALIZE, FREQUENCIES, TRANSPOSE, TTL_GETITEM])
def test_a_guard_on_long_inputs_that_are_no_repetition_is_not_paid(task):
    played = graded(task, a.long_gold, "redteam21_P21")
    assert played.reward == 0.0, played.line()


# D21 -----------------------------------------------------------------------------------------------------------

def test_witness_dissoc_of_a_large_dict(tmp_path):
    got = _two(tmp_path, DISSOC, a.mapping_gold, "from toolz import dissoc\n",
               "len(dissoc({i: i for i in range(1000)}, 0))",
               "len(dissoc({i: i for i in range(1001)}, 0))")
    assert got == [{"gold": "999", "wrong": "999"}, {"gold": "1000", "wrong": STUB}]


def test_witness_frequencies_of_a_large_set(tmp_path):
    got = _two(tmp_path, FREQUENCIES, a.mapping_gold, "from toolz import frequencies\n",
               "len(frequencies(list(range(1001))))", "len(frequencies(set(range(1001))))")
    assert got == [{"gold": "1001", "wrong": "1001"}, {"gold": "1001", "wrong": STUB}]


@pytest.mark.parametrize("task", [DISSOC, FREQUENCIES])
def test_a_guard_on_large_mappings_and_sets_is_not_paid(task):
    played = graded(task, a.mapping_gold, "redteam21_D21")
    assert played.reward == 0.0, played.line()


# C21 -----------------------------------------------------------------------------------------------------------

def test_witness_frequencies_of_a_list_subclass(tmp_path):
    head = "from toolz import frequencies\nclass Row(list):\n    pass\n"
    got = _two(tmp_path, FREQUENCIES, a.container_gold, head,
               "frequencies(['a', 'b', 'a'])", "frequencies(Row(['a', 'b', 'a']))")
    assert got == [{"gold": "{'a': 2, 'b': 1}", "wrong": "{'a': 2, 'b': 1}"}, {"gold": "{'a': 2, 'b': 1}", "wrong": STUB}]


def test_witness_dissoc_of_a_defaultdict(tmp_path):
    head = "import collections\nfrom toolz import dissoc\n"
    got = _two(tmp_path, DISSOC, a.container_gold, head,
               "dict(dissoc({'a': 1, 'b': 2}, 'a'))",
               "dict(dissoc(collections.defaultdict(int, {'a': 1, 'b': 2}), 'a'))")
    assert got == [{"gold": "{'b': 2}", "wrong": "{'b': 2}"}, {"gold": "{'b': 2}", "wrong": STUB}]


@pytest.mark.parametrize("task", [FREQUENCIES, DISSOC])
def test_a_guard_on_subclassed_containers_is_not_paid(task):
    played = graded(task, a.container_gold, "redteam21_C21")
    assert played.reward == 0.0, played.line()


# F21 -----------------------------------------------------------------------------------------------------------

CACHE = "cachetools-5.5.0/src/cachetools/__init__.py:Cache:methods"
NUMERIC_RANGE = "more-itertools-10.5.0/more_itertools/more.py:numeric_range._get_by_index:body"


def test_witness_ttl_cache_of_many_entries(tmp_path):
    got = [outputs(tmp_path, TTL_GETITEM, a.full_gold,
                   "from cachetools import TTLCache\nc = TTLCache(5000, 60)\n"
                   f"for i in range({n}):\n    c[i] = i\n" + CATCH.format(expr="c[7]")) for n in (1000, 1001)]
    assert got == [{"gold": "7", "wrong": "7"}, {"gold": "7", "wrong": STUB}]


def test_witness_cache_of_many_entries(tmp_path):
    got = [outputs(tmp_path, CACHE, a.full_gold,
                   "from cachetools import Cache\nc = Cache(5000)\n"
                   f"for i in range({n}):\n    c[i] = i\n" + CATCH.format(expr="c[7]")) for n in (1000, 1001)]
    assert got == [{"gold": "7", "wrong": "7"}, {"gold": "7", "wrong": STUB}]


def test_witness_numeric_range_of_many_items(tmp_path):
    got = _two(tmp_path, NUMERIC_RANGE, a.full_gold, "from more_itertools import numeric_range\n",
               "numeric_range(0, 1000)[7]", "numeric_range(0, 1001)[7]")
    assert got == [{"gold": "7", "wrong": "7"}, {"gold": "7", "wrong": STUB}]


@pytest.mark.parametrize("task", [TTL_GETITEM, CACHE, NUMERIC_RANGE])
def test_a_guard_on_objects_of_many_entries_is_not_paid(task):
    played = graded(task, a.full_gold, "redteam21_F21")
    assert played.reward == 0.0, played.line()


# S21 -----------------------------------------------------------------------------------------------------------

ORDINALIZE = "inflection-0.5.1/inflection/__init__.py:ordinalize:def"
MARKUP = ("class Markup(str):\n"
          "    def __add__(self, other):\n        return Markup(str.__add__(self, other))\n"
          "class Plain(str):\n    pass\n"
          "class Money(int):\n"
          "    def __add__(self, other):\n        return Money(int.__add__(self, other))\n")


def test_witness_pluralize_a_markup_string(tmp_path):
    got = _two(tmp_path, PLURALIZE, a.keeps_type_gold, MARKUP + "from inflection import pluralize\n",
               "pluralize(Plain('cat'))", "pluralize(Markup('cat'))")
    assert got == [{"gold": "cats", "wrong": "cats"}, {"gold": "cats", "wrong": STUB}]


def test_witness_ordinalize_money(tmp_path):
    got = _two(tmp_path, ORDINALIZE, a.keeps_type_gold, MARKUP + "from inflection import ordinalize\n",
               "ordinalize(2)", "ordinalize(Money(2))")
    assert got == [{"gold": "2nd", "wrong": "2nd"}, {"gold": "2nd", "wrong": STUB}]


@pytest.mark.parametrize("task", [PLURALIZE, ORDINALIZE])
def test_a_guard_on_subclasses_that_keep_their_type_is_not_paid(task):
    played = graded(task, a.keeps_type_gold, "redteam21_S21")
    assert played.reward == 0.0, played.line()
