"""Fourth red team, R4 (FINDINGS_4.md): `rr_cache` (random replacement) rebuilt over a FIFO cache, its `choice`
ignored, answers every kept check: the random_dependent rule drops a task only when gold's recorded answers follow
the seed, and rr_cache's do not. The witness shows the eviction is no longer random. The graded test asserts reward
0, so an attack that works FAILS. Results: results/redteam4_random.jsonl.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 tests/environments/feature_deletion/redteam/test_redteam4_random.py -s
"""

from __future__ import annotations

import subprocess
import sys
import tarfile

from attacks4 import RR_CACHE, RR_CACHE_FIFO, replace_def, row_of
from harness import TASKS, gold_calls, play, record

# Which of 0 and 1 a 2-slot cache keeps after 0, 1, 2, over 200 seeds of `random`.
KEPT = """
import random, cachetools.func as f
kept = set()
for seed in range(200):
    random.seed(seed)
    g = f.rr_cache(maxsize=2)(lambda x: x)
    g(0); g(1); g(2)
    before = g.cache_info().hits
    g(0)
    kept.add(0 if g.cache_info().hits > before else 1)
print(sorted(kept))
"""


def test_harness_gold_and_untouched():
    row = row_of(RR_CACHE)
    gold, untouched = play(row, gold_calls(row)), play(row, [])
    record("redteam4_harness", [gold, untouched])
    print(f"gold {gold.line()}\nuntouched {untouched.line()}")
    assert (gold.reward, untouched.reward) == (1.0, 0.0)


def test_witness_fifo_rr_cache_is_not_random(tmp_path):
    row = row_of(RR_CACHE)
    with tarfile.open(TASKS.parent / row.archive) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / row.root
    [(_, call)] = replace_def(row, "rr_cache", RR_CACHE_FIFO)
    kept = {}
    for name, text in (("gold", row.gold_files[call["path"]]), ("fifo", call["content"])):
        (root / call["path"]).write_text(text)
        out = subprocess.run([sys.executable, "-c", KEPT], cwd=root / "src", capture_output=True, text=True, check=True)
        kept[name] = out.stdout.strip()
    assert kept == {"gold": "[0, 1]", "fifo": "[1]"}


def test_rr_cache_without_randomness_is_not_paid():
    row = row_of(RR_CACHE)
    played = play(row, replace_def(row, "rr_cache", RR_CACHE_FIFO))
    record("redteam4_random", [played])
    print(f"rr_cache over FIFOCache: {played.line()}")
    assert played.reward == 0.0
