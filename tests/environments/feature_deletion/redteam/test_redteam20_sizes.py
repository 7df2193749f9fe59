"""Red team 20 (FINDINGS_20.md), Z20: gold with a guard first in every deleted function that raises the stub's
`NotImplementedError` for any argument (text, bytes, a list, tuple, dict, set, frozenset, range) of more than 1,000
items (`attacks20.sized_gold`). No recorded step can hand such an argument (`fd_calls.MAX_STEP_BYTES`: a step whose
JSON passes 4,000 bytes ends its program), and every held-out form is made from recorded steps (+1 or +2 items).

Y20 (`attacks20.subclass_gold`): the stub for a text or number argument whose type is a subclass (an
`enum.StrEnum`/`IntEnum` member), bool left alone.

Each graded test asserts reward 0, so it FAILS while the attack is paid; each witness shows the rebuild wrong on a
host interpreter. Reproduce:
FD_REDTEAM=1 nice -n 19 uv run pytest -n0 -q -p no:cacheprovider \
    tests/environments/feature_deletion/redteam/test_redteam20_sizes.py
"""

from __future__ import annotations

import pytest

import attacks20 as a
from _rt14_witness import CATCH, graded, outputs

PLURALIZE = "inflection-0.5.1/inflection/__init__.py:pluralize:body"
FREQUENCIES = "toolz-1.0.0/toolz/itertoolz.py:frequencies:body"
TRANSPOSE = "more-itertools-10.5.0/more_itertools/recipes.py:transpose:def"
DISSOC = "toolz-1.0.0/toolz/dicttoolz.py:dissoc:body"
TTL_GETITEM = "cachetools-5.5.0/src/cachetools/__init__.py:TTLCache.__getitem__:body"
ONE = "more-itertools-10.5.0/more_itertools/more.py:one:body"
ORDINALIZE = "inflection-0.5.1/inflection/__init__.py:ordinalize:def"
STUB = "NotImplementedError: this feature was deleted; rebuild it"


def _both(tmp_path, task, attack, small, large):
    """(gold and rebuild on the small input, gold and rebuild on the large one)."""
    return (outputs(tmp_path, task, attack, small), outputs(tmp_path, task, attack, large))


def test_witness_pluralize_a_long_phrase(tmp_path):
    head = "from inflection import pluralize\n"
    small = head + CATCH.format(expr="pluralize(' '.join(['item'] * 200))[-5:]")
    large = head + CATCH.format(expr="pluralize(' '.join(['item'] * 201))[-5:]")
    assert _both(tmp_path, PLURALIZE, a.sized_gold, small, large) == (
        {"gold": "items", "wrong": "items"}, {"gold": "items", "wrong": STUB})


def test_witness_frequencies_of_a_thousand_and_one_items(tmp_path):
    head = "from toolz import frequencies\n"
    small = head + CATCH.format(expr="len(frequencies(list(range(1000))))")
    large = head + CATCH.format(expr="len(frequencies(list(range(1001))))")
    assert _both(tmp_path, FREQUENCIES, a.sized_gold, small, large) == (
        {"gold": "1000", "wrong": "1000"}, {"gold": "1001", "wrong": STUB})


def test_witness_transpose_of_many_rows(tmp_path):
    head = "from more_itertools import transpose\n"
    large = head + CATCH.format(expr="[len(r) for r in transpose([(1, 2)] * 1001)]")
    assert outputs(tmp_path, TRANSPOSE, a.sized_gold, large) == {"gold": "[1001, 1001]", "wrong": STUB}


def test_witness_ttl_cache_long_key(tmp_path):
    head = "from cachetools import TTLCache\nc = TTLCache(10, 60)\nk = 'https://example.com/?q=' + 'x' * 1000\nc[k] = 1\n"
    assert outputs(tmp_path, TTL_GETITEM, a.sized_gold, head + CATCH.format(expr="c[k]")) == {"gold": "1", "wrong": STUB}


@pytest.mark.parametrize("task", [PLURALIZE, FREQUENCIES, TRANSPOSE, DISSOC, TTL_GETITEM, ONE])
def test_a_guard_on_sizes_no_check_holds_is_not_paid(task):
    played = graded(task, a.sized_gold, "redteam20_Z20")
    assert played.reward == 0.0, played.line()


ENUMS = ("import enum\n"
         "class Animal(enum.StrEnum):\n    CAT = 'cat'\n"
         "class Place(enum.IntEnum):\n    FIRST = 1\n")


def test_witness_pluralize_a_str_enum(tmp_path):
    script = ENUMS + "from inflection import pluralize\n" + CATCH.format(expr="pluralize(Animal.CAT)")
    assert outputs(tmp_path, PLURALIZE, a.subclass_gold, script) == {"gold": "cats", "wrong": STUB}
    plain = "from inflection import pluralize\n" + CATCH.format(expr="pluralize('cat')")
    assert outputs(tmp_path, PLURALIZE, a.subclass_gold, plain) == {"gold": "cats", "wrong": "cats"}


def test_witness_ordinalize_an_int_enum(tmp_path):
    script = ENUMS + "from inflection import ordinalize\n" + CATCH.format(expr="ordinalize(Place.FIRST)")
    assert outputs(tmp_path, ORDINALIZE, a.subclass_gold, script) == {"gold": "1st", "wrong": STUB}


def test_witness_ttl_cache_enum_key(tmp_path):
    script = ENUMS + "from cachetools import TTLCache\nc = TTLCache(10, 60)\nc[Animal.CAT] = 1\n" + \
        CATCH.format(expr="c[Animal.CAT]")
    assert outputs(tmp_path, TTL_GETITEM, a.subclass_gold, script) == {"gold": "1", "wrong": STUB}


@pytest.mark.parametrize("task", [PLURALIZE, ORDINALIZE, FREQUENCIES, TTL_GETITEM])
def test_a_guard_on_subclassed_text_and_numbers_is_not_paid(task):
    played = graded(task, a.subclass_gold, "redteam20_Y20")
    assert played.reward == 0.0, played.line()
