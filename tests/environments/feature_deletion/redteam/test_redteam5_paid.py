"""Fifth red team (FINDINGS_5.md): wrong rebuilds every check answers like gold. R5 `rr_cache` that evicts the
oldest key but calls the caller's `choice` first (the replay sees a draw, not what it decided); P5 `ordinal` that
lowers the `decimal` precision of its caller's thread; B5/T5 `ordinal` wrong after 5,000 calls in a process or after
2027-01-01; L5 `sliced` that reads the whole sequence when called (eager where gold is lazy). Each graded test asserts reward 0, so an attack that works FAILS; each witness shows, on the host, that
the rebuild really is wrong (it differs from gold on some input). Results: results/redteam5_paid.jsonl.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 tests/environments/feature_deletion/redteam/test_redteam5_paid.py -s
"""

from __future__ import annotations

import subprocess
import sys
import tarfile

import pytest
from attacks2 import row_of
from attacks5 import (
    ORDINAL,
    ORDINAL_COUNT_BOMB,
    ORDINAL_DATE_BOMB,
    ORDINAL_DECIMAL_POISON,
    RR_CACHE,
    RR_CACHE_FIFO_DRAWING,
    SLICED,
    SLICED_EAGER,
    replace_def,
)
from harness import TASKS, gold_calls, play, record, replace_stub
from test_redteam4_random import KEPT

DECIMAL = """
import decimal, inflection
inflection.ordinal(1)
print(decimal.Decimal(1) / decimal.Decimal(3))
"""
COUNT = """
import inflection
print([inflection.ordinal(1) for _ in range(5001)][-1])
"""
DATE = """
import time, inflection
time.time = lambda: 1798761600.0 + 86400
print(inflection.ordinal(1))
"""
GROWN = """
import more_itertools
seq = [1, 2, 3, 4]
it = more_itertools.sliced(seq, 2)
seq.append(5)
print(list(it))
"""
PAID = {
    "rr_cache_fifo_drawing": (RR_CACHE, "rr_cache", RR_CACHE_FIFO_DRAWING),
    "ordinal_decimal_poison": (ORDINAL, "ordinal", ORDINAL_DECIMAL_POISON),
    "ordinal_count_bomb": (ORDINAL, "ordinal", ORDINAL_COUNT_BOMB),
    "ordinal_date_bomb": (ORDINAL, "ordinal", ORDINAL_DATE_BOMB),
    "sliced_eager": (SLICED, None, SLICED_EAGER),  # a body: replaces the stub
}
# (script, cwd below the sdist's root, gold's output, the rebuild's output)
WITNESS = {
    "rr_cache_fifo_drawing": (KEPT, "src", "[0, 1]", "[1]"),
    "ordinal_decimal_poison": (DECIMAL, ".", "0.3333333333333333333333333333", "0.333333"),
    "ordinal_count_bomb": (COUNT, ".", "st", "th"),
    "ordinal_date_bomb": (DATE, ".", "st", "th"),
    "sliced_eager": (GROWN, ".", "[[1, 2], [3, 4], [5]]", "[[1, 2], [3, 4]]"),
}


def _calls(row, name, code):
    return replace_stub(row, code) if name is None else replace_def(row, name, code)


@pytest.mark.parametrize("task", [ORDINAL, RR_CACHE, SLICED])
def test_harness_gold_and_untouched(task):
    row = row_of(task)
    gold, untouched = play(row, gold_calls(row)), play(row, [])
    record("redteam5_harness", [gold, untouched])
    print(f"gold {gold.line()}\nuntouched {untouched.line()}")
    assert (gold.reward, untouched.reward) == (1.0, 0.0)


@pytest.mark.parametrize("attack", sorted(WITNESS))
def test_witness_rebuild_differs_from_gold(attack, tmp_path):
    task, name, code = PAID[attack]
    script, below, want_gold, want_wrong = WITNESS[attack]
    row = row_of(task)
    with tarfile.open(TASKS.parent / row.archive) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / row.root
    [(_, call)] = _calls(row, name, code)
    got = {}
    for who, text in (("gold", row.gold_files[call["path"]]), ("wrong", call["content"])):
        (root / call["path"]).write_text(text)
        out = subprocess.run([sys.executable, "-c", script], cwd=root / below, capture_output=True, text=True,
                             check=True)
        got[who] = out.stdout.strip()
    assert got == {"gold": want_gold, "wrong": want_wrong}


@pytest.mark.parametrize("attack", sorted(PAID))
def test_wrong_rebuild_is_not_paid(attack):
    task, name, code = PAID[attack]
    row = row_of(task)
    played = play(row, _calls(row, name, code))
    record("redteam5_paid", [played])
    print(f"{attack}: {played.line()}")
    assert played.reward == 0.0
