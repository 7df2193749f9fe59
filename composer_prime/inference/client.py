"""Async client for the inference server's native protocol (see protocol.py)."""

from __future__ import annotations

import asyncio
import time
from typing import TypeVar

import httpx
from pydantic import BaseModel

from composer_prime.errors import UserError
from composer_prime.inference.protocol import (PROTOCOL_VERSION, GenerateRequest, GenerateResponse, HealthResponse,
                                               ScoreRequest, ScoreResponse, UpdateWeightsRequest, UpdateWeightsResponse)

T = TypeVar("T", bound=BaseModel)


class InferenceClient:
    """One connection pool to one server; safe to share between concurrent tasks."""

    def __init__(self, base_url: str, timeout_s: float = 600.0):
        self.base_url = base_url.rstrip("/")
        self._http = httpx.AsyncClient(base_url=self.base_url, timeout=timeout_s)

    async def __aenter__(self) -> InferenceClient:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _call(self, route: str, answer: type[T], body: BaseModel | None = None) -> T:
        """GET `route` (POST `body` to it), raise on an HTTP error, parse the answer."""
        if body is None:
            response = await self._http.get(route)
        else:
            response = await self._http.post(route, json=body.model_dump())
        response.raise_for_status()
        return answer.model_validate(response.json())

    async def health(self) -> HealthResponse:
        return await self._call("/health", HealthResponse)

    async def wait_until_ready(self, timeout_s: float = 300.0, poll_s: float = 0.5) -> HealthResponse:
        """Poll /health until the server answers; a protocol mismatch is a user error."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                health = await self.health()
            except (httpx.TransportError, httpx.HTTPStatusError):
                if time.monotonic() > deadline:
                    raise UserError(f"inference server at {self.base_url} did not become ready in {timeout_s:.0f}s")
                await asyncio.sleep(poll_s)
                continue
            if health.protocol_version != PROTOCOL_VERSION:
                raise UserError(
                    f"inference server speaks protocol v{health.protocol_version}, this client v{PROTOCOL_VERSION}"
                )
            return health

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        return await self._call("/generate", GenerateResponse, request)

    async def score(self, request: ScoreRequest) -> ScoreResponse:
        return await self._call("/score", ScoreResponse, request)

    async def update_weights(self, path: str, version: int) -> int:
        request = UpdateWeightsRequest(path=path, version=version)
        return (await self._call("/update_weights", UpdateWeightsResponse, request)).weight_version
