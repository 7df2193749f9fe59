"""One rollout group: the chat prompt of one example, `n` completions from one `generate` call, scored.

Shared by training (orchestrator), evaluation (heldout) and volunteers (worker), so all sample and
score identically; a volunteer's completions are scored again by the run (`score_group`).
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

from composer_prime.inference.protocol import Completion
from composer_prime.configs.rollout import SamplingConfig
from composer_prime.model.chat_template import template_ids
from composer_prime.rollout.envs import Environment, Example, Score
from composer_prime.rollout.sampler import Sampler, generate_request


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
    """Wall time of the `generate` call (model time, as the caller sees it; 0 for a volunteer's group)."""
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


def prompt_index(seed: int, step: int, slot: int, attempt: int, num_slots: int, num_examples: int) -> int:
    """Example for slot `slot` (of `num_slots`) of `step`, draw `attempt`: walks one permutation per step,
    first draws of all slots then second draws, so prompts within a step repeat only once the split runs out."""
    order = np.random.default_rng([seed, step]).permutation(num_examples)
    return int(order[(attempt * num_slots + slot) % num_examples])


def request_seed(*key: int) -> int:
    """A sampling seed derived from integers (seed, step, slot, ...), stable across runs."""
    return int(np.random.default_rng(list(key)).integers(2**31 - 1))


async def rollout_group(sampler: Sampler, env: Environment, tokenizer: PreTrainedTokenizerBase, example: Example,
                        sampling: SamplingConfig, *, n: int, seed: int | None = None) -> Group:
    start = time.perf_counter()
    prompt_ids = template_ids(tokenizer, example.prompt)
    gen_start = time.perf_counter()
    response = await sampler.generate(generate_request(prompt_ids, sampling, tokenizer, n=n, seed=seed))
    return await score_group(env, tokenizer, example, prompt_ids, response.completions, response.weight_version,
                             generate_s=time.perf_counter() - gen_start, start=start)


async def score_group(env: Environment, tokenizer: PreTrainedTokenizerBase, example: Example, prompt_ids: list[int],
                      completions: list[Completion], weight_version: int, *, generate_s: float = 0.0,
                      start: float | None = None) -> Group:
    """Completions of one prompt, decoded and scored by the environment, wherever they were sampled."""
    start = time.perf_counter() if start is None else start
    texts = [tokenizer.decode(c.token_ids, skip_special_tokens=True) for c in completions]
    scores = await asyncio.gather(*(env.score(example, text) for text in texts))
    return Group(example=example, prompt_ids=prompt_ids, completions=completions, texts=texts, scores=list(scores),
                 weight_version=weight_version, generate_s=generate_s, total_s=time.perf_counter() - start)
