"""Red team 23 (FINDINGS_23.md): natural inputs that no check hands, after red team 22's fixes (`fd_calls._natural`,
the abstract containers). Each attack is gold with one guard first in every deleted function or method:

L23 (`attacks23.nested_gold`): the stub for a container holding, two levels down, a container past 1,000 items (a
record with a big array, rows that are long lists, a dict of groups). `behaviour.sizes` grows only a top-level
argument; no check nests a grown value (host simulation of all 102,326 arguments of the bundled programs: none).
C23 (`attacks23.odd_gold`): the stub for a sized value past 1,000 items whose type is no plain builtin container (a
big deque, array, bytearray, dict view, MappingProxyType, user subclass): the checks' subclassed and abstract forms
are of recorded (small) values only.
T23 (`attacks23.punct_gold`): the stub for prose past 1,000 characters holding an apostrophe, hyphen, quote,
bracket or digit: `_prose` writes letters, spaces and `.,?!;:` only.
S23 (`attacks23.full_cache_gold`): the stub in a deleted cachetools method of a cache whose `currsize` passes
1,000: the checks grow a method's arguments, never the cache it runs on.
G23 (`attacks23.lazy_gold`): each generator argument rebound to one that raises the stub's error at its 1,001st
item: recorded streams are replayed as generator expressions of their few hundred recorded items, grown streams as
`iter()` of a list.

Each graded test asserts reward 0, so it FAILS while the attack is paid; each witness shows the rebuild wrong on a
host interpreter. Reproduce:
FD_REDTEAM=1 nice -n 19 uv run pytest -n0 -q -p no:cacheprovider \
    tests/environments/feature_deletion/redteam/test_redteam23_shapes.py
"""

from __future__ import annotations

import re

import pytest

import attacks23 as a
from _rt14_witness import CATCH, graded, outputs

PLURALIZE = "inflection-0.5.1/inflection/__init__.py:pluralize:body"
FREQUENCIES = "toolz-1.0.0/toolz/itertoolz.py:frequencies:body"
DISSOC = "toolz-1.0.0/toolz/dicttoolz.py:dissoc:body"
TTL_GETITEM = "cachetools-5.5.0/src/cachetools/__init__.py:TTLCache.__getitem__:body"
LFU_POPITEM = "cachetools-5.5.0/src/cachetools/__init__.py:LFUCache.popitem:body"
STUB = "NotImplementedError: this feature was deleted; rebuild it"


def _prose():
    from test_redteam22_shapes import PROSE
    return PROSE


def _all(tmp_path, task, attack, head, *exprs):
    return [outputs(tmp_path, task, attack, head + CATCH.format(expr=e)) for e in exprs]


def test_witness_dissoc_of_a_record_with_a_big_array(tmp_path):
    got = _all(tmp_path, DISSOC, a.nested_gold, "from toolz import dissoc\n",
               "len(dissoc({'id': 7, 'data': list(range(500))}, 'id')['data'])",
               "len(dissoc({'id': 7, 'data': list(range(5000))}, 'id')['data'])",  # a JSON record, one big array
               "len(dissoc({i: list(range(5000)) for i in range(3)}, 0))")  # a dict of groups
    assert got == [{"gold": "500", "wrong": "500"}, {"gold": "5000", "wrong": STUB}, {"gold": "2", "wrong": STUB}]


def test_witness_frequencies_of_long_rows(tmp_path):
    got = _all(tmp_path, FREQUENCIES, a.nested_gold, "from toolz import frequencies\n",
               "len(frequencies([tuple(range(900))] * 3))",
               "len(frequencies([tuple(range(1500))] * 3))")  # three equal rows of 1,500 cells
    assert got == [{"gold": "1", "wrong": "1"}, {"gold": "1", "wrong": STUB}]


def test_witness_frequencies_of_a_big_deque_and_view(tmp_path):
    got = _all(tmp_path, FREQUENCIES, a.odd_gold,
               "from collections import deque\nimport array\nfrom toolz import frequencies\n",
               "len(frequencies(deque(range(500))))",
               "len(frequencies(list(range(5000))))",
               "len(frequencies(deque(range(5000))))",  # a queue / window
               "len(frequencies({i: i % 7 for i in range(5000)}.values()))",  # a big dict's values
               "len(frequencies(array.array('d', [i / 4 for i in range(5000)])))",  # readings
               "len(frequencies(bytearray(5000)))")  # a buffer
    assert got == [{"gold": "500", "wrong": "500"}, {"gold": "5000", "wrong": "5000"},
                   {"gold": "5000", "wrong": STUB}, {"gold": "7", "wrong": STUB}, {"gold": "5000", "wrong": STUB},
                   {"gold": "1", "wrong": STUB}]


def test_witness_dissoc_of_a_big_mapping_proxy(tmp_path):
    got = _all(tmp_path, DISSOC, a.odd_gold, "from types import MappingProxyType\nfrom toolz import dissoc\n",
               "len(dissoc(MappingProxyType({i: i for i in range(50)}), 0))",
               "len(dissoc({i: i for i in range(2000)}, 0))",
               "len(dissoc(MappingProxyType({i: i for i in range(2000)}), 0))")
    assert got == [{"gold": "49", "wrong": "49"}, {"gold": "1999", "wrong": "1999"}, {"gold": "1999", "wrong": STUB}]


def test_witness_pluralize_prose_with_punctuation(tmp_path):
    prose = _prose()
    plain = re.sub(r"[^A-Za-z ,.;:]", " ", prose)  # the same text without hyphens, brackets and digits
    assert len(prose) > 1000 and len(plain) == len(prose)
    got = _all(tmp_path, PLURALIZE, a.punct_gold, "from inflection import pluralize\n",
               f"pluralize({plain!r})[-6:]", f"pluralize({prose!r})[-6:]",
               f"pluralize({plain + ' I do not know.'!r})[-6:]", f"pluralize({plain + ' I don' + chr(39) + 't know.'!r})[-6:]")
    assert got == [{"gold": "d cats", "wrong": "d cats"}, {"gold": "d cats", "wrong": STUB},
                   {"gold": "know.s", "wrong": "know.s"}, {"gold": "know.s", "wrong": STUB}]


def test_witness_ttl_cache_of_many_sessions(tmp_path):
    loop = "from cachetools import TTLCache\nc = TTLCache(maxsize=10_000, ttl=3600)\nfor i in range({n}): c[i] = i * i\n"
    got = [outputs(tmp_path, TTL_GETITEM, a.full_cache_gold, loop.format(n=n) + CATCH.format(expr=f"c[{n - 1}]"))
           for n in (500, 2000)]
    assert got == [{"gold": "249001", "wrong": "249001"}, {"gold": "3996001", "wrong": STUB}]


def test_witness_lfu_cache_of_a_thousand_and_a_half(tmp_path):
    head = ("from cachetools import LFUCache\n\n\ndef filled(maxsize):\n    c = LFUCache(maxsize=maxsize)\n"
            "    for i in range(2000):\n        c[i] = i  # past maxsize: the least used entry is popped\n"
            "    return len(c)\n")
    got = [outputs(tmp_path, LFU_POPITEM, a.full_cache_gold, head + CATCH.format(expr=f"filled({m})"))
           for m in (800, 1500)]
    assert got == [{"gold": "800", "wrong": "800"}, {"gold": "1500", "wrong": STUB}]


@pytest.mark.parametrize("task", [FREQUENCIES, DISSOC])
def test_a_guard_on_large_nested_containers_is_not_paid(task):
    played = graded(task, a.nested_gold, "redteam23_L23")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [FREQUENCIES, DISSOC])
def test_a_guard_on_large_containers_of_no_plain_type_is_not_paid(task):
    played = graded(task, a.odd_gold, "redteam23_C23")
    assert played.reward == 0.0, played.line()


def test_a_guard_on_prose_with_punctuation_is_not_paid():
    played = graded(PLURALIZE, a.punct_gold, "redteam23_T23")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [TTL_GETITEM, LFU_POPITEM])
def test_a_guard_on_caches_of_many_entries_is_not_paid(task):
    played = graded(task, a.full_cache_gold, "redteam23_S23")
    assert played.reward == 0.0, played.line()


def test_witness_frequencies_of_a_long_generator(tmp_path):
    got = _all(tmp_path, FREQUENCIES, a.lazy_gold, "from toolz import frequencies\n",
               "len(frequencies(i % 7 for i in range(900)))",
               "len(frequencies(iter([i % 7 for i in range(5000)])))",  # a list's iterator, as grown streams are
               "len(frequencies(i % 7 for i in range(5000)))",  # the same items from a generator
               "len(frequencies(w.lower() for w in ('The cat sat on the mat ' * 400).split()))")  # words of a text
    assert got == [{"gold": "7", "wrong": "7"}, {"gold": "7", "wrong": "7"}, {"gold": "7", "wrong": STUB},
                   {"gold": "5", "wrong": STUB}]


def test_a_guard_on_long_generators_is_not_paid():
    played = graded(FREQUENCIES, a.lazy_gold, "redteam23_G23")
    assert played.reward == 0.0, played.line()
