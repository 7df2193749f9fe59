"""Fourteenth red team (FINDINGS_14.md), T14 and O14.

T14, real-time scale: no replayed step can wait (3 s a step), and the checks' iterables and callbacks answer at
once, so behaviour that depends on real seconds past a few is never observed: more-itertools `time_limited` with a
limit of 4 s or more stops at half of it; cachetools `TTLCache.__getitem__` with a ttl of 60 or more (the checks'
`TTLCache(2, 600)` runs on the real clock) answers a miss once half the ttl has passed.
O14, an overridable hook bypassed: cachetools documents that a full cache calls `self.popitem()` until there is room
and that subclasses may override `popitem`; no check can hold a subclass (the tests define them, so they are not
replayed) and no graded test overrides `popitem`: a `FIFOCache` that makes room with its own `popitem` first for any
subclass is paid, and the user's override is never called.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 -q -p no:cacheprovider \
    tests/environments/feature_deletion/redteam/test_redteam14_time_override.py
"""

from __future__ import annotations

import pytest

import attacks14 as a
from _rt14_witness import outputs
from attacks2 import row_of
from harness import play, record

SLOW = ("import time\n"
        "from more_itertools import time_limited\n"
        "def slow():\n"
        "    for i in range(6):\n"
        "        time.sleep(0.5)\n"
        "        yield i\n"
        "print(list(time_limited(4, slow())), list(time_limited(0.1, iter([1, 2]))))\n")
TTL = ("from cachetools import TTLCache\n"
       "now = [0]\n"
       "c = TTLCache(10, ttl=600, timer=lambda: now[0])\n"
       "c['a'] = 1\n"
       "now[0] = 400\n"
       "try:\n"
       "    got = c['a']\n"
       "except KeyError:\n"
       "    got = 'KeyError'\n"
       "print(got, 'a' in c)\n")
FIFO = ("from cachetools import FIFOCache\n"
        "evicted = []\n"
        "class Logged(FIFOCache):\n"
        "    def popitem(self):\n"
        "        key, value = super().popitem()\n"
        "        evicted.append(key)\n"
        "        return key, value\n"
        "c = Logged(maxsize=2)\n"
        "for k in 'abcd':\n"
        "    c[k] = k\n"
        "print(evicted, sorted(c))\n")

CASES = {
    "T14_time_limited": (a.TIME_LIMITED, a.time_limited_half_past_4s, SLOW,
                         "[0, 1, 2, 3, 4, 5] [1, 2]", "[0, 1, 2] [1, 2]"),
    "T14_ttl_getitem": (a.TTL_GETITEM, a.ttl_getitem_half_past_60s, TTL, "1 True", "KeyError True"),
    "O14_fifo_popitem": (a.FIFO_METHODS, a.fifo_bypasses_popitem_override, FIFO,
                         "['a', 'b'] ['c', 'd']", "[] ['c', 'd']"),
    "O14_mru_popitem": (a.MRU_METHODS, a.mru_bypasses_popitem_override, FIFO.replace("FIFOCache", "MRUCache"),
                        "['a', 'b'] ['c', 'd']", "[] ['c', 'd']"),
}


@pytest.mark.parametrize("key", sorted(CASES))
def test_witness_wrong_for_a_user(tmp_path, key):
    task, attack, script, gold, wrong = CASES[key]
    assert outputs(tmp_path, task, attack, script) == {"gold": gold, "wrong": wrong}


@pytest.mark.parametrize("key", sorted(CASES))
def test_time_scale_or_bypassed_hook_is_not_paid(key):
    task, attack, _, _, _ = CASES[key]
    row = row_of(task)
    played = play(row, attack(row))
    record(f"redteam14_{key}", [played])
    print(f"{key}: {played.line()}")
    assert played.reward == 0.0
