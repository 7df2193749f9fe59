"""Held-out evaluation: the task's own verdict, pass@k and mean reward on an environment's eval split.

The same code runs inside an rl run (start, every `interval` steps, end) and behind the `eval` command. A sample passes by the task's own verdict (the environment metric named by
`success_metric`, e.g. exact match) and only without one by its reward reaching `pass_threshold`:
a shaped reward can rise while the task is solved less often, so it must not stand in for the verdict.
pass@k uses the unbiased estimator of Chen et al. (2021) over n >= k samples per prompt:
1 - C(n - c, k) / C(n, k), with c the passing samples.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from transformers import PreTrainedTokenizerBase

from composer_prime.errors import UserError
from composer_prime.configs.rollout import SamplingConfig
from composer_prime.rollout.envs import Environment, Example, Score
from composer_prime.rollout.sampler import Sampler
from composer_prime.rollout.single_turn import answer_lengths, request_seed, rollout_group

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


def passed(score: Score, success_metric: str | None, pass_threshold: float) -> bool:
    """The task's verdict on one sample: its success metric when the environment reports it, else its reward."""
    if success_metric is not None and success_metric in score.metrics:
        return score.metrics[success_metric] >= 1.0
    return score.reward >= pass_threshold


@dataclass(frozen=True)
class EvalResult:
    reward: float
    """Mean reward over every sample of every prompt."""
    solved: float
    """Fraction of samples that pass (the task's own verdict, e.g. exact match): pass@1 over all n samples."""
    verdict: str
    """What decided a pass: the success metric's name, or `reward>=<threshold>`."""
    pass_at_k: float
    k: int
    num_examples: int
    samples_per_prompt: int
    temperature: float
    weight_version: int
    """Oldest policy version among the samples (all equal unless weights changed mid-eval)."""
    env_metrics: dict[str, float]
    """Mean of each reward and metric the environment reports."""
    lengths: dict[str, float]
    """Reply length against the reference answers (rollout.answer_lengths); empty without references."""

    def metrics(self, prefix: str = "eval/") -> dict[str, float | int]:
        return {f"{prefix}reward": self.reward, f"{prefix}solved": self.solved, f"{prefix}pass@{self.k}": self.pass_at_k,
                f"{prefix}weight_version": self.weight_version,
                **{f"{prefix}env/{name}": value for name, value in self.env_metrics.items()},
                **{f"{prefix}{name}": value for name, value in self.lengths.items()}}

    def summary(self) -> str:
        length = f"  answer length {self.lengths['answer_len/ratio']:.2f}x target" if self.lengths else ""
        return (f"{self.verdict} {self.solved:.4f}  pass@{self.k} {self.pass_at_k:.4f}  reward {self.reward:.4f}"
                f"{length}  ({self.num_examples} prompts x {self.samples_per_prompt} samples at T={self.temperature:g}, "
                f"weight version {self.weight_version})")


async def evaluate(sampler: Sampler, env: Environment, tokenizer: PreTrainedTokenizerBase, examples: list[Example],
                   sampling: SamplingConfig, *, k: int, samples_per_prompt: int, success_metric: str | None,
                   pass_threshold: float, seed: int, max_concurrent: int) -> EvalResult:
    if not examples:
        raise ValueError("evaluate needs at least one example")
    slots = asyncio.Semaphore(max_concurrent)

    async def one(index: int, example: Example):
        async with slots:
            return await rollout_group(sampler, env, tokenizer, example, sampling, n=samples_per_prompt,
                                       seed=request_seed(seed, index))

    groups = await asyncio.gather(*(one(i, ex) for i, ex in enumerate(examples)))
    scores = [s for g in groups for s in g.scores]
    verdicts = [[passed(s, success_metric, pass_threshold) for s in g.scores] for g in groups]
    reported = success_metric is not None and all(success_metric in s.metrics for s in scores)
    names = sorted({name for s in scores for name in s.metrics})
    return EvalResult(
        reward=sum(s.reward for s in scores) / len(scores),
        solved=sum(map(sum, verdicts)) / len(scores),
        verdict=success_metric if reported else f"reward>={pass_threshold:g}",
        pass_at_k=sum(pass_at_k(samples_per_prompt, sum(v), k) for v in verdicts) / len(groups),
        k=k,
        num_examples=len(examples),
        samples_per_prompt=samples_per_prompt,
        temperature=sampling.temperature,
        weight_version=min(g.weight_version for g in groups),
        env_metrics={name: sum(s.metrics[name] for s in scores if name in s.metrics)
                     / sum(name in s.metrics for s in scores) for name in names},
        lengths=answer_lengths(groups),
    )

