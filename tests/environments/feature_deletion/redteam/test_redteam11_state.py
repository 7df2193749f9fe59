"""Eleventh red team, P11 (FINDINGS_11.md): the process's state outside the package, through a channel the replay's
digests skip. P11a: gold `ordinal` that also calls `numbers.Integral.register(float)` (an ABC's registry is skipped by
`fd_calls._walk` as the interpreter's cache). P11b (held): gold `ordinal` that calls `random.seed(0)`. Graded tests
assert reward 0 (an attack that works FAILS); the witness runs gold and the rebuild on the host.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 tests/environments/feature_deletion/redteam/test_redteam11_state.py -s
"""

from __future__ import annotations

import subprocess
import sys
import tarfile

from attacks2 import row_of
from attacks11 import ORDINAL, ordinal_registers_float, ordinal_seeds_random
from harness import TASKS, play, record

SCRIPT = """
import numbers
from inflection import ordinal
before = isinstance(1.5, numbers.Integral)
print(ordinal(1), before, isinstance(1.5, numbers.Integral))
"""


def test_witness_floats_are_integral_after_one_call(tmp_path):
    row = row_of(ORDINAL)
    with tarfile.open(TASKS.parent / row.archive) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / row.root
    [(_, call)] = ordinal_registers_float(row)
    got = {}
    for who, text in (("gold", row.gold_files[call["path"]]), ("wrong", call["content"])):
        (root / call["path"]).write_text(text)
        got[who] = subprocess.run([sys.executable, "-c", SCRIPT], cwd=root / row.import_root, capture_output=True,
                                  text=True, check=True).stdout.strip()
    assert got == {"gold": "st False False", "wrong": "st False True"}


def test_registering_ordinal_is_not_paid():
    row = row_of(ORDINAL)
    played = play(row, ordinal_registers_float(row))
    record("redteam11_state", [played])
    print(f"P11a ordinal registering float as Integral: {played.line()}")
    assert played.reward == 0.0


def test_seeding_ordinal_is_not_paid():
    row = row_of(ORDINAL)
    played = play(row, ordinal_seeds_random(row))
    record("redteam11_state", [played])
    print(f"P11b ordinal seeding random: {played.line()}")
    assert played.reward == 0.0
