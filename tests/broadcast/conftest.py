"""Fixtures for broadcast tests: a published weight version, keys, and real servers on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from composer_prime import keys
from composer_prime.utils.serve import ServedApp
from composer_prime.weights import publish_weights


@pytest.fixture(scope="session")
def run_key():
    return keys.generate_key()


@pytest.fixture(scope="session")
def published(tmp_path_factory) -> Path:
    """A `broadcasts/step_3` directory as the trainer writes it: about 1.2 MB of weights plus assets."""
    out = tmp_path_factory.mktemp("trainer-out")
    assets = out / "assets"
    assets.mkdir()
    (assets / "tokenizer.json").write_text('{"version": "1.0", "model": {"type": "BPE"}}')
    generator = torch.Generator().manual_seed(0)
    state = {f"layer.{i}.weight": torch.randn(128, 256, generator=generator) for i in range(9)}
    return publish_weights(out, 3, state, '{"model_type": "qwen3"}', assets_dir=assets)


@pytest.fixture
def serve() -> Iterator:
    """`serve(app)` starts a server that is stopped when the test ends."""
    running: list[ServedApp] = []

    def start(app) -> ServedApp:
        server = ServedApp(app).start()
        running.append(server)
        return server

    yield start
    for server in reversed(running):
        server.__exit__(None, None, None)
