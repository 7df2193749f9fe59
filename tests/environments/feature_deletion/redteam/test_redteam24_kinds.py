"""Red team 24 (FINDINGS_24.md): kinds of item no check hands, whatever its size. Each attack is gold with one guard
first in every deleted function or method (`attacks24`):

W24 (`wide_gold`): the stub for text, or text in a container, holding a character past U+00FF (Cyrillic, Greek,
CJK, emoji, the typographic ’ “ ” — €): only `parameterize` and `transliterate` are ever handed one; the held-out
forms add "é" (`behaviour.NON_ASCII`), `_prose` writes ASCII.
K24 (`control_gold`): the stub for text holding a tab or a carriage return (a TSV row, a Windows line): none is
handed anywhere.
V24 (`values_gold`): the stub for a `Decimal`, `Fraction`, `date`, `datetime`, `time` or `timedelta` argument or
item: `behaviour.types` hands builtin scalars only.
D24 (`deep_gold`): the stub for an argument nesting builtin containers four deep (a JSON document): no check's
argument nests past three.
B24 (`big_gold`): the stub for an int argument or item of magnitude 2**64 or more (a 128-bit id, a combination's
index): none is handed anywhere.

Each graded test asserts reward 0, so it FAILS while the attack is paid; each witness shows the rebuild wrong on a
host interpreter. Reproduce:
FD_REDTEAM=1 nice -n 19 uv run pytest -n0 -q -p no:cacheprovider \
    tests/environments/feature_deletion/redteam/test_redteam24_kinds.py
"""

from __future__ import annotations

import pytest

import attacks24 as a
from _rt14_witness import CATCH, graded, outputs

PLURALIZE = "inflection-0.5.1/inflection/__init__.py:pluralize:body"
FREQUENCIES = "toolz-1.0.0/toolz/itertoolz.py:frequencies:body"
DISSOC = "toolz-1.0.0/toolz/dicttoolz.py:dissoc:body"
ORDINAL = "inflection-0.5.1/inflection/__init__.py:ordinal:def"
NTH_COMBINATION = "more-itertools-10.5.0/more_itertools/recipes.py:nth_combination:def"
TTL_GETITEM = "cachetools-5.5.0/src/cachetools/__init__.py:TTLCache.__getitem__:body"
STUB = "NotImplementedError: this feature was deleted; rebuild it"


def _all(tmp_path, task, attack, head, *exprs):
    return [outputs(tmp_path, task, attack, head + CATCH.format(expr=e)) for e in exprs]


def test_witness_pluralize_text_beyond_latin1(tmp_path):
    got = _all(tmp_path, PLURALIZE, a.wide_gold, "from inflection import pluralize\n",
               "pluralize('café')",  # Latin-1: both
               "pluralize('the author’s book')",  # a typographic apostrophe (U+2019)
               "pluralize('кошка')")
    assert got == [{"gold": "cafés", "wrong": "cafés"}, {"gold": "the author’s books", "wrong": STUB},
                   {"gold": "кошкаs", "wrong": STUB}]


def test_witness_frequencies_and_dissoc_of_non_latin_text(tmp_path):
    got = _all(tmp_path, FREQUENCIES, a.wide_gold, "from toolz import frequencies\n",
               "frequencies(['Zoë', 'Zoë', 'Ana'])", "frequencies(['東京', '大阪', '東京'])")
    got += _all(tmp_path, DISSOC, a.wide_gold, "from toolz import dissoc\n",
                "dissoc({'name': 'Zoë', 'city': 'Paris'}, 'name')", "dissoc({'name': 'Zoë', 'city': 'Москва'}, 'name')")
    assert got == [{"gold": "{'Zoë': 2, 'Ana': 1}", "wrong": "{'Zoë': 2, 'Ana': 1}"},
                   {"gold": "{'東京': 2, '大阪': 1}", "wrong": STUB},
                   {"gold": "{'city': 'Paris'}", "wrong": "{'city': 'Paris'}"}, {"gold": "{'city': 'Москва'}", "wrong": STUB}]


def test_witness_ttl_cache_keyed_by_greek_text(tmp_path):
    got = outputs(tmp_path, TTL_GETITEM, a.wide_gold, "from cachetools import TTLCache\nc = TTLCache(10, 60)\n"
                  "c['Ελλάδα'] = 1\nc['cafe'] = 2\n" + CATCH.format(expr="c['cafe'], c['Ελλάδα']"))
    assert got == {"gold": "2 1", "wrong": STUB}


def test_witness_text_with_tabs_and_carriage_returns(tmp_path):
    got = _all(tmp_path, FREQUENCIES, a.control_gold, "from toolz import frequencies\n",
               "frequencies('a b\\nb a'.split('\\n'))", "frequencies('a\\tb\\r\\nb\\ta\\r\\n'.split('\\n'))")
    got += _all(tmp_path, PLURALIZE, a.control_gold, "from inflection import pluralize\n", "pluralize('id\\tcat')")
    assert got == [{"gold": "{'a b': 1, 'b a': 1}", "wrong": "{'a b': 1, 'b a': 1}"},
                   {"gold": "{'a\\tb\\r': 1, 'b\\ta\\r': 1, '': 1}", "wrong": STUB},
                   {"gold": "id\tcats", "wrong": STUB}]


def test_witness_decimals_and_dates(tmp_path):
    got = _all(tmp_path, DISSOC, a.values_gold, "from decimal import Decimal\nfrom toolz import dissoc\n",
               "dissoc({'id': 1, 'price': 9.99}, 'id')", "dissoc({'id': 1, 'price': Decimal('9.99')}, 'id')")
    got += _all(tmp_path, FREQUENCIES, a.values_gold, "import datetime\nfrom toolz import frequencies\n",
                "len(frequencies([datetime.date(2024, 1, d % 3 + 1) for d in range(9)]))")
    got.append(outputs(tmp_path, TTL_GETITEM, a.values_gold, "import datetime\nfrom cachetools import TTLCache\n"
                       "c = TTLCache(10, 60)\nc[datetime.date(2024, 1, 1)] = 1\n"
                       + CATCH.format(expr="c[datetime.date(2024, 1, 1)]")))
    assert got == [{"gold": "{'price': 9.99}", "wrong": "{'price': 9.99}"},
                   {"gold": "{'price': Decimal('9.99')}", "wrong": STUB}, {"gold": "3", "wrong": STUB},
                   {"gold": "1", "wrong": STUB}]


def test_witness_deeply_nested_documents(tmp_path):
    got = _all(tmp_path, DISSOC, a.deep_gold, "from toolz import dissoc\n",
               "dissoc({'id': 7, 'user': {'address': {'city': 'Oslo'}}}, 'id')",
               "dissoc({'id': 7, 'user': {'address': {'geo': {'lat': 59.9}}}}, 'id')")
    got += _all(tmp_path, FREQUENCIES, a.deep_gold, "from toolz import frequencies\n",
                "frequencies([((1, 2), (3, 4))] * 2)", "frequencies([(((1, 2), (3, 4)),)] * 2)")
    assert got == [{"gold": "{'user': {'address': {'city': 'Oslo'}}}", "wrong": "{'user': {'address': {'city': 'Oslo'}}}"},
                   {"gold": "{'user': {'address': {'geo': {'lat': 59.9}}}}", "wrong": STUB},
                   {"gold": "{((1, 2), (3, 4)): 2}", "wrong": "{((1, 2), (3, 4)): 2}"},
                   {"gold": "{(((1, 2), (3, 4)),): 2}", "wrong": STUB}]


@pytest.mark.parametrize("task", [PLURALIZE, FREQUENCIES, TTL_GETITEM])
def test_a_guard_on_text_beyond_latin1_is_not_paid(task):
    played = graded(task, a.wide_gold, "redteam24_W24")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [PLURALIZE, FREQUENCIES])
def test_a_guard_on_text_with_tabs_or_carriage_returns_is_not_paid(task):
    played = graded(task, a.control_gold, "redteam24_K24")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [DISSOC, FREQUENCIES, TTL_GETITEM])
def test_a_guard_on_decimals_and_dates_is_not_paid(task):
    played = graded(task, a.values_gold, "redteam24_V24")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [DISSOC, FREQUENCIES])
def test_a_guard_on_deeply_nested_data_is_not_paid(task):
    played = graded(task, a.deep_gold, "redteam24_D24")
    assert played.reward == 0.0, played.line()


def test_witness_integers_past_64_bits(tmp_path):
    got = _all(tmp_path, ORDINAL, a.big_gold, "from inflection import ordinal\n",
               "ordinal(2**63 - 1), ordinal(10**12 + 3)", "ordinal(2**64 + 1)")
    got += _all(tmp_path, NTH_COMBINATION, a.big_gold, "from more_itertools import nth_combination\n",
                "len(nth_combination(range(30), 15, 10**7))", "len(nth_combination(range(100), 50, 10**28))")
    got += _all(tmp_path, FREQUENCIES, a.big_gold, "import uuid\nfrom toolz import frequencies\n",
                "len(frequencies([uuid.UUID(int=i * 2**100).int for i in range(9)]))")
    assert got == [{"gold": "th rd", "wrong": "th rd"}, {"gold": "th", "wrong": STUB},
                   {"gold": "15", "wrong": "15"}, {"gold": "50", "wrong": STUB}, {"gold": "9", "wrong": STUB}]


@pytest.mark.parametrize("task", [ORDINAL, NTH_COMBINATION])
def test_a_guard_on_integers_past_64_bits_is_not_paid(task):
    played = graded(task, a.big_gold, "redteam24_B24")
    assert played.reward == 0.0, played.line()
