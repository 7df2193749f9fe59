"""The one thing a rollout needs from a policy: `generate`, token ids in, completions with log-probs out.

The inference server's HTTP client (inference/client.py) and every in-process engine
(inference/backend.py: what the inference server and a volunteer worker run) satisfy `Sampler`,
so the same rollout code trains (orchestrator), evaluates (heldout) and volunteers (worker).
"""

from __future__ import annotations

from typing import Protocol

from transformers import PreTrainedTokenizerBase

from composer_prime.inference.protocol import GenerateRequest, GenerateResponse
from composer_prime.configs.rollout import SamplingConfig


class Sampler(Protocol):
    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        """`request.n` completions of one prompt, all sampled by the weight version the response names."""
        ...


def generate_request(prompt_ids: list[int], sampling: SamplingConfig, tokenizer: PreTrainedTokenizerBase, *,
                     n: int = 1, seed: int | None = None, max_tokens: int | None = None, gumbel_key: int | None = None,
                     gumbel_first_sample: int = 0) -> GenerateRequest:
    """One turn's request: `sampling` whole (`max_tokens` narrows it), stopping at end of sequence; `gumbel_key`
    draws with keyed noise (GenerateRequest)."""
    return GenerateRequest(
        prompt_token_ids=prompt_ids, n=n, max_tokens=min(sampling.max_tokens, max_tokens or sampling.max_tokens),
        temperature=sampling.temperature, top_p=sampling.top_p, seed=seed, gumbel_key=gumbel_key,
        gumbel_first_sample=gumbel_first_sample,
        stop_token_ids=[tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else [],
    )
