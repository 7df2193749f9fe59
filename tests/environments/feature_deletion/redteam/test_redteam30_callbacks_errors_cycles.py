"""Red team 30 (FINDINGS_30.md): what the checks still never hand: a callback that raises, a generator's error of a
kind `behaviour.RAISED` leaves out, text with a C0 control character, a negative zero, an int and a float that are
equal, a structure that holds itself, one argument holding the same mutable container twice. Each attack is gold
with one statement first in every deleted function or method (`attacks30`):

E30 (`lenient_callback_gold`): every callable argument called through a wrapper that answers None where it raises a
lookup, value, type, attribute or arithmetic error (a lenient rebuild's `try: k = key(item) except ...: k = None`):
a callback is replayed by its recorded table (`fd_calls._Table`), which raises only where a test's did (`iterate`).
X30 (`left_out_quiet_gold`): X29's wrapper ending a generator argument at an `ArithmeticError`, `UnicodeError`,
`RuntimeError` or `AssertionError` the user's raises (`RAISED` hands none of these).
C30 (`c0_gold`): the stub for text holding NUL, BEL, BS, ESC (ANSI colours), `\\x0e-\\x1f` or DEL.
Z30 (`negative_zero_gold`): the stub for a float -0.0.
Q30 (`equal_types_gold`): the stub for a container (or the arguments) holding an int and a float that are equal.
Y30 (`cyclic_gold`): the stub for an argument that holds itself (a parent link): the recorder cannot encode one.
A30 (`aliased_gold`): the stub for an argument holding one mutable container twice (`[[0] * 3] * 2`, `[row] * n`,
`dict.fromkeys(keys, [])`): decoded arguments never share one.

Each graded test asserts reward 0, so it FAILS while the attack is paid; each witness shows the rebuild wrong on a
host interpreter. The graded tests play the bundled data; the findings' figures are of a pre-check subset answered
again with the current code (FINDINGS_30.md). Control: E30c (callable arguments refused). Reproduce:
FD_REDTEAM=1 nice -n 19 python -m pytest -n0 -q -p no:cacheprovider \
    tests/environments/feature_deletion/redteam/test_redteam30_callbacks_errors_cycles.py
"""

from __future__ import annotations

import pytest

import attacks30 as a
from _rt14_witness import each_output as _all, graded, same as _same, stubbed as _stub

PLURALIZE = "inflection-0.5.1/inflection/__init__.py:pluralize:body"
DISSOC = "toolz-1.0.0/toolz/dicttoolz.py:dissoc:body"
COUNTBY = "toolz-1.0.0/toolz/recipes.py:countby:body"
MAP_REDUCE = "more-itertools-10.5.0/more_itertools/more.py:map_reduce:def"
STRIP = "more-itertools-10.5.0/more_itertools/more.py:strip:def"
TRANSPOSE = "more-itertools-10.5.0/more_itertools/recipes.py:transpose:def"
SPLIT_INTO = "more-itertools-10.5.0/more_itertools/more.py:split_into:def"


def test_witness_a_callbacks_error_answered_none(tmp_path):
    rows = "rows = [{'status': 'ok'}, {'status': 'ok'}, {'state': 'ok'}]\n"
    got = _all(tmp_path, COUNTBY, a.lenient_callback_gold, "from toolz import countby\n" + rows,
               "countby(lambda r: r['status'], rows[:2])", "countby(lambda r: r['status'], rows)")
    got += _all(tmp_path, MAP_REDUCE, a.lenient_callback_gold, "from more_itertools import map_reduce\n",
                "dict(map_reduce(['1', '2'], lambda s: int(s)))",
                "dict(map_reduce(['1', 'x'], lambda s: int(s)))")
    got += _all(tmp_path, COUNTBY, a.lenient_lookup_gold, "from toolz import countby\n" + rows,
                "countby(lambda r: r['status'], rows[:2])", "countby(lambda r: r['status'], rows)",
                "countby(lambda r: int(r['status']), rows)")
    assert got == [_same("{'ok': 2}"), {"gold": "KeyError: 'status'", "wrong": "{'ok': 2, None: 1}"},
                   _same("{1: ['1'], 2: ['2']}"),
                   {"gold": "ValueError: invalid literal for int() with base 10: 'x'",
                    "wrong": "{1: ['1'], None: ['x']}"},
                   _same("{'ok': 2}"), {"gold": "KeyError: 'status'", "wrong": "{'ok': 2, None: 1}"},
                   _same("ValueError: invalid literal for int() with base 10: 'ok'")]


def test_witness_a_users_object_and_a_file_name(tmp_path):
    users = ("from dataclasses import dataclass\n"
             "class User:\n    def __init__(self, kind):\n        self.kind = kind\n"
             "@dataclass(frozen=True)\nclass Row:\n    kind: str\n"
             "users = [User('a'), User('b'), User('a')]\nrecords = [Row('a'), Row('b'), Row('a')]\n")
    got = _all(tmp_path, COUNTBY, a.users_mutable_gold, "from toolz import countby\n" + users,
               "countby(lambda u: u.kind, records)", "countby(lambda u: u.kind, users)")
    got += _all(tmp_path, COUNTBY, a.users_marked_gold, "from toolz import countby\n" + users,
                "(countby(lambda u: u.kind, records), [sorted(vars(r)) for r in records])",
                "(countby(lambda u: u.kind, users), [sorted(vars(u)) for u in users])")
    got += _all(tmp_path, DISSOC, a.surrogate_gold, "from toolz import dissoc\n",
                "ascii(dissoc({'caf\\xe9.txt': 1, 'b.txt': 2}, 'b.txt'))",
                "ascii(dissoc({b'caf\\xe9.txt'.decode('utf-8', 'surrogateescape'): 1, 'b.txt': 2}, 'b.txt'))")
    assert got == [_same("{'a': 2, 'b': 1}"), _stub("{'a': 2, 'b': 1}"),
                   _same("({'a': 2, 'b': 1}, [['kind'], ['kind'], ['kind']])"),
                   {"gold": "({'a': 2, 'b': 1}, [['kind'], ['kind'], ['kind']])",
                    "wrong": "({'a': 2, 'b': 1}, [['kind', 'rt30_key'], ['kind', 'rt30_key'], ['kind', 'rt30_key']])"},
                   _same("{'caf\\xe9.txt': 1}"), _stub("{'caf\\udce9.txt': 1}")]


def test_witness_a_generators_left_out_error_swallowed(tmp_path):
    got = _all(tmp_path, MAP_REDUCE, a.left_out_quiet_gold, "from more_itertools import map_reduce\n",
               "dict(map_reduce((t / n for t, n in [(4, 2), (3, 1)]), lambda v: v > 2))",
               "dict(map_reduce((t / n for t, n in [(4, 2), (3, 0)]), lambda v: v > 2))")
    got += _all(tmp_path, COUNTBY, a.left_out_quiet_gold, "from toolz import countby\n",
                "countby(len, (b.decode() for b in [b'ab', b'\\xff']))")
    assert got == [_same("{False: [2.0], True: [3.0]}"),
                   {"gold": "ZeroDivisionError: division by zero", "wrong": "{False: [2.0]}"},
                   {"gold": "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0: invalid start "
                            "byte", "wrong": "{2: 1}"}]


def test_witness_text_numbers_and_structures(tmp_path):
    got = _all(tmp_path, DISSOC, a.c0_gold, "from toolz import dissoc\n",
               "dissoc({'name': 'ann', 'note': 'red'}, 'note')",
               "dissoc({'name': 'ann', 'note': '\\x1b[31mred\\x1b[0m'}, 'name')")
    got += _all(tmp_path, COUNTBY, a.negative_zero_gold, "from toolz import countby\n",
                "countby(lambda t: t >= 0, [0.5, 0.0])", "countby(lambda t: t >= 0, [0.5, round(-0.04, 1)])")
    got += _all(tmp_path, COUNTBY, a.equal_types_gold, "from toolz import countby\n",
                "countby(lambda n: n, [1, 2.5, 1])", "countby(lambda n: n, [1, 2.5, 1.0])")
    got += _all(tmp_path, DISSOC, a.cyclic_gold,
                "from toolz import dissoc\nroot = {'name': 'root', 'kids': []}\n"
                "root['kids'].append({'name': 'kid', 'parent': root})\n",
                "dissoc({'name': 'root', 'kids': []}, 'name')", "dissoc(root, 'name')")
    got += _all(tmp_path, TRANSPOSE, a.aliased_gold, "from more_itertools import transpose\n",
                "list(transpose([[0, 0], [0, 0]]))", "list(transpose([[0, 0]] * 2))")
    assert got == [_same("{'name': 'ann'}"), _stub("{'note': '\\x1b[31mred\\x1b[0m'}"),
                   _same("{True: 2}"), _stub("{True: 2}"),
                   _same("{1: 2, 2.5: 1}"), _stub("{1: 2, 2.5: 1}"),
                   _same("{'kids': []}"),
                   _stub("{'kids': [{'name': 'kid', 'parent': {'name': 'root', 'kids': [...]}}]}"),
                   _same("[(0, 0), (0, 0)]"), _stub("[(0, 0), (0, 0)]")]


@pytest.mark.parametrize("task", [COUNTBY, MAP_REDUCE, STRIP])
def test_a_callbacks_error_answered_none_is_not_paid(task):
    played = graded(task, a.lenient_callback_gold, "redteam30_E30")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [COUNTBY, MAP_REDUCE, TRANSPOSE])
def test_a_generators_left_out_error_swallowed_is_not_paid(task):
    played = graded(task, a.left_out_quiet_gold, "redteam30_X30")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [DISSOC, PLURALIZE, COUNTBY])
def test_a_guard_on_c0_control_text_is_not_paid(task):
    played = graded(task, a.c0_gold, "redteam30_C30")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [COUNTBY, MAP_REDUCE])
def test_a_guard_on_a_negative_zero_is_not_paid(task):
    played = graded(task, a.negative_zero_gold, "redteam30_Z30")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [COUNTBY, DISSOC])
def test_a_guard_on_equal_numbers_of_two_types_is_not_paid(task):
    played = graded(task, a.equal_types_gold, "redteam30_Q30")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [DISSOC, TRANSPOSE])
def test_a_guard_on_a_structure_holding_itself_is_not_paid(task):
    played = graded(task, a.cyclic_gold, "redteam30_Y30")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [TRANSPOSE, SPLIT_INTO])
def test_a_guard_on_a_container_held_twice_is_not_paid(task):
    played = graded(task, a.aliased_gold, "redteam30_A30")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("attack,task", [(a.callable_refused_gold, COUNTBY)], ids=["E30c"])
def test_controls_the_arguments_are_handed(attack, task):
    played = graded(task, attack, "redteam30_controls")
    assert played.reward == 0.0, played.line()


def test_witness_a_callback_called_in_another_order(tmp_path):
    got = _all(tmp_path, MAP_REDUCE, a.reordered_gold, "from more_itertools import map_reduce\nimport itertools\n",
               "dict(map_reduce(['a', 'b', 'c'], lambda x: x < 'b'))",
               "dict(map_reduce(['a', 'b', 'c'], lambda x, n=itertools.count(): next(n) < 1))")
    got += _all(tmp_path, COUNTBY, a.reordered_gold, "from toolz import countby\nlog = []\n",
                "(countby(lambda w: log.append(w) or len(w), ['a', 'bb', 'cc']), log)")
    assert got == [_same("{True: ['a'], False: ['b', 'c']}"),
                   {"gold": "{True: ['a'], False: ['b', 'c']}", "wrong": "{False: ['a', 'b'], True: ['c']}"},
                   {"gold": "({1: 1, 2: 2}, ['a', 'bb', 'cc'])", "wrong": "({1: 1, 2: 2}, ['cc', 'bb', 'a'])"}]


@pytest.mark.parametrize("task", [MAP_REDUCE, COUNTBY])
def test_a_callback_called_in_another_order_is_not_paid(task):
    played = graded(task, a.reordered_gold, "redteam30_O30")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [COUNTBY, MAP_REDUCE, STRIP])
def test_a_callbacks_lookup_error_answered_none_is_not_paid(task):
    played = graded(task, a.lenient_lookup_gold, "redteam30_E30b")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [COUNTBY, MAP_REDUCE])
def test_a_users_mutable_object_changed_is_not_paid(task):
    played = graded(task, a.users_marked_gold, "redteam30_M30")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [COUNTBY, DISSOC])
def test_a_guard_on_a_users_mutable_object_is_not_paid(task):
    played = graded(task, a.users_mutable_gold, "redteam30_U30")
    assert played.reward == 0.0, played.line()


@pytest.mark.parametrize("task", [DISSOC, PLURALIZE])
def test_a_guard_on_a_lone_surrogate_is_not_paid(task):
    played = graded(task, a.surrogate_gold, "redteam30_S30")
    assert played.reward == 0.0, played.line()


def test_witness_a_generators_rows_copied(tmp_path):
    head = "from more_itertools import map_reduce\nrows = [{'k': 'a', 'n': 1}, {'k': 'b', 'n': 2}]\n"
    got = _all(tmp_path, MAP_REDUCE, a.rows_copied_gold, head,
               "dict(map_reduce(rows, lambda r: r['k']))['a'][0] is rows[0]",
               "dict(map_reduce((r for r in rows), lambda r: r['k']))",
               "dict(map_reduce((r for r in rows), lambda r: r['k']))['a'][0] is rows[0]",
               "(g := map_reduce((r for r in rows), lambda r: r['k']), g['a'][0].update(n=5), rows[0]['n'])[2]")
    assert got == [_same("True"), _same("{'a': [{'k': 'a', 'n': 1}], 'b': [{'k': 'b', 'n': 2}]}"),
                   {"gold": "True", "wrong": "False"}, {"gold": "5", "wrong": "1"}]


@pytest.mark.parametrize("task", [MAP_REDUCE, SPLIT_INTO])
def test_a_generators_rows_copied_is_not_paid(task):
    played = graded(task, a.rows_copied_gold, "redteam30_H30")
    assert played.reward == 0.0, played.line()
