import asyncio

import pytest

from composer_prime.configs.inference import InferenceConfig
from composer_prime.configs.shared import LogConfig, ModelConfig
from composer_prime.eval.server import inference_server, wait_ready
from composer_prime.inference.client import InferenceClient
from composer_prime.model.tiny import TinyModelConfig, build
from composer_prime.utils.net import free_port


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """A ~1M-parameter Qwen3 model with a ChatML tokenizer, built offline (composer_prime.model.tiny)."""
    return build(TinyModelConfig(output_dir=tmp_path_factory.mktemp("tiny") / "model", corpus_lines=2000))


@pytest.fixture
def inference_url(tiny_model, tmp_path):
    """A real inference server process on a free port serving the tiny model; stopped on teardown."""
    port = free_port()
    config = InferenceConfig(model=ModelConfig(path=str(tiny_model)), port=port, log=LogConfig(progress=False))
    url = f"http://127.0.0.1:{port}"

    async def ready(child):
        async with InferenceClient(url) as client:
            await wait_ready(client, child, timeout_s=120)

    with inference_server(config, tmp_path / "server") as child:
        asyncio.run(ready(child))
        yield url
