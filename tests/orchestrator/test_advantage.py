import math

import pytest

from composer_prime.orchestrator.advantage import (
    compute_advantages,
    group_advantages,
    is_uniform,
    overlong_penalty,
    penalized_rewards,
)
from composer_prime.configs.orchestrator import AdvantageConfig, OverlongConfig


def test_default_advantage_is_reward_minus_group_mean():
    rewards = [1.0, 0.0, 0.5, 0.25]
    mean = (1.0 + 0.0 + 0.5 + 0.25) / 4  # 0.4375
    assert group_advantages(rewards) == pytest.approx([1.0 - mean, 0.0 - mean, 0.5 - mean, 0.25 - mean], abs=1e-15)
    assert sum(group_advantages(rewards)) == pytest.approx(0.0, abs=1e-15)


def test_std_normalised_advantage_divides_by_population_std_plus_eps():
    rewards = [1.0, 0.0, 0.0, 0.0]
    # mean 0.25; deviations 0.75, -0.25 x3; population variance (0.5625 + 3 * 0.0625) / 4 = 0.1875
    std = math.sqrt(0.1875)
    eps = 1e-6
    expected = [0.75 / (std + eps)] + [-0.25 / (std + eps)] * 3
    assert group_advantages(rewards, std_normalize=True, eps=eps) == pytest.approx(expected, rel=1e-12)


def test_std_normalisation_of_a_uniform_group_gives_zeros_not_nan():
    assert group_advantages([0.5, 0.5], std_normalize=True) == [0.0, 0.0]


@pytest.mark.parametrize(
    ("length", "expected"),
    [
        (0, 0.0),
        (12, 0.0),  # exactly max_tokens - buffer: no penalty yet
        (13, -0.5 * 1 / 4),
        (14, -0.5 * 2 / 4),
        (16, -0.5),  # at max_tokens the full penalty
    ],
)
def test_overlong_penalty_ramps_linearly_over_the_buffer(length, expected):
    assert overlong_penalty(length, max_tokens=16, buffer=4, penalty=0.5) == pytest.approx(expected, abs=1e-15)


def test_overlong_penalty_is_applied_before_the_baseline():
    config = AdvantageConfig(overlong=OverlongConfig(buffer=4, penalty=1.0))
    rewards, lens = [1.0, 1.0], [10, 16]  # max_tokens 16: second one pays the full penalty
    assert penalized_rewards(rewards, lens, 16, config.overlong) == [1.0, 0.0]
    # adjusted rewards 1.0 and 0.0, mean 0.5
    assert compute_advantages(rewards, lens, 16, config) == pytest.approx([0.5, -0.5])


def test_dynamic_sampling_drops_uniform_groups_only_when_enabled():
    assert is_uniform([1.0, 1.0, 1.0]) and not is_uniform([1.0, 0.9, 1.0])
    keep = AdvantageConfig(drop_uniform_groups=False)
    drop = AdvantageConfig(drop_uniform_groups=True)
    assert compute_advantages([0.0, 0.0], [3, 4], 16, keep) == [0.0, 0.0]
    assert compute_advantages([0.0, 0.0], [3, 4], 16, drop) is None
    assert compute_advantages([0.0, 1.0], [3, 4], 16, drop) == pytest.approx([-0.5, 0.5])


def test_dynamic_sampling_looks_at_penalised_rewards():
    config = AdvantageConfig(drop_uniform_groups=True, overlong=OverlongConfig(buffer=2, penalty=1.0))
    # Equal env rewards, but one completion hit max_tokens: the penalty makes the group informative.
    assert compute_advantages([1.0, 1.0], [5, 8], 8, config) == pytest.approx([0.5, -0.5])
