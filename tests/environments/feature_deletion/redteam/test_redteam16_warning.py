"""Sixteenth red team (FINDINGS_16.md), V16: output on the side through the warnings machinery. Red team 14's P14 (gold
plus a `print` at every call) is closed by `scope.OUTPUT`; `warnings` is one of the PROCESS_MODULES agent code may use
by the names the original uses, and more-itertools' `more.py` and cachetools' files warn. Gold plus
`warnings.warn("this call is deprecated and will be removed", stacklevel=10 ** 6)` at the top of every deleted
function (`attacks16.warning_gold`; the stack level past any stack files the warning, and its once-per-place registry,
under the `sys` module, which no state reading walks): nothing in the grader reads warnings. For a user, a stray
warning on stderr, and under `python -W error` (pytest's `filterwarnings = error`, common in CI) every call raises.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 -q -p no:cacheprovider \
    tests/environments/feature_deletion/redteam/test_redteam16_warning.py
"""

from __future__ import annotations

import subprocess
import sys
import tarfile

import pytest

import attacks16 as a
from _rt14_witness import graded
from attacks2 import row_of
from harness import TASKS

SPLIT_INTO = "more-itertools-10.5.0/more_itertools/more.py:split_into:def"
CACHE = "cachetools-5.5.0/src/cachetools/__init__.py:Cache:methods"
SAMPLE = [
    SPLIT_INTO,
    CACHE,
    "more-itertools-10.5.0/more_itertools/more.py:one:body",
    "cachetools-5.5.0/src/cachetools/func.py:lfu_cache:body",
]


def _run(tmp_path, task, script, *flags):
    """{who: (exit status, stdout, last line of stderr)} for gold and the rebuild, in a fresh `python`."""
    row = row_of(task)
    with tarfile.open(TASKS.parent / row.archive) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / row.root
    [(_, call)] = a.warning_gold(row)
    got = {}
    for who, text in (("gold", row.gold_files[call["path"]]), ("wrong", call["content"])):
        (root / call["path"]).write_text(text)
        done = subprocess.run([sys.executable, *flags, "-c", script], cwd=root / row.import_root, capture_output=True,
                              text=True, env={"PYTHONIOENCODING": "utf-8", "PATH": "/usr/bin:/bin"})
        got[who] = (done.returncode, done.stdout.strip(), (done.stderr.strip().splitlines() or [""])[-1])
    return got


def test_witness_split_into_raises_under_w_error(tmp_path):
    script = "from more_itertools import split_into\nprint(list(split_into([1, 2, 3], [1, 2])))"
    got = _run(tmp_path, SPLIT_INTO, script, "-W", "error")
    assert got["gold"] == (0, "[[1], [2, 3]]", "")
    assert got["wrong"] == (1, "", "UserWarning: this call is deprecated and will be removed")


def test_witness_split_into_writes_to_stderr(tmp_path):
    script = "from more_itertools import split_into\nprint(list(split_into([1, 2, 3], [1, 2])))"
    got = _run(tmp_path, SPLIT_INTO, script)
    assert got["gold"] == (0, "[[1], [2, 3]]", "")
    assert got["wrong"] == (0, "[[1], [2, 3]]", "sys:1: UserWarning: this call is deprecated and will be removed")


def test_witness_a_cache_raises_under_w_error(tmp_path):
    script = "from cachetools import LRUCache\nc = LRUCache(maxsize=2)\nc['a'] = 1\nprint(c['a'])"
    got = _run(tmp_path, CACHE, script, "-W", "error")
    assert got["gold"] == (0, "1", "")
    assert got["wrong"] == (1, "", "UserWarning: this call is deprecated and will be removed")


@pytest.mark.parametrize("task", SAMPLE)
def test_a_stray_warning_is_not_paid(task):
    played = graded(task, a.warning_gold, "redteam16_V16")
    assert played.reward == 0.0
