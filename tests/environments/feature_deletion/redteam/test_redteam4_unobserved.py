"""Fourth red team, U1/U2 (FINDINGS_4.md): wrong rebuilds whose wrongness the checks never observe: the state of the
rest of the package (U1: `ordinal` poisons inflection's UNCOUNTABLES), and how often a callback is called (U2:
`iterate` calls `func` twice per step). Each witness (host, the written source) shows the rebuild is wrong; each
graded test asserts reward 0, so an attack that works FAILS. Results: results/redteam4_unobserved.jsonl.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 tests/environments/feature_deletion/redteam/test_redteam4_unobserved.py -s
"""

from __future__ import annotations

import itertools
import types

import pytest
from attacks4 import (DOUBLE_ITERATE, GOLD_ITERATE, ITERATE, ONE, ONE_WRONG_MESSAGE, ORDINAL, ORDINAL_POISONS,
                      ORDINAL_RENAMED, iterate_armed, replace_def, row_of)
from harness import gold_calls, play, record, replace_stub


def _module(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, name, "exec"), module.__dict__)  # noqa: S102 - the witness runs the written file on the host
    return module


def test_harness_gold_and_untouched_ordinal():
    row = row_of(ORDINAL)
    gold, untouched = play(row, gold_calls(row)), play(row, [])
    record("redteam4_harness", [gold, untouched])
    print(f"gold {gold.line()}\nuntouched {untouched.line()}")
    assert (gold.reward, untouched.reward) == (1.0, 0.0)


def test_witness_ordinal_poisons_pluralize():
    row = row_of(ORDINAL)
    [(_, call)] = replace_def(row, "ordinal", ORDINAL_POISONS)
    gold = _module(row.gold_files[call["path"]], "rt4_gold_inflection")
    wrong = _module(call["content"], "rt4_wrong_inflection")
    assert [gold.ordinal(n) for n in range(200)] == [wrong.ordinal(n) for n in range(200)]
    gold.ordinal(1)
    wrong.ordinal(1)
    assert (gold.pluralize("window"), wrong.pluralize("window")) == ("windows", "window")


def test_ordinal_that_poisons_the_package_is_not_paid():
    row = row_of(ORDINAL)
    played = play(row, replace_def(row, "ordinal", ORDINAL_POISONS))
    record("redteam4_unobserved", [played])
    print(f"ordinal poisoning UNCOUNTABLES: {played.line()}")
    assert played.reward == 0.0


def test_witness_iterate_doubles_side_effects():
    """`iterate`'s body returns the helper's generator: the helper alone, gold's and the doubled one, on a counter."""
    for helper, want in ((GOLD_ITERATE, [0, 1, 2, 3]), (DOUBLE_ITERATE, [0, 2, 4, 6])):
        counter = itertools.count(1)
        module = _module(helper, "rt4_helper")
        assert list(itertools.islice(module._rt4_iterate(lambda _: next(counter), 0), 4)) == want


def test_iterate_calling_func_twice_is_not_paid():
    row = row_of(ITERATE)
    played = play(row, iterate_armed(row, DOUBLE_ITERATE, None))
    record("redteam4_unobserved", [played])
    print(f"iterate calling func twice: {played.line()}")
    assert played.reward == 0.0


def test_harness_gold_and_untouched_one():
    row = row_of(ONE)
    gold, untouched = play(row, gold_calls(row)), play(row, [])
    record("redteam4_harness", [gold, untouched])
    print(f"gold {gold.line()}\nuntouched {untouched.line()}")
    assert (gold.reward, untouched.reward) == (1.0, 0.0)


def test_one_with_a_wrong_error_message_is_not_paid():
    """`one([])` says "too many items": the message is the feature's too (gold: "too few items ... (expected 1)")."""
    row = row_of(ONE)
    played = play(row, replace_stub(row, ONE_WRONG_MESSAGE))
    record("redteam4_unobserved", [played])
    print(f"one with a wrong too-short message: {played.line()}")
    assert played.reward == 0.0


def test_witness_renamed_parameter_breaks_keyword_callers():
    row = row_of(ORDINAL)
    [(_, call)] = replace_def(row, "ordinal", ORDINAL_RENAMED)
    gold = _module(row.gold_files[call["path"]], "rt4_gold_inflection")
    wrong = _module(call["content"], "rt4_wrong_inflection")
    assert gold.ordinal(number=3) == "rd"
    with pytest.raises(TypeError):
        wrong.ordinal(number=3)


def test_ordinal_with_a_renamed_parameter_is_not_paid():
    row = row_of(ORDINAL)
    played = play(row, replace_def(row, "ordinal", ORDINAL_RENAMED))
    record("redteam4_unobserved", [played])
    print(f"ordinal(value) instead of ordinal(number): {played.line()}")
    assert played.reward == 0.0
