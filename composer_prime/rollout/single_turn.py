"""One rollout group: the chat prompt of one example, `n` completions from one /generate call, scored.

Shared by training (orchestrator) and evaluation (eval), so both sample and score identically.
Prompt choice is a pure function of (seed, step, slot, attempt): a restarted orchestrator asks
for the same prompts again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from transformers import PreTrainedTokenizerBase

from composer_prime.inference.client import InferenceClient
from composer_prime.inference.protocol import Completion, GenerateRequest
from composer_prime.rollout.envs import Environment, Example, Score
from composer_prime.orchestrator.packing import Sample


@dataclass(frozen=True)
class Group:
    example: Example
    prompt_ids: list[int]
    completions: list[Completion]
    texts: list[str]
    """Each completion decoded, as the environment scored it."""
    scores: list[Score]
    weight_version: int
    generate_s: float
    """Wall time of the /generate call (model time, as the orchestrator sees it)."""
    total_s: float
    """Wall time of the whole rollout: templating, generation, decoding, scoring."""

    @property
    def rewards(self) -> list[float]:
        return [s.reward for s in self.scores]

    @property
    def completion_lens(self) -> list[int]:
        return [len(c.token_ids) for c in self.completions]

    @property
    def truncated(self) -> list[bool]:
        return [c.finish_reason == "length" for c in self.completions]

    @property
    def metrics(self) -> list[dict[str, float]]:
        return [s.metrics for s in self.scores]

    def samples(self, advantages: list[float]) -> list[Sample]:
        return [Sample(self.prompt_ids, c.token_ids, c.logprobs, advantage, self.weight_version)
                for c, advantage in zip(self.completions, advantages, strict=True)]


def answer_lengths(groups: Sequence[Group]) -> dict[str, float]:
    """Replies against the environment's reference answers, in characters of stripped text.

    `answer_len/ratio` is the mean reply length over the mean reference length, over the groups whose
    example has a reference. A policy that learned to stop early under a partial-credit reward shows
    here (ratio well below 1) before it shows anywhere else. Empty when no example has a reference.
    """
    pairs = [(len(text.strip()), len(g.example.answer.strip())) for g in groups if g.example.answer
             for text in g.texts]
    if not pairs:
        return {}
    replies, references = (sum(side) / len(pairs) for side in zip(*pairs))
    return {"answer_len/chars": replies, "answer_len/target_chars": references,
            "answer_len/ratio": replies / references if references else float("nan")}


def prompt_token_ids(tokenizer: PreTrainedTokenizerBase, messages: list[dict[str, str]]) -> list[int]:
    return list(tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True))


def prompt_index(seed: int, step: int, slot: int, attempt: int, num_slots: int, num_examples: int) -> int:
    """Example for slot `slot` (of `num_slots`) of `step`, draw `attempt`: walks one permutation per step,
    first draws of all slots then second draws, so prompts within a step repeat only once the split runs out."""
    order = np.random.default_rng([seed, step]).permutation(num_examples)
    return int(order[(attempt * num_slots + slot) % num_examples])


def request_seed(*key: int) -> int:
    """A sampling seed derived from integers (seed, step, slot, ...), stable across runs."""
    return int(np.random.default_rng(list(key)).integers(2**31 - 1))


async def rollout_group(
    client: InferenceClient,
    env: Environment,
    tokenizer: PreTrainedTokenizerBase,
    example: Example,
    *,
    n: int,
    max_tokens: int,
    temperature: float,
    top_p: float = 1.0,
    seed: int | None = None,
) -> Group:
    start = time.perf_counter()
    prompt_ids = prompt_token_ids(tokenizer, example.prompt)
    request = GenerateRequest(
        prompt_token_ids=prompt_ids,
        n=n,
        max_tokens=max_tokens,
        temperature=temperature,
        top_p=top_p,
        stop_token_ids=[tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else [],
        seed=seed,
    )
    gen_start = time.perf_counter()
    response = await client.generate(request)
    generate_s = time.perf_counter() - gen_start
    texts = [tokenizer.decode(c.token_ids, skip_special_tokens=True) for c in response.completions]
    scores = await asyncio.gather(*(env.score(example, text) for text in texts))
    return Group(
        example=example,
        prompt_ids=prompt_ids,
        completions=response.completions,
        texts=texts,
        scores=list(scores),
        weight_version=response.weight_version,
        generate_s=generate_s,
        total_s=time.perf_counter() - start,
    )
