"""Red team: wrong rebuilds paid 1.0. Mutants of gold found by `mutants.py` (all 62 bundled tasks, up to 6 mutants
each); each one here has a witness: a program on which gold and the mutant answer differently (run on the host from
the task's own sdist, `test_witness`). Each mutant is played end to end through `ToolSession` (write_file, submit,
finish): `test_wrong_rebuild_is_paid_nothing` asserts the defence (reward 0) and FAILS while a wrong rebuild is paid.

Reproduce: FD_REDTEAM=1 uv run pytest tests/environments/feature_deletion/redteam/test_wrong_code_paid.py -q
(the sweep that found them: .venv/bin/python tests/environments/feature_deletion/redteam/mutants.py all 6)
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest
from attacks2 import skip_if_dropped
from harness import TASKS, play, rows
from mutants import mutants

CLOCK = "class T:\n    def __init__(self):\n        self.t = 0\n    def __call__(self):\n        return self.t\ntm = T()\n"
EXPIRED = "c['a'] = 1\ntm.t = 0.5\nc['b'] = 2\ntm.t = 1.2\n"
# task (id suffix), mutant label (mutants.py), what changed, witness program, gold's output, the mutant's output
PAID = [
    ("underscore:body", "underscore:drop#2", "`word.replace('-', '_')` dropped",
     "from inflection import underscore\nprint(underscore('foo-bar'))", "foo_bar", "foo-bar"),
    ("_sample_counted:body", "_sample_counted:boolop#0", "`if strict and len(reservoir) < k` -> `or`",
     "from more_itertools import sample\ntry:\n    print(len(sample('abc', 2, counts=[1, 1, 1], strict=True)))\n"
     "except ValueError:\n    print('ValueError')", "2", "ValueError"),
    ("ichunked:def", "ichunked:drop#0", "`iterable = iter(iterable)` dropped",
     "import itertools\nfrom more_itertools import ichunked\n"
     "print([list(c) for c in itertools.islice(ichunked([1, 2, 3, 4, 5], 2), 4)])",
     "[[1, 2], [3, 4], [5]]", "[[1, 2], [1, 2], [1, 2], [1, 2]]"),
    ("TLRUCache.popitem:def", "TLRUCache.popitem:drop#0", "`self.expire(time)` dropped",
     CLOCK + "from cachetools import TLRUCache\nc = TLRUCache(maxsize=3, ttu=lambda k, v, now: now + 1, timer=tm)\n"
     + EXPIRED + "try:\n    print(c.popitem())\nexcept KeyError as e:\n    print('KeyError', e)", "('b', 2)", "KeyError 'a'"),
    ("TTLCache.popitem:body", "TTLCache.popitem:drop#0", "`self.expire(time)` dropped",
     CLOCK + "from cachetools import TTLCache\nc = TTLCache(maxsize=3, ttl=1, timer=tm)\n"
     + EXPIRED + "try:\n    print(c.popitem())\nexcept KeyError as e:\n    print('KeyError', e)", "('b', 2)", "KeyError 'a'"),
    ("_TimedCache:methods", "_TimedCache.currsize:drop#0", "`self.expire(time)` dropped from currsize",
     CLOCK + "from cachetools import TTLCache\nc = TTLCache(maxsize=3, ttl=1, timer=tm)\nc['a'] = 1\ntm.t = 5\n"
     "print(c.currsize)", "0", "1"),
    ("_TimedCache:methods", "_TimedCache.__repr__:drop#0", "`self.expire(time)` dropped from __repr__",
     CLOCK + "from cachetools import TTLCache\nc = TTLCache(maxsize=3, ttl=1, timer=tm)\nc['a'] = 1\ntm.t = 5\n"
     "print(repr(c))", "TTLCache({}, maxsize=3, currsize=0)", "TTLCache({'a': 1}, maxsize=3, currsize=1)"),
    ("lfu_cache:body", "lfu_cache:int#0", "default `maxsize=128` -> 129",
     "from cachetools.func import lfu_cache\nprint(lfu_cache()(abs).cache_parameters()['maxsize'])", "128", "129"),
    ("juxt:methods", "juxt.__init__:boolop#0", "`len(funcs) == 1 and not callable(funcs[0])` -> `or`",
     "from toolz import juxt\ntry:\n    print(juxt(abs)(-1))\nexcept TypeError:\n    print('TypeError')", "(1,)",
     "TypeError"),
    ("diff:body", "diff:if_true#3", "`if key is None:` -> `if True:` (the key is ignored)",
     "from toolz import diff\nprint(list(diff(['a', 'B'], ['A', 'b'], key=str.lower)))", "[]",
     "[('a', 'A'), ('B', 'b')]"),
]
SDIST = {"inflection": "inflection-0.5.1", "more": "more_itertools-10.5.0", "cachetools": "cachetools-5.5.0",
         "toolz": "toolz-1.0.0"}
IDS = [p[1] for p in PAID]


def _mutant(task_suffix: str, label: str):
    row = next((r for r in rows() if r.id.endswith(":" + task_suffix) or r.id.endswith(task_suffix)), None)
    if row is None:
        skip_if_dropped(task_suffix)
    return row, dict(mutants(row, 10_000))[label]


@pytest.mark.parametrize("case", PAID, ids=IDS)
def test_wrong_rebuild_is_paid_nothing(case):
    task, label, change = case[:3]
    row, files = _mutant(task, label)
    played = play(row, [("write_file", {"path": rel, "content": text}) for rel, text in files.items()])
    print(played.line())
    assert played.reward == 0.0, f"paid {played.reward} for a wrong rebuild ({change}): {played.line()}"


def _run(row, rel: str, text: str, code: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(TASKS.parent / "repos" / f"{SDIST[row.id.split('-')[0]]}.tar.gz") as tar:
            tar.extractall(tmp, filter="data")
        root = next(Path(tmp).iterdir())
        (root / rel).write_text(text)
        path = root / row.import_root if row.import_root else root
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                              env={"PYTHONPATH": str(path)})
        return proc.stdout.strip()


@pytest.mark.parametrize("case", PAID, ids=IDS)
def test_witness(case):
    """The paid mutant is really wrong: gold and the mutant answer the witness differently."""
    task, label, _, code, gold_out, mutant_out = case
    row, files = _mutant(task, label)
    (rel,) = files
    assert _run(row, rel, row.gold_files[rel], code) == gold_out
    assert _run(row, rel, files[rel], code) == mutant_out
