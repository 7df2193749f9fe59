"""Red team 18 (FINDINGS_18.md), U18: a time bomb on the host's uptime. Gold with `_rt18_uptime()` first in every
deleted function (`attacks18u.uptime_gold`): the stub's `NotImplementedError` once `time.monotonic()` (seconds since
the machine booted, on Linux) passes 30 days. No replay fakes the clock and grading machines are young, so it is paid;
the witness runs the same script in a time namespace whose monotonic clock is 31 days ahead (`unshare --time`).

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 -q -p no:cacheprovider \
    tests/environments/feature_deletion/redteam/test_redteam18_uptime.py
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

import attacks18u as a
from _rt14_witness import CATCH, graded, outputs

TTL_GETITEM = "cachetools-5.5.0/src/cachetools/__init__.py:TTLCache.__getitem__:body"
SPLIT_INTO = "more-itertools-10.5.0/more_itertools/more.py:split_into:def"
CACHE_METHODS = "cachetools-5.5.0/src/cachetools/__init__.py:Cache:methods"
AHEAD = ("unshare", "--fork", "--time", "--monotonic", str(31 * 86_400))


def _time_namespaces() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run([*AHEAD, "true"], capture_output=True).returncode == 0


needs_ns = pytest.mark.skipif(not _time_namespaces(), reason="needs `unshare --time` (root, Linux >= 5.6)")


@needs_ns
def test_witness_ttl_cache_lookup_fails_on_a_host_up_31_days(tmp_path):
    script = "from cachetools import TTLCache\nc = TTLCache(maxsize=10, ttl=600)\nc['a'] = 1\n" + CATCH.format(
        expr="c['a']")
    assert outputs(tmp_path, TTL_GETITEM, a.uptime_gold, script) == {"gold": "1", "wrong": "1"}
    assert outputs(tmp_path, TTL_GETITEM, a.uptime_gold, script, AHEAD) == {
        "gold": "1", "wrong": "NotImplementedError: this feature was deleted; rebuild it"}


@needs_ns
def test_witness_split_into_fails_on_a_host_up_31_days(tmp_path):
    script = "from more_itertools import split_into\n" + CATCH.format(expr="list(split_into([1, 2, 3], [1, 2]))")
    assert outputs(tmp_path, SPLIT_INTO, a.uptime_gold, script, AHEAD) == {
        "gold": "[[1], [2, 3]]", "wrong": "NotImplementedError: this feature was deleted; rebuild it"}


@pytest.mark.parametrize("task", [TTL_GETITEM, SPLIT_INTO, CACHE_METHODS])
def test_a_rebuild_wrong_after_30_days_of_uptime_is_not_paid(task):
    played = graded(task, a.uptime_gold, "redteam18_U18")
    assert played.reward == 0.0
