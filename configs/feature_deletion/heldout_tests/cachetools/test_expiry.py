"""Held-out tests for cachetools, written for the task set and never put in an agent's workspace: the builder records
them on the gold code as held-out programs (`fd-validate TASKS --record-checks --heldout-tests
configs/feature_deletion/heldout_tests`). cachetools' own tests never ask a timed cache anything right after some of
its entries, but not all, have expired; a rebuild that forgets to expire first (popitem, repr, currsize, iteration)
passes them. Nor do they ask the function caches for their default size (`rr_cache()` with 127 passes them).
"""

import cachetools
import cachetools.func
import pytest


class Clock:
    """A timer the test sets by hand."""

    def __init__(self):
        self.t = 0

    def __call__(self):
        return self.t


def _caches(tm):
    return [cachetools.TTLCache(maxsize=3, ttl=1, timer=tm),
            cachetools.TLRUCache(maxsize=3, ttu=lambda key, value, now: now + 1, timer=tm)]


def _half_expired(tm, cache):
    """`cache` with "a" expired and "b" still live (time 1.2, ttl 1)."""
    tm.t = 0
    cache["a"] = 1
    tm.t = 0.5
    cache["b"] = 2
    tm.t = 1.2
    return cache


def test_popitem_after_the_oldest_entry_expired():
    tm = Clock()
    for cache in _caches(tm):
        assert _half_expired(tm, cache).popitem() == ("b", 2)


def test_popitem_after_every_entry_expired():
    tm = Clock()
    for cache in _caches(tm):
        tm.t = 0
        cache["a"] = 1
        cache["b"] = 2
        tm.t = 5
        with pytest.raises(KeyError):
            cache.popitem()
        assert len(cache) == 0


def test_what_a_cache_shows_after_some_entries_expired():
    tm = Clock()
    for cache in _caches(tm):
        _half_expired(tm, cache)
        assert repr(cache).endswith("currsize=1)")
        assert cache.currsize == 1
        assert len(cache) == 1
        assert "a" not in cache and cache.get("a") is None and cache["b"] == 2
        tm.t = 3
        assert cache.currsize == 0 and len(cache) == 0


def test_iterating_after_some_entries_expired():
    tm = Clock()
    for cache in _caches(tm):
        _half_expired(tm, cache)
        assert list(cache) == ["b"]
        assert list(cache.keys()) == ["b"] and list(cache.items()) == [("b", 2)]


def test_a_full_cache_drops_expired_entries_before_evicting_live_ones():
    tm = Clock()
    for cache in _caches(tm):
        tm.t = 0
        cache["a"] = 1
        cache["b"] = 2
        tm.t = 0.6
        cache["c"] = 3
        tm.t = 1.1
        cache["d"] = 4
        cache["e"] = 5
        assert sorted(cache) == ["c", "d", "e"]
        assert cache.expire(1.7) in ([("c", 3)], [])
        tm.t = 2.5
        assert cache.expire() == [("d", 4), ("e", 5)] or len(cache) == 0


def test_the_function_caches_default_size():
    for decorator in (cachetools.func.fifo_cache, cachetools.func.lfu_cache, cachetools.func.lru_cache,
                      cachetools.func.mru_cache, cachetools.func.rr_cache, cachetools.func.ttl_cache):
        cached = decorator()(abs)
        assert cached.cache_parameters() == {"maxsize": 128, "typed": False}
        assert cached(-1) == cached(1) == 1
        assert cached.cache_info().maxsize == 128
