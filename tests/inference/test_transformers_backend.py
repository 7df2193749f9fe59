"""The transformers backend in-process: model variants the shared server does not cover."""

from __future__ import annotations

import asyncio
import json
import random
import shutil
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM

from composer_prime.configs.inference import TransformersBackendConfig
from composer_prime.configs.shared import ModelConfig
from composer_prime.inference.protocol import GenerateRequest
from composer_prime.inference.transformers_backend import TransformersBackend


def variant(tiny_model_dir: Path, tmp_path: Path, file: str, **updates) -> Path:
    """A copy of the tiny model with some keys of `file` (config.json, generation_config.json) changed."""
    path = tmp_path / "variant"
    shutil.copytree(tiny_model_dir, path)
    data = json.loads((path / file).read_text())
    data.update(updates)
    (path / file).write_text(json.dumps(data))
    return path


def run(path: Path, requests: list[GenerateRequest], **options):
    async def main():
        backend = TransformersBackend(ModelConfig(path=str(path)), TransformersBackendConfig(**options))
        try:
            return await asyncio.gather(*(backend.generate(r) for r in requests))
        finally:
            await backend.close()

    return asyncio.run(main())


def test_generation_config_eos_ids_stop_the_decode(tiny_model_dir, tmp_path):
    prompt = [17, 42, 99, 5]
    greedy = GenerateRequest(prompt_token_ids=prompt, max_tokens=10, temperature=0.0)
    (plain,) = run(tiny_model_dir, [greedy])
    tokens = plain.completions[0].token_ids
    at = next(i for i, t in enumerate(tokens) if i >= 2 and t not in tokens[:i])
    path = variant(tiny_model_dir, tmp_path, "generation_config.json", eos_token_id=[2, tokens[at]])
    (stopped,) = run(path, [greedy])
    assert stopped.completions[0].token_ids == tokens[: at + 1]
    assert stopped.completions[0].finish_reason == "stop"


def test_sliding_window_model_batches_without_merging(tiny_model_dir, tmp_path, reference_logprobs):
    # Sliding-window cache layers cannot be merged, so such models decode one batch at a time.
    path = variant(tiny_model_dir, tmp_path, "config.json", use_sliding_window=True, sliding_window=5,
                   max_window_layers=0, layer_types=None)
    rng = random.Random(0)
    requests = [
        GenerateRequest(prompt_token_ids=[rng.randrange(3, 300) for _ in range(length)], n=2, max_tokens=m,
                        temperature=0.7)
        for length, m in [(2, 12), (9, 6), (13, 9)]
    ]
    responses = run(path, requests, max_batch_size=4)
    reference = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float64).eval()
    assert reference.config.layer_types == ["sliding_attention"] * 2
    for request, response in zip(requests, responses):
        for completion in response.completions:
            expected = reference_logprobs(request.prompt_token_ids, completion.token_ids, 0.7, model=reference)
            assert completion.logprobs == pytest.approx(expected, abs=1e-4)


def test_close_fails_requests_in_flight(tiny_model_dir):
    async def main():
        backend = TransformersBackend(ModelConfig(path=str(tiny_model_dir)))
        # Greedy from this prompt runs 200 tokens without EOS: far longer than closing takes.
        pending = asyncio.ensure_future(
            backend.generate(GenerateRequest(prompt_token_ids=[5, 6, 7], max_tokens=200, temperature=0.0))
        )
        await asyncio.sleep(0)  # the request is queued
        await backend.close()
        with pytest.raises(RuntimeError, match="shutting down|closed"):
            await pending
        with pytest.raises(RuntimeError, match="closed"):
            await backend.generate(GenerateRequest(prompt_token_ids=[5]))

    asyncio.run(main())


def test_keyed_requests_draw_the_tokens_their_noise_picks_from_the_logits_in_any_batch(tiny_model_dir, reference_model):
    """Gumbel-max with keyed noise: each token is argmax(log_softmax(logits / T) + g(key, sample, position)) of a
    float64 forward, and a request draws the same tokens alone or among others (continuous batching, n > 1)."""
    from composer_prime.inference.sampling import gumbel_noise

    rng = random.Random(1)
    prompts = [[rng.randrange(3, 300) for _ in range(rng.randint(2, 9))] for _ in range(4)]
    keyed = [GenerateRequest(prompt_token_ids=p, n=3, max_tokens=12, temperature=0.8, gumbel_key=2**64 - 1 - i,
                             gumbel_first_sample=10 * i) for i, p in enumerate(prompts)]
    others = [GenerateRequest(prompt_token_ids=p, n=2, max_tokens=7, temperature=1.3) for p in prompts]
    together = run(tiny_model_dir, [*keyed, *others], max_batch_size=5)[: len(keyed)]
    alone = [run(tiny_model_dir, [request])[0] for request in keyed[:2]]
    tokens = [[c.token_ids for c in r.completions] for r in alone]
    assert tokens == [[c.token_ids for c in r.completions] for r in together[:2]]  # log-probs: within float noise
    for request, response in zip(keyed, together, strict=True):
        for index, completion in enumerate(response.completions):
            ids = request.prompt_token_ids + completion.token_ids
            with torch.no_grad():
                logits = reference_model(torch.tensor([ids])).logits[0].double() / request.temperature
            for t, token in enumerate(completion.token_ids):
                dist = logits[len(request.prompt_token_ids) - 1 + t].log_softmax(-1)
                noise = gumbel_noise(request.gumbel_key, request.gumbel_first_sample + index, t, dist.shape[0])
                assert int((dist + noise).argmax()) == token
                assert completion.logprobs[t] == pytest.approx(float(dist[token]), abs=1e-4)
    with pytest.raises(ValueError, match="needs temperature > 0"):
        GenerateRequest(prompt_token_ids=[1], temperature=0.0, gumbel_key=1)
