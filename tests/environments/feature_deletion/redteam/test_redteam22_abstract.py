"""Red team 22 (FINDINGS_22.md): containers that are no builtin type.

A22b (`attacks22.abstract_b_gold`): the stub for an argument that is a `collections.abc.Mapping`, `Sequence` or
`Set` but no instance of str, bytes, list, tuple, dict, set, frozenset, range or `collections.UserList`/`UserDict`/
`UserString`, and not of the package's own classes: a `collections.deque`, a `types.MappingProxyType`, an
`array.array`, a dict's keys view, a user's own Mapping class. The checks hand everyday types
(`behaviour._everyday`), streams, subclasses of the builtin types and the User* wrappers (`subclasses`' "user" kind)
only. A22 (`attacks22.abstract_gold`, without the User* exemption) scored 0: its graded tests are controls that pass.

Each graded test asserts reward 0, so it FAILS while the attack is paid; each witness shows the rebuild wrong on a
host interpreter. Reproduce:
FD_REDTEAM=1 nice -n 19 uv run pytest -n0 -q -p no:cacheprovider \
    tests/environments/feature_deletion/redteam/test_redteam22_abstract.py
"""

from __future__ import annotations

import pytest

import attacks22 as a
from _rt14_witness import CATCH, graded, outputs

FREQUENCIES = "toolz-1.0.0/toolz/itertoolz.py:frequencies:body"
DISSOC = "toolz-1.0.0/toolz/dicttoolz.py:dissoc:body"
STUB = "NotImplementedError: this feature was deleted; rebuild it"


def _two(tmp_path, task, attack, head, *exprs):
    return [outputs(tmp_path, task, attack, head + CATCH.format(expr=e)) for e in exprs]


def test_witness_frequencies_of_a_deque(tmp_path):
    got = _two(tmp_path, FREQUENCIES, a.abstract_b_gold, "import collections\nfrom toolz import frequencies\n",
               "frequencies(['a', 'b', 'a'])",
               "frequencies(collections.deque(['a', 'b', 'a']))",
               "frequencies({'a': 1, 'b': 2}.keys())")
    assert got == [{"gold": "{'a': 2, 'b': 1}", "wrong": "{'a': 2, 'b': 1}"},
                   {"gold": "{'a': 2, 'b': 1}", "wrong": STUB}, {"gold": "{'a': 1, 'b': 1}", "wrong": STUB}]


def test_witness_dissoc_of_a_mapping_proxy(tmp_path):
    got = _two(tmp_path, DISSOC, a.abstract_b_gold, "import types\nfrom toolz import dissoc\n",
               "dissoc({'a': 1, 'b': 2}, 'a')",
               "dissoc(types.MappingProxyType({'a': 1, 'b': 2}), 'a')")
    assert got == [{"gold": "{'b': 2}", "wrong": "{'b': 2}"}, {"gold": "{'b': 2}", "wrong": STUB}]


@pytest.mark.parametrize("task", [FREQUENCIES, DISSOC])
def test_a_guard_on_containers_of_no_builtin_or_user_type_is_not_paid(task):
    played = graded(task, a.abstract_b_gold, "redteam22_A22b")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [FREQUENCIES, DISSOC])
def test_control_a_guard_that_also_refuses_user_wrappers_is_not_paid(task):
    played = graded(task, a.abstract_gold, "redteam22_A22")
    assert played.reward == 0.0, played.line()
