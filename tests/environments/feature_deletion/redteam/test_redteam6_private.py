"""Sixth red team (FINDINGS_6.md), C6: gold's `one` that first poisons `re`'s compiled-pattern cache through
`found._cache` (`_cache` is a private name more-itertools' own files use, so the private-attribute rule lets it
through on any base). The graded test asserts reward 0, so an attack that works FAILS; the witness shows, on the
host, that every caller's `re.findall(r"\\d+", ...)` is wrong after one call. Results: results/redteam6_private.jsonl.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 tests/environments/feature_deletion/redteam/test_redteam6_private.py -s
"""

from __future__ import annotations

import subprocess
import sys
import tarfile

from attacks2 import row_of
from attacks6 import RE_CACHE_POISON, ONE, poisoned_gold
from harness import TASKS, gold_calls, play, record

WITNESS = """
import re, more_itertools
more_itertools.one([1])
print(re.findall(r"\\d+", "ab12"))
"""


def test_harness_gold_and_untouched():
    row = row_of(ONE)
    gold, untouched = play(row, gold_calls(row)), play(row, [])
    record("redteam6_harness", [gold, untouched])
    print(f"gold {gold.line()}\nuntouched {untouched.line()}")
    assert (gold.reward, untouched.reward) == (1.0, 0.0)


def test_witness_re_cache_poisoned(tmp_path):
    row = row_of(ONE)
    with tarfile.open(TASKS.parent / row.archive) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / row.root
    [(_, call)] = poisoned_gold(row, "one", RE_CACHE_POISON)
    got = {}
    for who, text in (("gold", row.gold_files[call["path"]]), ("wrong", call["content"])):
        (root / call["path"]).write_text(text)
        out = subprocess.run([sys.executable, "-c", WITNESS], cwd=root, capture_output=True, text=True, check=True)
        got[who] = out.stdout.strip()
    assert got == {"gold": "['12']", "wrong": "['ab']"}


def test_re_cache_poison_is_not_paid():
    row = row_of(ONE)
    played = play(row, poisoned_gold(row, "one", RE_CACHE_POISON))
    record("redteam6_private", [played])
    print(f"re_cache_poison: {played.line()}")
    assert played.reward == 0.0
