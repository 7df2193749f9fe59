"""The weight version the coordinator announces: the newest one workers can actually fetch.

The trainer's run directory gets a version before broadcast.watch has sharded it into the store and
before the origin and relays serve it; announcing it then sends every worker into failing fetches.
So the announcement is the newest version any broadcast server lists (the origin lists the store),
never newer than the verifier's own newest (it must be able to check batches made with it). Without
broadcast servers (a single-machine run) it is the verifier's own.

The servers are third parties: none may stall the coordinator. They are asked in the background, all
at once, every `interval_s`; each answer must be a valid version list within `deadline_s` and 64 KiB
(utils/http.py, broadcast/manifest.py: parse_versions), else that server counts as listing nothing.
A join or heartbeat reads the last value and never waits on a server.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx

from composer_prime.broadcast.manifest import MAX_VERSIONS_ANSWER, BroadcastError, parse_versions
from composer_prime.utils.http import get_bounded

logger = logging.getLogger(__name__)


class HeldVersion:
    """`held()`: the version to announce now. `with held:` keeps it fresh in a background thread; `refresh()`
    asks the servers once."""

    def __init__(self, servers: list[str], local: Callable[[], int], deadline_s: float = 2.0, interval_s: float = 1.0):
        self.servers, self.local = [s.rstrip("/") for s in servers], local
        self.deadline_s, self.interval_s = deadline_s, interval_s
        self._served = -1
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._http = httpx.Client(timeout=httpx.Timeout(deadline_s))
        self._pool = ThreadPoolExecutor(max_workers=max(1, len(self.servers)), thread_name_prefix="held-version")

    def _newest(self, server: str) -> int:
        try:
            versions = parse_versions(get_bounded(self._http, f"{server}/versions", MAX_VERSIONS_ANSWER,
                                                  self.deadline_s))
        except (httpx.HTTPError, BroadcastError) as exc:
            logger.debug("broadcast server %s: %s", server, exc)
            return -1  # down, slow, or answering nonsense: the others may hold it
        return max(versions, default=-1)

    def refresh(self) -> None:
        self._served = max(self._pool.map(self._newest, self.servers), default=-1)

    def __call__(self) -> int:
        local = self.local()
        return local if not self.servers else min(local, self._served)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.refresh()
            self._stop.wait(self.interval_s)

    def __enter__(self) -> HeldVersion:
        if self.servers:
            self._thread = threading.Thread(target=self._loop, name="held-version", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.deadline_s + 5)
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._http.close()
