"""Keep the inference server on the newest published weight version, and let steps wait for versions.

A watcher task polls `weights.latest_version` and, whenever a newer version is complete on disk,
tells inference to load it, so rollouts pick up fresh weights even in the middle of a step.
Evaluations hold `frozen()` so the version cannot change under them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from composer_prime.errors import UserError
from composer_prime.inference.client import InferenceClient
from composer_prime.weights import latest_version, version_dir

logger = logging.getLogger(__name__)


class WeightSync:
    def __init__(self, client: InferenceClient, output_dir: Path, served: int, poll_s: float, timeout_s: float):
        self.client = client
        self.output_dir = Path(output_dir)
        self.served = served
        self.latest = latest_version(self.output_dir)
        self.poll_s = poll_s
        self.timeout_s = timeout_s
        self._lock = asyncio.Lock()
        self._changed = asyncio.Condition()

    async def refresh(self) -> None:
        """Load the newest version on disk into inference if it is newer than what it serves.

        `latest` moves only after the load, so a step gated on version v starts its rollouts on v."""
        latest = latest_version(self.output_dir)
        async with self._lock:
            if latest > self.served:
                try:
                    self.served = await self.client.update_weights(str(version_dir(self.output_dir, latest)), latest)
                    logger.info("inference now serves weight version %d", self.served)
                except httpx.HTTPStatusError as exc:
                    if exc.response.status_code != 404:
                        raise UserError(f"inference refused weight version {latest}: {exc.response.text}") from None
                    # The trainer pruned this version meanwhile; the next poll offers a newer one.
                    logger.warning("weight version %d vanished before inference could load it", latest)
        self.latest = latest
        async with self._changed:
            self._changed.notify_all()

    async def watch(self) -> None:
        while True:
            await self.refresh()
            await asyncio.sleep(self.poll_s)

    def frozen(self) -> asyncio.Lock:
        """Hold this lock to keep the served version fixed (no reload while held)."""
        return self._lock

    async def _wait(self, ready: Callable[[], bool], what: str) -> float:
        start = time.monotonic()
        async with self._changed:
            try:
                await asyncio.wait_for(self._changed.wait_for(ready), self.timeout_s)
            except TimeoutError:
                raise UserError(f"waited {self.timeout_s:.0f}s for {what}: is the trainer running?") from None
        return time.monotonic() - start

    async def wait_published(self, version: int) -> float:
        """Wait until weight version >= `version` is published; returns the seconds waited."""
        return await self._wait(lambda: self.latest >= version, f"weight version {version} to be published")

    async def wait_served(self, version: int) -> float:
        """Wait until inference serves version >= `version`; returns the seconds waited."""
        return await self._wait(lambda: self.served >= version, f"inference to serve weight version {version}")
