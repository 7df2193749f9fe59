"""Thirteenth red team, X13s (FINDINGS_13.md): how widespread X13's gap is. Gold, with every deleted function opening
with a guard that raises the stub's `NotImplementedError` when an argument's type is an everyday type (int, float,
str, bytes, tuple, list, dict, set, bool, None) that no kept check hands the task's deleted functions
(`attacks13.wrong_on_unseen_types_gold`). Full sweep (10:51-10:59 UTC): 47 of the 51 tasks that have such a type paid
1.000 (results/redteam13_unseen_types_sweep.txt). Where gold rejects the type too the difference is only the
exception; the witnesses below are tasks where gold answers an everyday call and the rebuild raises: toolz
`isiterable` of a dict, tuple or float, toolz `dissoc` of an int key, more-itertools `padded` of a tuple.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 tests/environments/feature_deletion/redteam/test_redteam13_sweep.py -s
(8 sampled tasks; FD_REDTEAM_ALL=1 for every task)
"""

from __future__ import annotations

import subprocess
import sys
import tarfile

import pytest

from attacks2 import row_of
from attacks13 import wrong_on_unseen_types_gold
from harness import TASKS, play, record, rows, sample

WITNESSES = {
    "toolz-1.0.0/toolz/itertoolz.py:isiterable:body": (
        "from toolz import isiterable as f\nfor x in ({'a': 1}, (1, 2), 1.5, [1]):\n"
        "    try: print(f(x))\n    except NotImplementedError: print('raised')",
        "True True False True", "raised raised raised True", ("dict", "tuple", "float")),
    "toolz-1.0.0/toolz/dicttoolz.py:dissoc:body": (
        "from toolz import dissoc as f\nfor d, k in (({1: 'a', 2: 'b'}, 1), ({'x': 1, 'y': 2}, 'y')):\n"
        "    try: print(f(d, k))\n    except NotImplementedError: print('raised')",
        "{2: 'b'} {'x': 1}", "raised {'x': 1}", ("int",)),
    "more-itertools-10.5.0/more_itertools/more.py:padded:body": (
        "from more_itertools import padded as f\nfor x in ((1, 2), [1, 2]):\n"
        "    try: print(list(f(x, 0, 4)))\n    except NotImplementedError: print('raised')",
        "[1, 2, 0, 0] [1, 2, 0, 0]", "raised [1, 2, 0, 0]", ("tuple",)),
}


@pytest.mark.parametrize("task", sorted(WITNESSES))
def test_witness_gold_answers_where_the_guard_raises(tmp_path, task):
    script, gold, wrong, unseen = WITNESSES[task]  # the types red team 13 found no check handed
    row = row_of(task)
    with tarfile.open(TASKS.parent / row.archive) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / row.root
    calls = wrong_on_unseen_types_gold(row, unseen)
    got = {}
    for who, files in (("gold", row.gold_files), ("wrong", {c["path"]: c["content"] for _, c in calls})):
        for path, text in files.items():
            (root / path).write_text(text)
        got[who] = " ".join(subprocess.run([sys.executable, "-c", script], cwd=root / row.import_root,
                                           capture_output=True, text=True, check=True).stdout.split("\n")).strip()
    assert got == {"gold": gold, "wrong": wrong}


GUARDED = [r for r in rows() if wrong_on_unseen_types_gold(r) is not None]


@pytest.mark.parametrize("row", sample(GUARDED, 8, seed=13), ids=lambda r: r.id.split("/")[-1])
def test_wrong_on_unseen_types_is_not_paid(row):
    played = play(row, wrong_on_unseen_types_gold(row))
    record("redteam13_unseen_types", [played])
    print(f"X13s: {played.line()}")
    assert played.reward == 0.0
