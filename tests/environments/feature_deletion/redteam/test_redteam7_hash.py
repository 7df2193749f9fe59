"""Seventh red team, H7 (FINDINGS_7.md): cachetools `_HashedTuple.__hash__` rebuilt as the tuple's hash `^ 1`. The
recorder skips `__hash__` (and `__eq__`), so no check asks for a hash; hashkeys still agree among themselves, so every
test passes. But a hashkey equals the plain tuple of its arguments and no longer hashes like it: a dict keyed by
`(1, 2)` does not find `hashkey(1, 2)` (gold finds it). Graded test asserts reward 0 (an attack that works FAILS); the
witness shows the difference on the host. Harness: gold 1.0, untouched 0.0 on the same task.
Results: results/redteam7_hash.jsonl.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 tests/environments/feature_deletion/redteam/test_redteam7_hash.py -s
"""

from __future__ import annotations

import subprocess
import sys
import tarfile

from attacks2 import row_of
from attacks7 import HASHED_TUPLE, hashed_tuple_off_by_one
from harness import TASKS, gold_calls, play, record

SCRIPT = """
from cachetools.keys import hashkey
print({(1, 2): "found"}.get(hashkey(1, 2)), hashkey(1, 2) == (1, 2), hash(hashkey(1, 2)) == hash((1, 2)))
"""


def test_harness_gold_and_untouched():
    row = row_of(HASHED_TUPLE)
    gold, untouched = play(row, gold_calls(row)), play(row, [])
    record("redteam7_harness", [gold, untouched])
    assert (gold.reward, untouched.reward) == (1.0, 0.0), (gold.line(), untouched.line())


def test_witness_hashkey_breaks_hash_eq_contract(tmp_path):
    row = row_of(HASHED_TUPLE)
    with tarfile.open(TASKS.parent / row.archive) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / row.root
    [(_, call)] = hashed_tuple_off_by_one(row)
    got = {}
    for who, text in (("gold", row.gold_files[call["path"]]), ("wrong", call["content"])):
        (root / call["path"]).write_text(text)
        out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=root / "src", capture_output=True, text=True,
                             check=True)
        got[who] = out.stdout.strip()
    assert got == {"gold": "found True True", "wrong": "None True False"}


def test_hash_off_by_one_is_not_paid():
    row = row_of(HASHED_TUPLE)
    played = play(row, hashed_tuple_off_by_one(row))
    record("redteam7_hash", [played])
    print(f"H7 _HashedTuple hash ^ 1: {played.line()}")
    assert played.reward == 0.0
