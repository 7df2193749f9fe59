"""Sixteenth red team (FINDINGS_16.md), H16: a call counter in a big int. `fd_calls._walk` (the drift check's reading
of every module-level name of the package) reads an int outside +-2**60 by `hash(x)`, and CPython's hash of an int is
its value modulo the Mersenne prime 2**61 - 1: a new private constant `[1 << 64]` to which every call adds 2**61 - 1
reads the same at the start and the end of the replay. With that memory, gold with a guard at the top of every
deleted function raising the stub's `NotImplementedError` from the 50,001st call of a process
(`attacks16.bigint_counted_gold`, task-agnostic): red team 11's B11 / 15's W15 time bomb, by a third route.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 -q -p no:cacheprovider \
    tests/environments/feature_deletion/redteam/test_redteam16_bigint.py
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import attacks16 as a
from _rt14_witness import LOOP, graded, outputs

ORDINAL = "inflection-0.5.1/inflection/__init__.py:ordinal:def"
FREQUENCIES = "toolz-1.0.0/toolz/itertoolz.py:frequencies:body"
SAMPLE = [
    ORDINAL,
    FREQUENCIES,
    "more-itertools-10.5.0/more_itertools/recipes.py:nth_combination:def",
    "more-itertools-10.5.0/more_itertools/more.py:split_into:def",
    "cachetools-5.5.0/src/cachetools/__init__.py:LRUCache.__init__:body",
    "toolz-1.0.0/toolz/functoolz.py:juxt:methods",
]
FD_CALLS = (Path(__file__).resolve().parents[4]
            / "environments/feature_deletion/feature_deletion/_sandbox_files/fd_calls.py")

def _walk_digest(value):
    spec = importlib.util.spec_from_file_location("_rt16_fd_calls", FD_CALLS)
    fd_calls = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fd_calls)
    return fd_calls._walk(value, set(), lambda x: True, {}, {}, True)


def test_the_drift_walk_tells_a_counted_big_int_apart():
    """The mechanism alone: the counter before any call and after 50,000 calls. FAILS while open (same digest)."""
    step = (1 << 61) - 1
    assert _walk_digest([1 << 64]) != _walk_digest([(1 << 64) + 50_000 * step])


def test_witness_ordinal_stops_after_50000_calls(tmp_path):
    script = "from inflection import ordinal\n" + LOOP.format(n=60_000, call="ordinal(i)")
    assert outputs(tmp_path, ORDINAL, a.bigint_counted_gold, script) == {
        "gold": "ok 60000", "wrong": "NotImplementedError at call 50001"}


def test_witness_frequencies_stops_after_50000_calls(tmp_path):
    script = "from toolz import frequencies\n" + LOOP.format(n=60_000, call="frequencies('ab')")
    assert outputs(tmp_path, FREQUENCIES, a.bigint_counted_gold, script) == {
        "gold": "ok 60000", "wrong": "NotImplementedError at call 50001"}


@pytest.mark.parametrize("task", SAMPLE)
def test_a_counter_in_a_big_int_is_not_paid(task):
    played = graded(task, a.bigint_counted_gold, "redteam16_H16")
    assert played.reward == 0.0
