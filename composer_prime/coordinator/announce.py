"""The weight version the coordinator announces: the newest one workers can actually fetch.

The trainer's run directory gets a version before broadcast.watch has sharded it into the store and
before the origin and relays serve it; announcing it then sends every worker into failing fetches.
So the announcement is the newest version any broadcast server lists (the origin lists the store),
never newer than the verifier's own newest (it must be able to check batches made with it). Without
broadcast servers (a single-machine run) it is the verifier's own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import httpx

_TTL_S = 1.0  # heartbeats from many workers share one look at the servers


class HeldVersion:
    def __init__(self, servers: list[str], local: Callable[[], int], timeout_s: float = 2.0):
        self.servers, self.local, self.timeout_s = [s.rstrip("/") for s in servers], local, timeout_s
        self._lock = threading.Lock()
        self._cached: tuple[float, int] | None = None

    def _served(self) -> int:
        newest = -1
        for server in self.servers:
            try:
                versions = httpx.get(f"{server}/versions", timeout=self.timeout_s).json()
            except (httpx.HTTPError, ValueError):
                continue  # a server down or not serving yet: the others may hold it
            newest = max([newest, *(v for v in versions if isinstance(v, int))])
        return newest

    def __call__(self) -> int:
        local = self.local()
        if not self.servers:
            return local
        with self._lock:
            now = time.monotonic()
            if self._cached is None or now - self._cached[0] > _TTL_S:
                self._cached = (now, self._served())
            return min(local, self._cached[1])
