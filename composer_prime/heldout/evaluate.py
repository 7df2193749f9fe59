"""Held-out evaluation: the task's own verdict, pass@k and mean reward on an environment's eval split.

The same code runs inside an rl run (start, every `interval` steps, end) and behind the `eval` command, with the
rollouts training uses: single-turn groups, or for a tool environment the multi-turn rollouts of
rollout/multi_turn.py (same sessions, sandbox and grading; each conversation bounded by `max_turns` and `seq_len`),
which add tool errors per rollout (turns are among their metrics). A sample passes by the task's own verdict (the environment metric named by
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
from composer_prime.rollout.envs import Environment, Example
from composer_prime.rollout.multi_turn import ToolGroup, env_rollout_group, tool_errors
from composer_prime.rollout.sampler import Sampler
from composer_prime.rollout.single_turn import Group, answer_lengths, request_seed

logger = logging.getLogger(__name__)


def held_out_examples(env: Environment, num_examples: int) -> list[Example]:
    """The first `num_examples` of the env's eval split (never trained on)."""
    examples = env.examples("eval")
    if not examples:
        raise UserError(f"environment {env.id} has no eval tasks (its eval split is empty): set eval num_examples "
                        "to 0, or give it tasks that fall in the eval split")
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


def passed(reward: float, metrics: dict[str, float], success_metric: str | None, pass_threshold: float) -> bool:
    """The task's verdict on one sample: its success metric when the environment reports it, else its reward."""
    if success_metric is not None and success_metric in metrics:
        return metrics[success_metric] >= 1.0
    return reward >= pass_threshold


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
    tools: dict[str, float]
    """Tool errors per rollout (rollout.multi_turn.tool_errors); empty for a single-turn environment."""

    def metrics(self, prefix: str = "eval/") -> dict[str, float | int]:
        return {f"{prefix}reward": self.reward, f"{prefix}solved": self.solved, f"{prefix}pass@{self.k}": self.pass_at_k,
                f"{prefix}weight_version": self.weight_version,
                **{f"{prefix}env/{name}": value for name, value in self.env_metrics.items()},
                **{f"{prefix}{name}": value for name, value in (self.lengths | self.tools).items()}}

    def summary(self) -> str:
        length = f"  answer length {self.lengths['answer_len/ratio']:.2f}x target" if self.lengths else ""
        tools = (f"  {self.env_metrics['turns']:.1f} turns, {self.tools['tool_errors']:.2f} tool errors per rollout"
                 if self.tools else "")
        return (f"{self.verdict} {self.solved:.4f}  pass@{self.k} {self.pass_at_k:.4f}  reward {self.reward:.4f}"
                f"{length}{tools}  ({self.num_examples} prompts x {self.samples_per_prompt} samples at "
                f"T={self.temperature:g}, weight version {self.weight_version})")


async def evaluate(sampler: Sampler, env: Environment, tokenizer: PreTrainedTokenizerBase, examples: list[Example],
                   sampling: SamplingConfig, *, k: int, samples_per_prompt: int, success_metric: str | None,
                   pass_threshold: float, seed: int, max_concurrent: int, max_turns: int, seq_len: int) -> EvalResult:
    """`max_turns` and `seq_len` (the longest conversation) bound a tool environment's rollouts, as in training."""
    if not examples:
        raise ValueError("evaluate needs at least one example")
    slots = asyncio.Semaphore(max_concurrent)

    async def one(index: int, example: Example) -> Group | ToolGroup:
        async with slots:
            return await env_rollout_group(sampler, env, tokenizer, example, sampling, n=samples_per_prompt,
                                           max_turns=max_turns, seq_len=seq_len, seed=request_seed(seed, index))

    groups = await asyncio.gather(*(one(i, ex) for i, ex in enumerate(examples)))
    samples = [(reward, metrics) for g in groups for reward, metrics in zip(g.rewards, g.metrics, strict=True)]
    verdicts = [[passed(r, m, success_metric, pass_threshold) for r, m in zip(g.rewards, g.metrics, strict=True)]
                for g in groups]
    reported = success_metric is not None and all(success_metric in m for _, m in samples)
    names = sorted({name for _, m in samples for name in m})
    return EvalResult(
        reward=sum(r for r, _ in samples) / len(samples),
        solved=sum(map(sum, verdicts)) / len(samples),
        verdict=success_metric if reported else f"reward>={pass_threshold:g}",
        pass_at_k=sum(pass_at_k(samples_per_prompt, sum(v), k) for v in verdicts) / len(groups),
        k=k,
        num_examples=len(examples),
        samples_per_prompt=samples_per_prompt,
        temperature=sampling.temperature,
        weight_version=min(g.weight_version for g in groups),
        env_metrics={name: sum(m[name] for _, m in samples if name in m) / sum(name in m for _, m in samples)
                     for name in names},
        lengths=answer_lengths([g for g in groups if isinstance(g, Group)]),
        tools=tool_errors([g for g in groups if isinstance(g, ToolGroup)]),
    )

