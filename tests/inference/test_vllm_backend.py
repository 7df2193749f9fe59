"""The vLLM backend: a clear error without vLLM; on a CUDA machine, the same guarantees as on CPU."""

from __future__ import annotations

import asyncio
import importlib.util

import pytest
import torch
from transformers import AutoModelForCausalLM

from composer_prime.configs.inference import InferenceConfig, VLLMBackendConfig
from composer_prime.configs.shared import ModelConfig
from composer_prime.errors import UserError
from composer_prime.inference.backend import make_backend
from composer_prime.inference.protocol import GenerateRequest
from composer_prime.weights import STABLE, publish_weights

HAVE_VLLM = importlib.util.find_spec("vllm") is not None and torch.cuda.is_available()


@pytest.mark.skipif(HAVE_VLLM, reason="vLLM and a GPU are here")
def test_without_vllm_or_gpu_the_error_says_what_is_missing(tiny_model_dir):
    config = InferenceConfig(model=ModelConfig(path=str(tiny_model_dir)), backend=VLLMBackendConfig())
    with pytest.raises(UserError, match="vllm backend needs the 'vllm' extra and a CUDA GPU"):
        make_backend(config)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_VLLM, reason="needs the 'vllm' extra and a CUDA GPU")
def test_vllm_logprobs_seeds_and_weight_reload(tiny_model_dir, tmp_path, reference_logprobs):
    config = InferenceConfig(
        model=ModelConfig(path=str(tiny_model_dir), dtype="float32"),
        backend=VLLMBackendConfig(gpu_memory_utilization=0.2, max_model_len=256, enforce_eager=True),
    )
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    state = {k: v.clone() + 0.1 * torch.randn_like(v) for k, v in base.state_dict().items()}
    state["lm_head.weight"] = state["model.embed_tokens.weight"].clone()
    reloaded = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float64).eval()
    reloaded.load_state_dict(state)
    good = publish_weights(tmp_path, 1, state, base.config.to_json_string())
    incomplete = publish_weights(tmp_path, 2, state, base.config.to_json_string())
    (incomplete / STABLE).unlink()
    prompts = [[5, 17, 33], [40] * 9, [7, 8]]

    async def main():
        backend = make_backend(config)
        try:
            for temperature in (1.0, 0.7):
                requests = [GenerateRequest(prompt_token_ids=p, n=2, max_tokens=12, temperature=temperature)
                            for p in prompts]
                for request, response in zip(requests, await asyncio.gather(*map(backend.generate, requests))):
                    assert response.weight_version == 0
                    for completion in response.completions:
                        expected = reference_logprobs(request.prompt_token_ids, completion.token_ids, temperature)
                        assert completion.logprobs == pytest.approx(expected, abs=2e-3)
            seeded = GenerateRequest(prompt_token_ids=prompts[0], max_tokens=12, seed=7)
            first, second = await asyncio.gather(backend.generate(seeded), backend.generate(seeded))
            assert first.completions[0].token_ids == second.completions[0].token_ids
            with pytest.raises(FileNotFoundError):
                await backend.load_weights(str(incomplete), 2)
            await backend.load_weights(str(good), 1)
            assert backend.weight_version == 1
            greedy = GenerateRequest(prompt_token_ids=prompts[0], max_tokens=12, temperature=0.0)
            response = await backend.generate(greedy)
            assert response.weight_version == 1
            tokens = response.completions[0].token_ids
            expected = reference_logprobs(prompts[0], tokens, 0.0, model=reloaded)
            assert response.completions[0].logprobs == pytest.approx(expected, abs=2e-3)
        finally:
            await backend.close()

    asyncio.run(main())
