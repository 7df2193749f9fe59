"""Red team 26 (FINDINGS_26.md): objects, times and text no check hands. Each attack is gold with one guard first
in every deleted function or method (`attacks26`):

R26 (`objects_gold`): the stub for an argument (or an item of one) that is an object of a user's own class: a
dataclass record, an `object()` sentinel, a plain `Enum` member, a `uuid.UUID`, a `pathlib.Path`. The recorder
cannot encode one (the step is dropped) and no held-out form makes one. R26b (`objects_b_gold`, the graded tests):
the same without the bare `object()`, which cachetools' `Cache.pop` hands itself as its default.
Z26 (`aware_gold`): the stub for a timezone-aware `datetime` (or `time`): `behaviour.numbers` hands naive ones only.
P26 (`symbols_gold`): the stub for text holding "%", "$", "=", "{", "<" or a backslash (a URL's query, HTML, a
template, a price, a Windows path): no text of any check holds one.

Each graded test asserts reward 0, so it FAILS while the attack is paid; each witness shows the rebuild wrong on a
host interpreter. Reproduce:
FD_REDTEAM=1 nice -n 19 uv run pytest -n0 -q -p no:cacheprovider \
    tests/environments/feature_deletion/redteam/test_redteam26_objects_times_symbols.py
"""

from __future__ import annotations

import pytest

import attacks26 as a
from _rt14_witness import CATCH, graded, outputs

PLURALIZE = "inflection-0.5.1/inflection/__init__.py:pluralize:body"
FREQUENCIES = "toolz-1.0.0/toolz/itertoolz.py:frequencies:body"
DISSOC = "toolz-1.0.0/toolz/dicttoolz.py:dissoc:body"
ONE = "more-itertools-10.5.0/more_itertools/more.py:one:body"
CACHE_METHODS = "cachetools-5.5.0/src/cachetools/__init__.py:Cache:methods"
TTL_GETITEM = "cachetools-5.5.0/src/cachetools/__init__.py:TTLCache.__getitem__:body"
STUB = "NotImplementedError: this feature was deleted; rebuild it"

RECORDS = ("import dataclasses, enum, uuid, pathlib\n"
           "@dataclasses.dataclass(frozen=True)\nclass Point:\n    x: int\n    y: int\n"
           "@dataclasses.dataclass\nclass User:\n    name: str\n"
           "class Color(enum.Enum):\n    RED = 1\n    BLUE = 2\n")


def _all(tmp_path, task, attack, head, *exprs):
    return [outputs(tmp_path, task, attack, head + CATCH.format(expr=e)) for e in exprs]


def test_witness_frequencies_and_dissoc_of_a_users_objects(tmp_path):
    got = _all(tmp_path, FREQUENCIES, a.objects_gold, RECORDS + "from toolz import frequencies\n",
               "frequencies([(1, 2), (1, 2), (3, 4)])",  # tuples: both
               "frequencies([Point(1, 2), Point(1, 2), Point(3, 4)])",
               "frequencies([Color.RED, Color.BLUE, Color.RED])",
               "frequencies([uuid.UUID(int=7), uuid.UUID(int=7)])",
               "frequencies([pathlib.PurePosixPath('a.txt'), pathlib.PurePosixPath('a.txt')])")
    got += _all(tmp_path, DISSOC, a.objects_gold, RECORDS + "from toolz import dissoc\n",
                "dissoc({'id': 7, 'owner': 'ann'}, 'id')",  # text: both
                "dissoc({'id': 7, 'owner': User('ann')}, 'id')")
    assert got == [{"gold": "{(1, 2): 2, (3, 4): 1}", "wrong": "{(1, 2): 2, (3, 4): 1}"},
                   {"gold": "{Point(x=1, y=2): 2, Point(x=3, y=4): 1}", "wrong": STUB},
                   {"gold": "{<Color.RED: 1>: 2, <Color.BLUE: 2>: 1}", "wrong": STUB},
                   {"gold": "{UUID('00000000-0000-0000-0000-000000000007'): 2}", "wrong": STUB},
                   {"gold": "{PurePosixPath('a.txt'): 2}", "wrong": STUB},
                   {"gold": "{'owner': 'ann'}", "wrong": "{'owner': 'ann'}"},
                   {"gold": "{'owner': User(name='ann')}", "wrong": STUB}]


def test_witness_one_sentinel_and_a_cache_of_records(tmp_path):
    got = _all(tmp_path, ONE, a.objects_gold, RECORDS + "from more_itertools import one\nMISSING = object()\n",
               "one(['x'])",  # text: both
               "one([User('ann')])", "one([MISSING]) is MISSING")
    got += _all(tmp_path, CACHE_METHODS, a.objects_gold, RECORDS + "from cachetools import Cache\nc = Cache(10)\n",
                "(c.__setitem__('ann', 'ann'), c['ann'])[1]",  # text: both
                "(c.__setitem__('ann', User('ann')), c['ann'])[1]",
                "(c.__setitem__(uuid.UUID(int=7), 1), c[uuid.UUID(int=7)])[1]")
    assert got == [{"gold": "x", "wrong": "x"}, {"gold": "User(name='ann')", "wrong": STUB},
                   {"gold": "True", "wrong": STUB},
                   {"gold": "ann", "wrong": "ann"}, {"gold": "User(name='ann')", "wrong": STUB},
                   {"gold": "1", "wrong": STUB}]


def test_witness_timezone_aware_datetimes(tmp_path):
    head = "from datetime import datetime, timezone, timedelta\nutc, cet = timezone.utc, timezone(timedelta(hours=1))\n"
    got = _all(tmp_path, FREQUENCIES, a.aware_gold, head + "from toolz import frequencies\n",
               "frequencies([datetime(2024, 5, 1, 12)] * 2)",  # naive: both
               "frequencies([datetime(2024, 5, 1, 12, tzinfo=utc)] * 2)")
    got += _all(tmp_path, DISSOC, a.aware_gold, head + "from toolz import dissoc\n",
                "dissoc({'id': 1, 'created': datetime(2024, 5, 1, 12, tzinfo=cet)}, 'id')")
    got += _all(tmp_path, TTL_GETITEM, a.aware_gold,
                head + "from cachetools import TTLCache\nc = TTLCache(10, 60)\nday = datetime(2024, 5, 1, tzinfo=utc)\n"
                "c[day] = 1\nc[day.replace(tzinfo=None)] = 2\n",
                "c[day.replace(tzinfo=None)]", "c[day]")
    assert got == [{"gold": "{datetime.datetime(2024, 5, 1, 12, 0): 2}",
                    "wrong": "{datetime.datetime(2024, 5, 1, 12, 0): 2}"},
                   {"gold": "{datetime.datetime(2024, 5, 1, 12, 0, tzinfo=datetime.timezone.utc): 2}", "wrong": STUB},
                   {"gold": "{'created': datetime.datetime(2024, 5, 1, 12, 0, "
                            "tzinfo=datetime.timezone(datetime.timedelta(seconds=3600)))}", "wrong": STUB},
                   {"gold": "2", "wrong": "2"}, {"gold": "1", "wrong": STUB}]


def test_witness_text_with_url_markup_money_and_path_symbols(tmp_path):
    got = _all(tmp_path, PLURALIZE, a.symbols_gold, "from inflection import pluralize\n",
               "pluralize('discount code')",  # plain: both
               "pluralize('50% discount code')", "pluralize('$5 coupon')", "pluralize('<b>cat')",
               "pluralize('{name} user')")
    got += _all(tmp_path, FREQUENCIES, a.symbols_gold, "from toolz import frequencies\n",
                "frequencies(['https://x.org/search?q=cat&page=2'] * 2)",
                r"frequencies(['C:\\Users\\ann', 'C:\\Users\\ann'])")
    assert got == [{"gold": "discount codes", "wrong": "discount codes"},
                   {"gold": "50% discount codes", "wrong": STUB}, {"gold": "$5 coupons", "wrong": STUB},
                   {"gold": "<b>cats", "wrong": STUB}, {"gold": "{name} users", "wrong": STUB},
                   {"gold": "{'https://x.org/search?q=cat&page=2': 2}", "wrong": STUB},
                   {"gold": "{'C:\\\\Users\\\\ann': 2}", "wrong": STUB}]


@pytest.mark.parametrize("task", [FREQUENCIES, DISSOC, CACHE_METHODS])
def test_a_guard_on_a_users_objects_is_not_paid(task):
    # R26b: R26 without the bare `object()` (cachetools' `Cache.pop` has its own sentinel as a default)
    played = graded(task, a.objects_b_gold, "redteam26_R26b")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [FREQUENCIES, TTL_GETITEM])
def test_a_guard_on_timezone_aware_datetimes_is_not_paid(task):
    played = graded(task, a.aware_gold, "redteam26_Z26")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [PLURALIZE, FREQUENCIES])
def test_a_guard_on_text_with_url_markup_money_and_path_symbols_is_not_paid(task):
    played = graded(task, a.symbols_gold, "redteam26_P26")
    assert played.reward == 0.0, played.line()
