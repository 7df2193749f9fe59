"""Third red team, R and A (FINDINGS_3.md): randomness and identity, which the checks cannot judge.

R: at build time a step is kept only where two gold runs (`random` seeded 0 and 1) answer alike, and the replay seeds
`random` with 0: the kept checks of a random feature are the steps a small population makes agree, which any rebuild
that draws from the first few items, or does not draw at all, answers like gold. cachetools `RRCache.popitem` (random
replacement) rebuilt as FIFO eviction (the default `random.choice` never called) or drawing among the first 8 keys
only is paid 1.0.

A: results are encoded by value, so identity is never observed: toolz `dissoc` that returns the caller's own dict when
no key is removed (aliasing: "Return a new dict" broken) is paid 1.0.

`test_witness` shows each paid rebuild is wrong (run on the host from the task's own source). Each paid test asserts
the defence (reward 0), so an attack that works FAILS.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 tests/environments/feature_deletion/redteam/test_redteam3_paid.py -s
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from attacks2 import replace_stub
from attacks3 import (DISSOC, DISSOC_ALIASES, MERGE, RR_FIRST_EIGHT, RR_NOT_RANDOM, RR_POPITEM, merge_drains_lists,
                      row_of)
from harness import TASKS, gold_calls, play, record

from feature_deletion.task import TaskRow, apply_files, materialize

EVICTED = """
import random
from cachetools import RRCache
evicted = set()
for seed in range(200):
    random.seed(seed)
    cache = RRCache(maxsize={size})
    for key in range({size} + 1):
        cache[key] = key
    evicted |= set(range({size})) - set(cache)
print({show})
"""
ALIASED = """
from toolz import dissoc
d = {"x": 1}
result = dissoc(d, "y")
result["z"] = 2
print(d)
"""
# attack name, task, its body, witness program, gold's output, the wrong rebuild's output
CASES = [
    ("rr_popitem_not_random", RR_POPITEM, RR_NOT_RANDOM, EVICTED.format(size=2, show="sorted(evicted)"), "[0, 1]",
     "[0]"),
    ("rr_popitem_first_eight", RR_POPITEM, RR_FIRST_EIGHT, EVICTED.format(size=100, show="max(evicted) >= 8"),
     "True", "False"),
    ("dissoc_aliases_its_argument", DISSOC, DISSOC_ALIASES, ALIASED, "{'x': 1}", "{'x': 1, 'z': 2}"),
]
IDS = [c[0] for c in CASES]


def _dropped(task: str) -> str | None:
    """Why the bundled set left `task` out (the defence against R: `random_dependent`), or None if it is kept."""
    report = json.loads(TASKS.with_name("tasks.checks.json").read_text())
    return next((why for i, why in report["dropped_tasks"].items() if task in i), None)


def _row_or_skip(task: str) -> TaskRow:
    if _dropped(task):
        pytest.skip(f"{task} left the task set ({_dropped(task)}): nothing to play or witness")
    return row_of(task)


@pytest.mark.parametrize("task", [RR_POPITEM, DISSOC, MERGE])
def test_harness_gold_and_untouched(task):
    row = _row_or_skip(task)
    gold, untouched = play(row, gold_calls(row)), play(row, [])
    record("redteam3_harness", [gold, untouched])
    print(f"gold {gold.line()}\nuntouched {untouched.line()}")
    assert (gold.reward, untouched.reward) == (1.0, 0.0)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_rebuild_the_checks_cannot_tell_from_gold_is_not_paid(case):
    name, task, body = case[:3]
    if _dropped(task):  # the defence: a feature the checks cannot judge is not graded at all
        # left out as drawing from `random` (built so), or by hand where the checks cannot see where the draw is made
        assert _dropped(task).startswith(("random_dependent", "draw_unobserved")), _dropped(task)
        return
    row = row_of(task)
    played = play(row, replace_stub(row, body))
    record("redteam3_paid", [played])
    print(f"{name}: {played.line()}")
    assert played.reward == 0.0, f"{name} paid {played.reward:.3f}"


def _run(row: TaskRow, files: dict[str, str], code: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        root = materialize(row, TASKS.parent, Path(tmp) / "repo", git=False)
        apply_files(root, {rel: text.encode() for rel, text in files.items()})
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                              env={"PYTHONPATH": str(root / row.import_root)})
        return proc.stdout.strip() or proc.stderr.strip()[-300:]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_witness(case):
    """The paid rebuild is wrong: gold and it answer the witness differently (RRCache over 200 seeds: gold evicts keys
    the rebuild never does; dissoc: changing the result changes the caller's dict)."""
    _, task, body, code, gold_out, wrong_out = case
    row = _row_or_skip(task)
    ((_, call),) = replace_stub(row, body)
    assert _run(row, row.gold_files, code) == gold_out
    assert _run(row, {call["path"]: call["content"]}, code) == wrong_out


def test_a_merge_that_drains_the_callers_lists_is_not_paid():
    """toolz `_merge_sorted_binary` popping the heads off the caller's (distinct) lists: a generator's arguments are
    observed at the call, before it runs, yet the checks catch it (14 of 800 discriminating steps differ, a `next`
    first): defence holds today."""
    row = row_of(MERGE)
    played = play(row, merge_drains_lists(row))
    record("redteam3_paid", [played])
    print(f"merge drains lists: {played.line()}")
    assert played.reward == 0.0
