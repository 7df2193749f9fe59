"""Async client for the inference server's native protocol (see protocol.py)."""

from __future__ import annotations

import asyncio
import time

import httpx

from composer_prime.errors import UserError
from composer_prime.inference.protocol import (
    PROTOCOL_VERSION,
    GenerateRequest,
    GenerateResponse,
    HealthResponse,
    ScoreRequest,
    ScoreResponse,
    UpdateWeightsRequest,
    UpdateWeightsResponse,
)


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

    async def health(self) -> HealthResponse:
        response = await self._http.get("/health")
        response.raise_for_status()
        return HealthResponse.model_validate(response.json())

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
        response = await self._http.post("/generate", json=request.model_dump())
        response.raise_for_status()
        return GenerateResponse.model_validate(response.json())

    async def score(self, request: ScoreRequest) -> ScoreResponse:
        response = await self._http.post("/score", json=request.model_dump())
        response.raise_for_status()
        return ScoreResponse.model_validate(response.json())

    async def update_weights(self, path: str, version: int) -> int:
        body = UpdateWeightsRequest(path=path, version=version).model_dump()
        response = await self._http.post("/update_weights", json=body)
        response.raise_for_status()
        return UpdateWeightsResponse.model_validate(response.json()).weight_version
