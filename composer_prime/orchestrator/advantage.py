"""Group-relative advantages (PRIME-RL default, GRPO std option, DAPO dynamic sampling and overlong penalty).

A group is the `group_size` completions of one prompt; each completion's reward is compared
with its own group only. The overlong penalty changes the reward before the baseline is
taken, so a group whose completions all ran long is still compared on the adjusted rewards.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from composer_prime.configs.orchestrator import AdvantageConfig, OverlongConfig


def overlong_penalty(completion_len: int, max_tokens: int, buffer: int, penalty: float) -> float:
    """DAPO soft overlong punishment: 0 up to `max_tokens - buffer`, then linear down to -penalty at max_tokens."""
    start = max_tokens - buffer
    if completion_len <= start:
        return 0.0
    return -penalty * min(completion_len - start, buffer) / buffer


def penalized_rewards(rewards: Sequence[float], completion_lens: Sequence[int], max_tokens: int,
                      overlong: OverlongConfig | None) -> list[float]:
    if overlong is None:
        return [float(r) for r in rewards]
    return [float(r) + overlong_penalty(n, max_tokens, overlong.buffer, overlong.penalty)
            for r, n in zip(rewards, completion_lens, strict=True)]


def is_uniform(rewards: Sequence[float]) -> bool:
    """True when every reward of the group is equal: all advantages are zero, the group teaches nothing."""
    return all(r == rewards[0] for r in rewards)


def group_advantages(rewards: Sequence[float], std_normalize: bool = False, eps: float = 1e-6) -> list[float]:
    """Reward minus the group mean; with `std_normalize`, divided by (population std + eps)."""
    mean = sum(rewards) / len(rewards)
    centered = [r - mean for r in rewards]
    if not std_normalize:
        return centered
    std = math.sqrt(sum(c * c for c in centered) / len(centered))
    return [c / (std + eps) for c in centered]


def compute_advantages(
    rewards: Sequence[float], completion_lens: Sequence[int], max_tokens: int, config: AdvantageConfig
) -> list[float] | None:
    """Advantages of one group, or None when dynamic sampling drops it (all adjusted rewards equal)."""
    adjusted = penalized_rewards(rewards, completion_lens, max_tokens, config.overlong)
    if config.drop_uniform_groups and is_uniform(adjusted):
        return None
    return group_advantages(adjusted, config.std_normalize)
