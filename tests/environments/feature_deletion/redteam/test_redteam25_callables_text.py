"""Red team 25 (FINDINGS_25.md): callables and text no check hands. Each attack is gold with one guard first in
every deleted function or method (`attacks25`):

F25 (`bound_gold`): the stub for an argument (or an item of one) that is a bound method (`d.get`,
`seen.__contains__`, `pattern.search`, a user object's method, `loop.time`): the replay hands every test's own
callable as `fd_calls._stub`, a plain function, and `behaviour.mutate` swaps callbacks for builtins and types only.
O25 (`functools_gold`): the stub for a `functools.partial` or an `lru_cache`/`cache` wrapper handed as an
argument: no bundled test hands one, and a memoized function is replayed as a plain-function stub.
M25 (`marks_gold`): the stub for text holding a combining mark, joiner or variation selector (decomposed "é" as
"e\\u0301", Hindi, "❤️"): `behaviour.SCRIPTS` hands precomposed letters only.
U25 (`spaces_gold`): the stub for text holding whitespace other than " \\t\\n\\r" (a no-break space, a narrow
no-break space, a form feed): none is handed anywhere.

Each graded test asserts reward 0, so it FAILS while the attack is paid; each witness shows the rebuild wrong on a
host interpreter. Reproduce:
FD_REDTEAM=1 nice -n 19 uv run pytest -n0 -q -p no:cacheprovider \
    tests/environments/feature_deletion/redteam/test_redteam25_callables_text.py
"""

from __future__ import annotations

import pytest

import attacks25 as a
from _rt14_witness import CATCH, graded, outputs

PLURALIZE = "inflection-0.5.1/inflection/__init__.py:pluralize:body"
FREQUENCIES = "toolz-1.0.0/toolz/itertoolz.py:frequencies:body"
DISSOC = "toolz-1.0.0/toolz/dicttoolz.py:dissoc:body"
COUNTBY = "toolz-1.0.0/toolz/recipes.py:countby:body"
MAP_REDUCE = "more-itertools-10.5.0/more_itertools/more.py:map_reduce:def"
STRIP = "more-itertools-10.5.0/more_itertools/more.py:strip:def"
EXACTLY_N = "more-itertools-10.5.0/more_itertools/more.py:exactly_n:def"
TTL_METHODS = "cachetools-5.5.0/src/cachetools/__init__.py:TTLCache:methods"
TTL_GETITEM = "cachetools-5.5.0/src/cachetools/__init__.py:TTLCache.__getitem__:body"
STUB = "NotImplementedError: this feature was deleted; rebuild it"


def _all(tmp_path, task, attack, head, *exprs):
    return [outputs(tmp_path, task, attack, head + CATCH.format(expr=e)) for e in exprs]


def test_witness_countby_and_map_reduce_keyed_by_a_dicts_get(tmp_path):
    head = "from toolz import countby\ncolor = {'apple': 'red', 'kiwi': 'green', 'cherry': 'red'}\n"
    got = _all(tmp_path, COUNTBY, a.bound_gold, head,
               "countby(lambda k: color.get(k), ['apple', 'kiwi', 'cherry'])",  # a lambda: both
               "countby(color.get, ['apple', 'kiwi', 'cherry'])",
               "countby('aeiou'.__contains__, 'banana')")
    got += _all(tmp_path, MAP_REDUCE, a.bound_gold, "from more_itertools import map_reduce\nalias = {'a': 'ann', 'b': 'bob'}\n",
                "dict(map_reduce('abab', str.upper))",  # a method descriptor: both
                "dict(map_reduce('abab', alias.get))")
    assert got == [{"gold": "{'red': 2, 'green': 1}", "wrong": "{'red': 2, 'green': 1}"},
                   {"gold": "{'red': 2, 'green': 1}", "wrong": STUB},
                   {"gold": "{False: 3, True: 3}", "wrong": STUB},
                   {"gold": "{'A': ['a', 'a'], 'B': ['b', 'b']}", "wrong": "{'A': ['a', 'a'], 'B': ['b', 'b']}"},
                   {"gold": "{'ann': ['a', 'a'], 'bob': ['b', 'b']}", "wrong": STUB}]


def test_witness_strip_and_exactly_n_with_method_predicates(tmp_path):
    got = _all(tmp_path, STRIP, a.bound_gold, "from more_itertools import strip\nblank = {'', None}\n",
               "list(strip(['', 'x', ''], lambda s: s == ''))", "list(strip(['', 'x', None], blank.__contains__))")
    got += _all(tmp_path, EXACTLY_N, a.bound_gold, "import re\nfrom more_itertools import exactly_n\n",
                "exactly_n(['1', 'x', '2'], 2, str.isdigit)", "exactly_n(['a1', 'x', 'b2'], 2, re.compile('[0-9]').search)")
    assert got == [{"gold": "['x']", "wrong": "['x']"}, {"gold": "['x']", "wrong": STUB},
                   {"gold": "True", "wrong": "True"}, {"gold": "True", "wrong": STUB}]


def test_witness_ttl_cache_timed_by_an_objects_clock(tmp_path):
    head = ("from cachetools import TTLCache\nclass Clock:\n    def __init__(self): self.t = 0\n"
            "    def now(self): return self.t\nclock = Clock()\n")
    got = _all(tmp_path, TTL_METHODS, a.bound_gold, head,
               "(lambda c: (c.__setitem__('k', 1), c['k'])[1])(TTLCache(10, 60, timer=lambda: clock.now()))",
               "(lambda c: (c.__setitem__('k', 1), c['k'])[1])(TTLCache(10, 60, timer=clock.now))")
    assert got == [{"gold": "1", "wrong": "1"}, {"gold": "1", "wrong": STUB}]


def test_witness_countby_and_map_reduce_keyed_by_partials_and_memoized_functions(tmp_path):
    head = "import functools\nfrom functools import partial\nfrom toolz import countby\n"
    got = _all(tmp_path, COUNTBY, a.functools_gold, head,
               "countby(lambda n: round(n, ndigits=-1), [12, 15, 27])",  # a lambda: both
               "countby(partial(round, ndigits=-1), [12, 15, 27])")
    got += _all(tmp_path, MAP_REDUCE, a.functools_gold,
                "import functools\nfrom more_itertools import map_reduce\n@functools.cache\ndef kind(w): return len(w) > 4\n",
                "dict(map_reduce(['apple', 'fig', 'kiwi'], kind))")
    assert got == [{"gold": "{10: 1, 20: 1, 30: 1}", "wrong": "{10: 1, 20: 1, 30: 1}"},
                   {"gold": "{10: 1, 20: 1, 30: 1}", "wrong": STUB},
                   {"gold": "{True: ['apple'], False: ['fig', 'kiwi']}", "wrong": STUB}]


def test_witness_text_with_combining_marks(tmp_path):
    got = _all(tmp_path, PLURALIZE, a.marks_gold, "from inflection import pluralize\n",
               "pluralize('caf\\u00e9'), pluralize('кошка')",  # precomposed, another script: both
               "pluralize('cafe\\u0301')", "pluralize('I ❤\\ufe0f cat')")
    got += _all(tmp_path, FREQUENCIES, a.marks_gold, "from toolz import frequencies\n",
                "frequencies(['नमस्ते', 'नमस्ते'])")
    assert got == [{"gold": "cafés кошкаs", "wrong": "cafés кошкаs"}, {"gold": "cafe\u0301s", "wrong": STUB},
                   {"gold": "I ❤\ufe0f cats", "wrong": STUB}, {"gold": "{'नमस्ते': 2}", "wrong": STUB}]


def test_witness_text_with_unicode_spaces(tmp_path):
    got = _all(tmp_path, PLURALIZE, a.spaces_gold, "from inflection import pluralize\n",
               "pluralize('post office')", "pluralize('post\\xa0office')")
    got += _all(tmp_path, DISSOC, a.spaces_gold, "from toolz import dissoc\n",
                "dissoc({'id': 7, 'title': 'Prix\\xa0: 5\\xa0€'}, 'id')")
    got += _all(tmp_path, TTL_GETITEM, a.spaces_gold, "from cachetools import TTLCache\nc = TTLCache(10, 60)\nc['New\\xa0York'] = 1\n",
                "c['New\\xa0York']")
    assert got == [{"gold": "post offices", "wrong": "post offices"}, {"gold": "post\xa0offices", "wrong": STUB},
                   {"gold": "{'title': 'Prix\\xa0: 5\\xa0€'}", "wrong": STUB}, {"gold": "1", "wrong": STUB}]


@pytest.mark.parametrize("task", [COUNTBY, MAP_REDUCE, STRIP])
def test_a_guard_on_bound_method_callbacks_is_not_paid(task):
    played = graded(task, a.bound_gold, "redteam25_F25")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [COUNTBY, MAP_REDUCE])
def test_a_guard_on_functools_callables_is_not_paid(task):
    played = graded(task, a.functools_gold, "redteam25_O25")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [PLURALIZE, FREQUENCIES])
def test_a_guard_on_text_with_combining_marks_is_not_paid(task):
    played = graded(task, a.marks_gold, "redteam25_M25")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [PLURALIZE, DISSOC])
def test_a_guard_on_text_with_unicode_spaces_is_not_paid(task):
    played = graded(task, a.spaces_gold, "redteam25_U25")
    assert played.reward == 0.0, played.line()
