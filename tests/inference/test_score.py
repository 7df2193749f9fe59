"""POST /score on a real server: teacher-forced log-probs, entropies and top-k against float64 references,
and scoring interleaved with running generations."""

from __future__ import annotations

import asyncio

import pytest
import torch

from composer_prime.inference.client import InferenceClient
from composer_prime.inference.protocol import GenerateRequest, ScoreRequest

from .test_generate import random_prompt


def _reference(model, prompt, completion, temperature):
    with torch.no_grad():
        logits = model(torch.tensor([prompt + completion])).logits[0, len(prompt) - 1 : -1].double()
    return (logits / temperature).log_softmax(-1)


@pytest.mark.parametrize("temperature", [1.0, 0.6])
def test_score_matches_a_float64_forward(server, reference_model, temperature):
    prompt, completion = random_prompt(9, seed=1), random_prompt(14, seed=2)

    async def go():
        async with InferenceClient(server.url) as client:
            return await client.score(ScoreRequest(
                prompt_token_ids=prompt, completion_token_ids=completion, temperature=temperature, top_k=5
            ))

    response = asyncio.run(go())
    reference = _reference(reference_model, prompt, completion, temperature)
    expected_logprobs = reference.gather(1, torch.tensor(completion)[:, None]).squeeze(1)
    expected_entropy = -(reference.exp() * reference).sum(-1)
    top = reference.topk(5, dim=-1)
    assert response.weight_version == 0
    assert response.logprobs == pytest.approx(expected_logprobs.tolist(), abs=1e-4)
    assert response.entropies == pytest.approx(expected_entropy.tolist(), abs=1e-4)
    assert torch.tensor(response.top_logprobs).double() == pytest.approx(top.values, abs=1e-4)
    assert response.top_ids == top.indices.tolist()


def test_score_runs_between_generations(server, reference_model):
    prompt = random_prompt(6, seed=3)

    async def go():
        async with InferenceClient(server.url) as client:
            gen = [client.generate(GenerateRequest(prompt_token_ids=random_prompt(5, seed=i), n=2, max_tokens=30))
                   for i in range(4)]
            scores = [client.score(ScoreRequest(prompt_token_ids=prompt, completion_token_ids=[5, 6, 7]))
                      for _ in range(3)]
            return await asyncio.gather(*gen, *scores)

    results = asyncio.run(go())
    expected = _reference(reference_model, prompt, [5, 6, 7], 1.0).gather(1, torch.tensor([[5], [6], [7]])).squeeze(1)
    for score in results[4:]:
        assert score.logprobs == pytest.approx(expected.tolist(), abs=1e-4)
        assert score.top_ids == [[], [], []]


def test_score_rejects_bad_tokens(client):
    response = client.post("/score", json={"prompt_token_ids": [1, 2], "completion_token_ids": [10**6]})
    assert response.status_code == 400 and "outside the vocabulary" in response.json()["detail"]
    response = client.post("/score", json={"prompt_token_ids": [1] * 200, "completion_token_ids": [3] * 100})
    assert response.status_code == 400 and "context" in response.json()["detail"]
