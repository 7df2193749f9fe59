"""Red team: wrong implementations paid 1.0 (mutants of gold found by `mutants.py`, each with a witness input on
which it answers unlike gold). Each is played end to end through `ToolSession` (write_file, submit, finish).
The tests assert the defence (reward 0): while a wrong rebuild is paid they FAIL.

Reproduce: uv run pytest tests/environments/feature_deletion/redteam/test_wrong_code_paid.py -q
(the sweep that found them: python tests/environments/feature_deletion/redteam/mutants.py all 6)
"""

from __future__ import annotations

import pytest
from harness import play, rows
from mutants import mutants

# task id, mutant label (mutants.py), why it is wrong (a witness input, checked by test_witness_*).
PAID = [
    ("inflection-0.5.1/inflection/__init__.py:underscore:body", "underscore:drop#2",
     "word.replace('-', '_') dropped: underscore('foo-bar') is 'foo-bar', gold 'foo_bar'"),
    ("more-itertools-10.5.0/more_itertools/more.py:_sample_counted:body", "_sample_counted:boolop#0",
     "`strict and len(reservoir) < k` became `or`: sample('abc', 2, counts=[1, 1, 1], strict=True) raises ValueError"),
    ("more-itertools-10.5.0/more_itertools/more.py:ichunked:def", "ichunked:drop#0",
     "`iterable = iter(iterable)` dropped: ichunked([1, 2, 3, 4, 5], 2) yields [1, 2] forever"),
]


def _mutant(task_id: str, label: str):
    row = next(r for r in rows() if r.id == task_id)
    files = dict(mutants(row, 10_000))[label]
    return row, files


@pytest.mark.parametrize("task_id, label, why", PAID, ids=[p[1] for p in PAID])
def test_wrong_rebuild_is_paid_nothing(task_id, label, why):
    row, files = _mutant(task_id, label)
    played = play(row, [("write_file", {"path": rel, "content": text}) for rel, text in files.items()])
    print(played.line())
    assert played.reward == 0.0, f"paid {played.reward} for a wrong rebuild ({why}): {played.line()}"


def _load(text: str, name: str):
    namespace: dict = {"__name__": name}
    exec(compile(text, name, "exec"), namespace)  # noqa: S102 - the task's own source, on the host, to show a witness
    return namespace


def test_witness_underscore():
    row, files = _mutant(*PAID[0][:2])
    gold = _load(row.gold_files["inflection/__init__.py"], "gold")
    wrong = _load(files["inflection/__init__.py"], "mutant")
    assert gold["underscore"]("foo-bar") == "foo_bar" and wrong["underscore"]("foo-bar") == "foo-bar"


def _function(text: str, name: str):
    import ast

    tree = ast.parse(text)
    node = next(n for n in tree.body if getattr(n, "name", "") == name)
    return ast.get_source_segment(text, node)


def test_witness_sample_counted():
    from contextlib import suppress
    from math import exp, floor, log, log1p
    from random import random, randrange, shuffle

    row, files = _mutant(*PAID[1][:2])
    path = "more_itertools/more.py"
    env = {"suppress": suppress, "exp": exp, "floor": floor, "log": log, "log1p": log1p, "random": random,
           "randrange": randrange, "shuffle": shuffle}
    gold = _load(_function(row.gold_files[path], "_sample_counted"), "gold") | env
    wrong = _load(_function(files[path], "_sample_counted"), "mutant") | env
    gold_fn, wrong_fn = gold["_sample_counted"], wrong["_sample_counted"]
    gold_fn.__globals__.update(env)
    wrong_fn.__globals__.update(env)
    # sample("abc", 2, counts=[1, 1, 1], strict=True): a population of 3 is large enough for 2.
    assert len(gold_fn(iter("abc"), 2, iter([1, 1, 1]), True)) == 2
    with pytest.raises(ValueError):
        wrong_fn(iter("abc"), 2, iter([1, 1, 1]), True)


def test_witness_ichunked():
    """ichunked on a list: gold [[1, 2], [3, 4], [5]]; the paid mutant repeats the first chunk without end."""
    import itertools
    import subprocess
    import sys
    import tarfile
    import tempfile
    from pathlib import Path

    from harness import TASKS

    row, files = _mutant(*PAID[2][:2])
    code = ("import itertools\nfrom more_itertools import ichunked\n"
            "print([list(c) for c in itertools.islice(ichunked([1, 2, 3, 4, 5], 2), 4)])")
    seen = {}
    for name, text in (("gold", row.gold_files["more_itertools/more.py"]), ("mutant", files["more_itertools/more.py"])):
        with tempfile.TemporaryDirectory() as tmp:
            with tarfile.open(TASKS.parent / "repos" / "more_itertools-10.5.0.tar.gz") as tar:
                tar.extractall(tmp, filter="data")
            root = Path(tmp) / "more-itertools-10.5.0"
            (root / "more_itertools/more.py").write_text(text)
            seen[name] = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                                        env={"PYTHONPATH": str(root)}).stdout.strip()
    assert seen == {"gold": "[[1, 2], [3, 4], [5]]", "mutant": "[[1, 2], [1, 2], [1, 2], [1, 2]]"}, seen
    del itertools
