"""The inference HTTP app: native token routes, weight reloads, and the OpenAI-compatible routes.

Native protocol (protocol.py): GET /health, POST /generate, POST /score, POST /update_weights.
OpenAI-compatible (openai_compat.py): POST /v1/completions, POST /v1/chat/completions, GET /v1/models.
"""

from __future__ import annotations

import time

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse

from composer_prime.inference.backend import Backend, GenerationAborted
from composer_prime.inference.openai_compat import openai_router
from composer_prime.inference.protocol import (GenerateRequest, GenerateResponse, HealthResponse, ScoreRequest,
                                               ScoreResponse, UpdateWeightsRequest, UpdateWeightsResponse)
from composer_prime.utils.metrics import MetricsLogger


class Throughput:
    """Tokens served since the last report; every route that generates counts here."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._since = time.monotonic()
        self.requests = self.prompt_tokens = self.completion_tokens = 0

    def add(self, prompt_tokens: int, completion_tokens: int) -> None:
        """One request: its prompt (counted once, whatever its n) and all its completions."""
        self.requests += 1
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens

    def report(self) -> dict[str, float]:
        """Counts and rates over the interval since the previous report, then start a new one."""
        seconds = max(time.monotonic() - self._since, 1e-9)
        record = {"requests": self.requests, "prompt_tokens": self.prompt_tokens,
                  "completion_tokens": self.completion_tokens,
                  "completion_tokens_per_s": self.completion_tokens / seconds, "interval_s": seconds}
        self._reset()
        return record


def create_app(backend: Backend, metrics: MetricsLogger | None = None) -> FastAPI:
    """The app serving `backend`; with `metrics`, a throughput record is appended at each weight update."""
    app = FastAPI(title="composer-prime inference")
    throughput = Throughput()

    @app.exception_handler(GenerationAborted)
    async def aborted(_request: Request, exc: GenerationAborted) -> JSONResponse:
        # on every route that samples: the client may retry, and nothing half-generated is returned
        return JSONResponse(status_code=503, content={"detail": str(exc)})

    @app.get("/health")
    async def health() -> HealthResponse:
        return HealthResponse(weight_version=backend.weight_version, backend=backend.name, model=backend.model_name)

    @app.post("/generate")
    async def generate(request: GenerateRequest) -> GenerateResponse:
        try:
            response = await backend.generate(request)
        except ValueError as exc:
            raise HTTPException(status_code=400, detail=str(exc)) from None
        throughput.add(len(request.prompt_token_ids), sum(len(c.token_ids) for c in response.completions))
        return response

    @app.post("/score")
    async def score(request: ScoreRequest) -> ScoreResponse:
        try:
            return await backend.score(request)
        except ValueError as exc:
            raise HTTPException(status_code=400, detail=str(exc)) from None

    @app.post("/update_weights")
    async def update_weights(request: UpdateWeightsRequest) -> UpdateWeightsResponse:
        try:
            await backend.load_weights(request.path, request.version)
        except FileNotFoundError as exc:
            raise HTTPException(status_code=404, detail=str(exc)) from None
        except ValueError as exc:
            raise HTTPException(status_code=400, detail=str(exc)) from None
        if metrics is not None:
            metrics.log(request.version, {"weight_version": backend.weight_version, **throughput.report()})
        return UpdateWeightsResponse(weight_version=backend.weight_version)

    app.include_router(openai_router(backend, throughput))
    return app
