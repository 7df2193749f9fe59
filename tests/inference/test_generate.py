"""POST /generate on a real server: log-probs, batching, seeds, stops. The server decodes at most
4 sequences together, so requests are split, queued and merged into running batches."""

from __future__ import annotations

import asyncio
import random

import httpx
import pytest
import torch
from transformers import AutoModelForCausalLM

from composer_prime.inference.protocol import PROTOCOL_VERSION, GenerateRequest, GenerateResponse

EOS = 2  # <|im_end|>: the tokenizer's and the generation config's EOS in the tiny model


def random_prompt(length: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(3, 300) for _ in range(length)]


async def generate_all(url: str, requests: list[GenerateRequest]) -> list[GenerateResponse]:
    """All requests at once, as concurrent HTTP calls."""
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        responses = await asyncio.gather(*(http.post("/generate", json=r.model_dump()) for r in requests))
    for response in responses:
        response.raise_for_status()
    return [GenerateResponse.model_validate(r.json()) for r in responses]


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_logprobs_match_a_plain_forward_pass(server, reference_logprobs, temperature):
    lengths, max_tokens = [2, 7, 13, 4, 20], [5, 24, 9, 16, 12]
    requests = [
        GenerateRequest(prompt_token_ids=random_prompt(length, seed=i), n=3, max_tokens=m, temperature=temperature)
        for i, (length, m) in enumerate(zip(lengths, max_tokens))
    ]
    responses = asyncio.run(generate_all(server.url, requests))
    for request, response in zip(requests, responses):
        assert response.weight_version == 0
        assert len(response.completions) == 3
        for completion in response.completions:
            expected = reference_logprobs(request.prompt_token_ids, completion.token_ids, temperature)
            assert completion.logprobs == pytest.approx(expected, abs=1e-4)
            if completion.finish_reason == "stop":
                assert completion.token_ids[-1] == EOS and EOS not in completion.token_ids[:-1]
            else:
                assert len(completion.token_ids) == request.max_tokens and EOS not in completion.token_ids


def test_batched_greedy_equals_unbatched_generate(server, tiny_model_dir, reference_logprobs):
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
    prompts = [random_prompt(length, seed=10 + length) for length in (3, 11, 6, 17, 1)]
    requests = [GenerateRequest(prompt_token_ids=p, n=2, max_tokens=20, temperature=0.0) for p in prompts]
    responses = asyncio.run(generate_all(server.url, requests))
    for prompt, response in zip(prompts, responses):
        with torch.no_grad():
            output = model.generate(torch.tensor([prompt]), max_new_tokens=20, do_sample=False)
        expected = output[0, len(prompt):].tolist()
        for completion in response.completions:
            assert completion.token_ids == expected
            assert completion.logprobs == pytest.approx(reference_logprobs(prompt, expected, 0.0), abs=1e-4)


def test_same_seed_same_tokens_whatever_the_batch(server):
    prompt = random_prompt(6, seed=99)
    seeded = GenerateRequest(prompt_token_ids=prompt, n=2, max_tokens=16, seed=1234)
    other = GenerateRequest(prompt_token_ids=prompt, n=2, max_tokens=16, seed=4321)
    filler = [GenerateRequest(prompt_token_ids=random_prompt(9, seed=s), n=3, max_tokens=8) for s in range(3)]
    first, second, different = asyncio.run(generate_all(server.url, [seeded, seeded, other, *filler]))[:3]
    alone = asyncio.run(generate_all(server.url, [seeded]))[0]
    tokens = [c.token_ids for c in first.completions]
    assert [c.token_ids for c in second.completions] == tokens
    assert [c.token_ids for c in alone.completions] == tokens
    assert tokens[0] != tokens[1], "the n samples of one request draw from different generators"
    assert [c.token_ids for c in different.completions] != tokens


def test_max_tokens_and_stop_ids(server):
    prompt = random_prompt(5, seed=7)
    full = asyncio.run(generate_all(server.url, [
        GenerateRequest(prompt_token_ids=prompt, max_tokens=12, temperature=0.0)
    ]))[0].completions[0]
    assert EOS not in full.token_ids, "pick a prompt whose greedy output does not end early"
    # A token that first appears at position >= 2 stops the decode right after it.
    at = next(i for i, t in enumerate(full.token_ids) if i >= 2 and t not in full.token_ids[:i])
    stop_token = full.token_ids[at]
    stopped, short = asyncio.run(generate_all(server.url, [
        GenerateRequest(prompt_token_ids=prompt, max_tokens=12, temperature=0.0, stop_token_ids=[stop_token]),
        GenerateRequest(prompt_token_ids=prompt, max_tokens=5, temperature=0.0),
    ]))
    assert stopped.completions[0].token_ids == full.token_ids[: at + 1]
    assert stopped.completions[0].finish_reason == "stop"
    assert short.completions[0].token_ids == full.token_ids[:5]
    assert short.completions[0].finish_reason == "length"
    assert full.finish_reason == "length"


def test_bad_requests_are_4xx_and_the_server_keeps_serving(client):
    assert client.post("/generate", json={"prompt_token_ids": [5, 100_000]}).status_code == 400
    too_long = client.post("/generate", json={"prompt_token_ids": [5] * 300})
    assert too_long.status_code == 400 and "context" in too_long.json()["detail"]
    assert client.post("/generate", json={"prompt_token_ids": []}).status_code == 422
    ok = client.post("/generate", json={"prompt_token_ids": [5, 6], "max_tokens": 3})
    assert ok.status_code == 200 and len(ok.json()["completions"][0]["token_ids"]) <= 3


def test_health_reports_protocol_and_backend(client, tiny_model_dir):
    health = client.get("/health").json()
    assert health["status"] == "ok" and health["protocol_version"] == PROTOCOL_VERSION
    assert health["backend"] == "transformers" and health["model"] == str(tiny_model_dir)
    assert health["weight_version"] == 0
