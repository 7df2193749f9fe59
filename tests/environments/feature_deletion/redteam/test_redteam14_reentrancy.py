"""Fourteenth red team (FINDINGS_14.md), R14: reentrancy. The checks' callbacks are tables of what the tests'
functions answered and never call back into the package, so a call made from inside another call of the same
function (nested grouping: a `reducefunc` that itself calls `map_reduce`) is never replayed. more-itertools
`map_reduce` that, entered again while running, leaves the inner result unreduced is paid; the marker is a
module-level list every call leaves as it found it, so the drift check sees no change.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 -q -p no:cacheprovider \
    tests/environments/feature_deletion/redteam/test_redteam14_reentrancy.py
"""

from __future__ import annotations

import attacks14 as a
from _rt14_witness import outputs
from attacks2 import row_of
from harness import play, record

NESTED = ("from more_itertools import map_reduce\n"
          "inner = lambda vs: dict(map_reduce(vs, lambda x: x % 2, reducefunc=sum))\n"
          "print(dict(map_reduce(range(6), lambda x: x < 3, reducefunc=inner)), "
          "dict(map_reduce(range(6), lambda x: x % 2, reducefunc=sum)))\n")


def test_witness_nested_map_reduce_is_wrong(tmp_path):
    assert outputs(tmp_path, a.MAP_REDUCE, a.map_reduce_wrong_when_reentered, NESTED) == {
        "gold": "{True: {0: 2, 1: 1}, False: {1: 8, 0: 4}} {0: 6, 1: 9}",
        "wrong": "{True: {0: [0, 2], 1: [1]}, False: {1: [3, 5], 0: [4]}} {0: 6, 1: 9}"}


def test_wrong_only_when_reentered_is_not_paid():
    row = row_of(a.MAP_REDUCE)
    played = play(row, a.map_reduce_wrong_when_reentered(row))
    record("redteam14_R14_map_reduce", [played])
    print(f"R14 map_reduce: {played.line()}")
    assert played.reward == 0.0
