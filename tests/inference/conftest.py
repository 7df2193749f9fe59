"""A tiny Qwen3 model (tests/support/tiny_models.py), float64 references, and servers to test against.

Servers are real: uvicorn on 127.0.0.1 on a free port, in a thread, stopped in teardown.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import torch
import uvicorn
from transformers import AutoModelForCausalLM, AutoTokenizer

from composer_prime.configs.inference import TransformersBackendConfig
from composer_prime.configs.shared import ModelConfig
from composer_prime.inference.server import create_app
from composer_prime.inference.transformers_backend import TransformersBackend
from composer_prime.utils.net import free_port
from tiny_models import build_tiny_model


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="session")
def reference_model(tiny_model_dir):
    """The same checkpoint in float64, for independent log-prob references."""
    return AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float64).eval()


@pytest.fixture(scope="session")
def tokenizer(tiny_model_dir):
    return AutoTokenizer.from_pretrained(tiny_model_dir)




@dataclass
class RunningServer:
    url: str
    backend: TransformersBackend


class _ServerThread:
    """uvicorn serving `create_app(backend)` on its own event loop in a thread."""

    def __init__(self, model_dir: Path, **backend_options):
        self.port = free_port()
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self._model_dir, self._options = model_dir, backend_options
        self._thread = threading.Thread(target=self._main, daemon=True)

    def _main(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:  # noqa: BLE001 - surfaced by start()
            self.error = exc
            self.ready.set()

    async def _serve(self) -> None:
        self.backend = TransformersBackend(
            ModelConfig(path=str(self._model_dir)), TransformersBackendConfig(**self._options), seed=0
        )
        config = uvicorn.Config(create_app(self.backend), host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        serving = asyncio.create_task(self.server.serve())
        while not self.server.started and not serving.done():
            await asyncio.sleep(0.01)
        self.ready.set()
        try:
            await serving
        finally:
            await self.backend.close()

    def start(self) -> RunningServer:
        self._thread.start()
        self.ready.wait(60)
        if self.error is not None or not getattr(getattr(self, "server", None), "started", False):
            raise RuntimeError(f"test server did not start: {self.error!r}")
        return RunningServer(url=f"http://127.0.0.1:{self.port}", backend=self.backend)

    def stop(self) -> None:
        if getattr(self, "server", None) is not None:
            self.server.should_exit = True
        self._thread.join(30)


@pytest.fixture(scope="module")
def server(tiny_model_dir) -> Iterator[RunningServer]:
    """A shared server over the unchanged tiny model (tests must not load other weights into it).
    It decodes at most 4 sequences together, so requests queue, split and join running batches."""
    thread = _ServerThread(tiny_model_dir, max_batch_size=4)
    try:
        yield thread.start()
    finally:
        thread.stop()


@pytest.fixture
def fresh_server(tiny_model_dir) -> Iterator[RunningServer]:
    """A server of its own, for tests that change its weights."""
    thread = _ServerThread(tiny_model_dir, max_batch_size=16)
    try:
        yield thread.start()
    finally:
        thread.stop()


@pytest.fixture
def client(server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=60) as http:
        yield http


@pytest.fixture(scope="session")
def reference_logprobs(reference_model):
    """log p(completion token | prefix) from one plain float64 forward over prompt + completion, at
    temperature T (T = 0: the raw distribution, which greedy decoding reports).

    The float32 server is within ~2e-6 of it (eps 1.2e-7 x logits ~10 x 2 layers); tests allow 1e-4,
    which a wrong position id or mask (1e-2 and more) still fails."""

    def compute(prompt: list[int], completion: list[int], temperature: float, model=None) -> list[float]:
        model = model or reference_model
        with torch.no_grad():
            logits = model(torch.tensor([prompt + completion])).logits[0, len(prompt) - 1 : -1].double()
        scaled = logits / (temperature if temperature > 0 else 1.0)
        return scaled.log_softmax(-1).gather(1, torch.tensor(completion)[:, None]).squeeze(1).tolist()

    return compute
