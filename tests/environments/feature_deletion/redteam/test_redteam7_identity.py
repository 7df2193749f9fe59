"""Seventh red team, A7 (FINDINGS_7.md): cachetools `Cache` rebuilt to store a copy of each value (`copy.copy`), so
that `c[k] = v; c[k] is v` is False and a caller's later change to `v` is lost to the cache. The replay observes
sharing between one step's answer and the same step's arguments only, never with an object an earlier step handed
in. Graded test asserts reward 0 (an attack that works FAILS); the witness shows on the host that the rebuild
differs from gold. Harness: gold 1.0 and untouched 0.0 on the same task. Results: results/redteam7_identity.jsonl.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 tests/environments/feature_deletion/redteam/test_redteam7_identity.py -s
"""

from __future__ import annotations

import subprocess
import sys
import tarfile

from attacks2 import row_of
from attacks7 import CACHE_METHODS, cache_storing_copies
from harness import TASKS, gold_calls, play, record

SCRIPT = """
import cachetools
c = cachetools.Cache(10)
v = []
c["a"] = v
v.append(1)
print(c["a"], c["a"] is v)
"""


def test_harness_gold_and_untouched():
    row = row_of(CACHE_METHODS)
    gold, untouched = play(row, gold_calls(row)), play(row, [])
    record("redteam7_harness", [gold, untouched])
    assert (gold.reward, untouched.reward) == (1.0, 0.0), (gold.line(), untouched.line())


def test_witness_cache_loses_the_callers_object(tmp_path):
    row = row_of(CACHE_METHODS)
    with tarfile.open(TASKS.parent / row.archive) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / row.root
    [(_, call)] = cache_storing_copies(row)
    got = {}
    for who, text in (("gold", row.gold_files[call["path"]]), ("wrong", call["content"])):
        (root / call["path"]).write_text(text)
        out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=root / "src", capture_output=True, text=True,
                             check=True)
        got[who] = out.stdout.strip()
    assert got == {"gold": "[1] True", "wrong": "[] False"}


def test_cache_storing_copies_is_not_paid():
    row = row_of(CACHE_METHODS)
    played = play(row, cache_storing_copies(row))
    record("redteam7_identity", [played])
    print(f"A7 Cache storing copies: {played.line()}")
    assert played.reward == 0.0
