"""Held-out evaluation: mean reward and pass@k on an environment's eval split.

The same code runs inside the orchestrator (start, every `interval` steps, end) and behind the
`eval` command. pass@k uses the unbiased estimator of Chen et al. (2021) over n >= k samples
per prompt: 1 - C(n - c, k) / C(n, k), with c the samples whose reward reaches the threshold.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from transformers import PreTrainedTokenizerBase

from composer_prime.errors import UserError
from composer_prime.inference.client import InferenceClient
from composer_prime.orchestrator.envs import Environment, Example
from composer_prime.orchestrator.rollout import request_seed, rollout_group

logger = logging.getLogger(__name__)


def held_out_examples(env: Environment, num_examples: int) -> list[Example]:
    """The first `num_examples` of the env's eval split (never trained on)."""
    examples = env.examples("eval")
    if not examples:
        raise UserError(f"environment {env.id} has no eval split (set eval num_examples to 0)")
    if len(examples) < num_examples:
        logger.warning("eval split of %s has %d examples, fewer than the %d asked for", env.id, len(examples),
                       num_examples)
    return examples[:num_examples]


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k samples drawn without replacement from n (c correct) is correct."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")
    if n - c < k:
        return 1.0
    # C(n-c, k) / C(n, k) = prod_{i=n-c+1}^{n} (1 - k / i), numerically stable for large n.
    miss = 1.0
    for i in range(n - c + 1, n + 1):
        miss *= 1.0 - k / i
    return 1.0 - miss


@dataclass(frozen=True)
class EvalResult:
    reward: float
    """Mean reward over every sample of every prompt."""
    pass_at_k: float
    k: int
    num_examples: int
    samples_per_prompt: int
    weight_version: int
    """Oldest policy version among the samples (all equal unless weights changed mid-eval)."""

    def metrics(self) -> dict[str, float | int]:
        return {"eval/reward": self.reward, f"eval/pass@{self.k}": self.pass_at_k,
                "eval/weight_version": self.weight_version}

    def summary(self) -> str:
        return (f"reward {self.reward:.4f}  pass@{self.k} {self.pass_at_k:.4f}  ({self.num_examples} prompts x "
                f"{self.samples_per_prompt} samples, weight version {self.weight_version})")


async def evaluate(
    client: InferenceClient,
    env: Environment,
    tokenizer: PreTrainedTokenizerBase,
    examples: list[Example],
    *,
    k: int,
    samples_per_prompt: int,
    temperature: float,
    max_tokens: int,
    pass_threshold: float,
    seed: int,
    max_concurrent: int,
) -> EvalResult:
    if not examples:
        raise ValueError("evaluate needs at least one example")
    slots = asyncio.Semaphore(max_concurrent)

    async def one(index: int, example: Example):
        async with slots:
            return await rollout_group(client, env, tokenizer, example, n=samples_per_prompt, max_tokens=max_tokens,
                                       temperature=temperature, seed=request_seed(seed, index))

    groups = await asyncio.gather(*(one(i, ex) for i, ex in enumerate(examples)))
    rewards = [r for g in groups for r in g.rewards]
    passes = [pass_at_k(samples_per_prompt, sum(r >= pass_threshold for r in g.rewards), k) for g in groups]
    return EvalResult(
        reward=sum(rewards) / len(rewards),
        pass_at_k=sum(passes) / len(passes),
        k=k,
        num_examples=len(examples),
        samples_per_prompt=samples_per_prompt,
        weight_version=min(g.weight_version for g in groups),
    )
