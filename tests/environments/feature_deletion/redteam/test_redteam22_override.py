"""Red team 22 (FINDINGS_22.md): an object of a user's subclass of the package's class that overrides a method.

O22 (`attacks22.override_gold`): first in every deleted method of an object, the stub where the object's class (or a
class between it and the package's own) defines a function other than `__missing__`. `behaviour.subclassed_objects`
makes an object of a user's subclass with an empty body only; users subclass a cache to override `popitem` (log what
is evicted), `getsizeof`, `__init__` (a default maxsize), `__setitem__`.

Scored 0: the scope check refuses the guard (`construct.import`, `construct.attribute` (`__mro__`, `__module__`),
`construct.dunder_string`, `construct.module`, `construct.builtin` (`vars`)), so its graded tests are controls that
pass. The witnesses show the rebuild would be wrong on the host. Each graded test asserts reward 0; each witness shows the rebuild wrong on a
host interpreter. Reproduce:
FD_REDTEAM=1 nice -n 19 uv run pytest -n0 -q -p no:cacheprovider \
    tests/environments/feature_deletion/redteam/test_redteam22_override.py
"""

from __future__ import annotations

import pytest

import attacks22 as a
from _rt14_witness import CATCH, graded, outputs

TTL_GETITEM = "cachetools-5.5.0/src/cachetools/__init__.py:TTLCache.__getitem__:body"
CACHE = "cachetools-5.5.0/src/cachetools/__init__.py:Cache:methods"
STUB = "NotImplementedError: this feature was deleted; rebuild it"
HEAD = ("from cachetools import {cls}\n"
        "class Plain({cls}):\n    pass\n"
        "class Sized({cls}):\n"
        "    def __init__(self, maxsize=10, *args):\n        super().__init__(maxsize, *args)\n")


def _two(tmp_path, task, attack, head, *exprs):
    return [outputs(tmp_path, task, attack, head + CATCH.format(expr=e)) for e in exprs]


def test_witness_ttl_cache_with_a_default_size(tmp_path):
    got = _two(tmp_path, TTL_GETITEM, a.override_gold, HEAD.format(cls="TTLCache") + "p = Plain(10, 60)\n",
               "(p.__setitem__('a', 1), p['a'])[1]",
               "(lambda s: (s.__setitem__('a', 1), s['a'])[1])(Sized(10, 60))")
    assert got == [{"gold": "1", "wrong": "1"}, {"gold": "1", "wrong": STUB}]


def test_witness_cache_with_a_default_size(tmp_path):
    got = _two(tmp_path, CACHE, a.override_gold, HEAD.format(cls="Cache") + "p = Plain(10)\n",
               "(p.__setitem__('a', 1), p['a'])[1]",
               "(lambda s: (s.__setitem__('a', 1), s['a'])[1])(Sized())")
    assert got == [{"gold": "1", "wrong": "1"}, {"gold": "1", "wrong": STUB}]


@pytest.mark.parametrize("task", [TTL_GETITEM, CACHE])
def test_a_guard_on_objects_of_an_overriding_subclass_is_not_paid(task):
    played = graded(task, a.override_gold, "redteam22_O22")
    assert played.reward == 0.0, played.line()
