"""Local teachers for the replay tests: real uvicorn servers on 127.0.0.1, each stopped in teardown."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # servers.py is shared with benchmarks/replay_voi.py

from servers import inference_server, model_variant, student_trace  # noqa: E402


@pytest.fixture(scope="session")
def model_dirs(tmp_path_factory) -> dict[str, Path]:
    """Different local tiny models: the warm start, two lightly perturbed copies (they mostly agree
    with it) and a heavily perturbed one (it disagrees with everyone)."""
    root = tmp_path_factory.mktemp("replay-models")
    return {
        "alpha": model_variant(root / "alpha"),
        "beta": model_variant(root / "beta", noise=0.02, seed=1),
        "gamma": model_variant(root / "gamma", noise=0.02, seed=2),
        "noisy": model_variant(root / "noisy", noise=1.0, seed=3),
    }


@pytest.fixture(scope="module")
def teacher_servers(model_dirs):
    servers = {}
    try:
        for name, path in model_dirs.items():
            servers[name] = inference_server(path)
        yield servers
    finally:
        for server in servers.values():
            server.stop()


@pytest.fixture(scope="module")
def sampled_trace(teacher_servers, tmp_path_factory) -> Path:
    """A 50-step composer-prime trace: the warm start (served by `alpha`) sampling at T = 1."""
    return student_trace(teacher_servers["alpha"].url, tmp_path_factory.mktemp("student"), n=50, seed=0)
