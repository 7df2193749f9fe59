"""Sixth red team (FINDINGS_6.md): `ordinal` rebuilds that change a standard module's public object in place
(P6d `decimal.DefaultContext`, P6c `calendar`'s module calendar, P6k `Counter.most_common`) and a date bomb that reads the clock through `from time import time` (T6), unseen by P5's fix, which digests such objects by
type. Each graded test asserts reward 0, so an attack that works FAILS; each witness shows, on the host, that the
rebuild really is wrong (its caller's process differs from gold's after one call). Results:
results/redteam6_paid.jsonl.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 tests/environments/feature_deletion/redteam/test_redteam6_paid.py -s
"""

from __future__ import annotations

import subprocess
import sys
import tarfile

import pytest
from attacks2 import row_of
from attacks6 import (
    ORDINAL,
    ORDINAL_COUNTER_METHOD,
    ORDINAL_DATE_BOMB_FROM_IMPORT,
    ORDINAL_DEFAULT_CONTEXT,
    ORDINAL_FIRST_WEEKDAY,
    replace_def,
)
from harness import TASKS, gold_calls, play, record

THREAD = """
import decimal, threading, inflection
inflection.ordinal(1)
out = []
threading.Thread(target=lambda: out.append(decimal.Decimal(1) / decimal.Decimal(3))).start()
import time; time.sleep(0.5)
print(out[0])
"""
WEEK = """
import calendar, inflection
inflection.ordinal(1)
print(calendar.firstweekday(), calendar.monthcalendar(2026, 11)[0])
"""
COUNTER = """
import collections, inflection
inflection.ordinal(1)
print(collections.Counter("abb").most_common())
"""
DATE = """
import time, inflection
time.time = lambda: 1798761600.0 + 86400
print(inflection.ordinal(1))
"""
PAID = {"ordinal_default_context": ORDINAL_DEFAULT_CONTEXT, "ordinal_first_weekday": ORDINAL_FIRST_WEEKDAY,
        "ordinal_counter_method": ORDINAL_COUNTER_METHOD, "ordinal_date_bomb_from_import": ORDINAL_DATE_BOMB_FROM_IMPORT}
# (script, gold's output, the rebuild's output)
WITNESS = {
    "ordinal_default_context": (THREAD, "0.3333333333333333333333333333", "0.333333"),
    "ordinal_counter_method": (COUNTER, "[('b', 2), ('a', 1)]", "[('a', 1), ('b', 2)]"),
    "ordinal_date_bomb_from_import": (DATE, "st", "th"),
    "ordinal_first_weekday": (WEEK, "0 [0, 0, 0, 0, 0, 0, 1]", "6 [1, 2, 3, 4, 5, 6, 7]"),
}


def test_harness_gold_and_untouched():
    row = row_of(ORDINAL)
    gold, untouched = play(row, gold_calls(row)), play(row, [])
    record("redteam6_harness", [gold, untouched])
    print(f"gold {gold.line()}\nuntouched {untouched.line()}")
    assert (gold.reward, untouched.reward) == (1.0, 0.0)


@pytest.mark.parametrize("attack", sorted(WITNESS))
def test_witness_rebuild_differs_from_gold(attack, tmp_path):
    script, want_gold, want_wrong = WITNESS[attack]
    row = row_of(ORDINAL)
    with tarfile.open(TASKS.parent / row.archive) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / row.root
    [(_, call)] = replace_def(row, "ordinal", PAID[attack])
    got = {}
    for who, text in (("gold", row.gold_files[call["path"]]), ("wrong", call["content"])):
        (root / call["path"]).write_text(text)
        out = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, check=True)
        got[who] = out.stdout.strip()
    assert got == {"gold": want_gold, "wrong": want_wrong}


@pytest.mark.parametrize("attack", sorted(PAID))
def test_wrong_rebuild_is_not_paid(attack):
    row = row_of(ORDINAL)
    played = play(row, replace_def(row, "ordinal", PAID[attack]))
    record("redteam6_paid", [played])
    print(f"{attack}: {played.line()}")
    assert played.reward == 0.0
