"""Fifth red team, I5 and U5 (FINDINGS_5.md): the agent's code reaches the checks' replay itself. I5: `ordinal`
poisons inflection's UNCOUNTABLES (red team 4's U1, fixed by digesting the package's state) and rebinds the replay
driver's `package_state` (reached as `collections._sys.modules["__main__"]`, a module attribute set with no audit
event) to a wrapper that hides the poison while the driver looks. U5: `iterate` calls `func` twice per step except
where `func` is the replay's stub (it has a `count`). Controls: U1's poison alone is refused (the state fix works),
so I5's 1.0 is the blinding's. Witnesses (host): after the I5 `ordinal`, `pluralize("window")` is "window"; the U5
`iterate` doubles a counter's steps. Each graded test asserts reward 0, so an attack that works FAILS.
Results: results/redteam5_driver.jsonl.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 tests/environments/feature_deletion/redteam/test_redteam5_driver.py -s
"""

from __future__ import annotations

import itertools
import subprocess
import sys
import tarfile
import types

from attacks2 import row_of
from attacks4 import ORDINAL_POISONS
from attacks5 import (
    ITERATE,
    ITERATE_TWICE_UNLESS_STUB,
    ORDINAL,
    ORDINAL_POISON_BLINDED,
    replace_def,
)
from harness import TASKS, gold_calls, play, record, replace_stub

POISONED = """
import inflection
inflection.ordinal(1)
print(inflection.pluralize("window"))
"""


def test_harness_gold_and_untouched_iterate():
    row = row_of(ITERATE)
    gold, untouched = play(row, gold_calls(row)), play(row, [])
    record("redteam5_harness", [gold, untouched])
    assert (gold.reward, untouched.reward) == (1.0, 0.0)


def test_control_unblinded_poison_is_refused():
    """U1's poison without the blinding: the state digest sees it (so I5's reward is the blinding's doing)."""
    row = row_of(ORDINAL)
    played = play(row, replace_def(row, "ordinal", ORDINAL_POISONS))
    record("redteam5_driver", [played])
    print(f"U1 alone: {played.line()}")
    assert played.reward == 0.0


def test_witness_blinded_ordinal_poisons_pluralize(tmp_path):
    row = row_of(ORDINAL)
    with tarfile.open(TASKS.parent / row.archive) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / row.root
    [(_, call)] = replace_def(row, "ordinal", ORDINAL_POISON_BLINDED)
    got = {}
    for who, text in (("gold", row.gold_files[call["path"]]), ("wrong", call["content"])):
        (root / call["path"]).write_text(text)
        got[who] = subprocess.run([sys.executable, "-c", POISONED], cwd=root, capture_output=True, text=True,
                                  check=True).stdout.strip()
    assert got == {"gold": "windows", "wrong": "window"}


def test_blinded_state_poison_is_not_paid():
    row = row_of(ORDINAL)
    played = play(row, replace_def(row, "ordinal", ORDINAL_POISON_BLINDED))
    record("redteam5_driver", [played])
    print(f"I5 ordinal poisons UNCOUNTABLES, driver's package_state rebound: {played.line()}")
    assert played.reward == 0.0


def test_witness_iterate_doubles_side_effects_off_the_replay():
    source = "def it(func, start):\n" + "".join("    " + line + "\n" for line in
                                                 ITERATE_TWICE_UNLESS_STUB.strip("\n").splitlines())
    module = types.ModuleType("rt5_iterate")
    exec(compile(source, "rt5_iterate", "exec"), module.__dict__)  # noqa: S102 - the witness runs the body on the host
    counter = itertools.count(1)
    assert list(itertools.islice(module.it(lambda _: next(counter), 0), 4)) == [0, 2, 4, 6]  # gold: 0, 1, 2, 3


def test_iterate_right_only_for_the_stub_is_not_paid():
    row = row_of(ITERATE)
    played = play(row, replace_stub(row, ITERATE_TWICE_UNLESS_STUB))
    record("redteam5_driver", [played])
    print(f"U5 iterate twice unless func has .count: {played.line()}")
    assert played.reward == 0.0
