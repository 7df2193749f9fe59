"""Sliding-window rate limits for the coordinator's routes (grants, assignments, joins)."""

from __future__ import annotations

from collections import deque


class SlidingWindow:
    """At most `limit` events per key in any `window_s` seconds.

    Keys whose window emptied are forgotten once more than `max_keys` are held, so a caller that makes up
    keys (client addresses) cannot grow this without bound."""

    def __init__(self, limit: int, window_s: float = 3600.0, max_keys: int = 100_000):
        self.limit, self.window_s, self.max_keys = limit, window_s, max_keys
        self.events: dict[str, deque[float]] = {}

    def take(self, key: str, now: float) -> bool:
        """Count one event for `key` at `now` (monotonic seconds); False (and not counted) when over the limit."""
        if len(self.events) > self.max_keys:
            self.events = {k: t for k, t in self.events.items() if t and t[-1] > now - self.window_s}
        times = self.events.setdefault(key, deque())
        while times and times[0] <= now - self.window_s:
            times.popleft()
        if len(times) >= self.limit:
            return False
        times.append(now)
        return True
