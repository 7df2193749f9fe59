"""Sampling gaps against the definition, in float64: gap_t = max_v (d_tv + g_tv) - (d_t,x_t + g_t,x_t)."""

from __future__ import annotations

import math

import torch

from composer_prime.inference.sampling import gumbel_noise
from composer_prime.verify.sampled import choosable, sampled, sampling_gaps


def test_gaps_are_zero_for_the_drawn_tokens_and_the_score_deficit_for_others():
    dist = torch.randn(5, 12, dtype=torch.float64, generator=torch.Generator().manual_seed(0)).log_softmax(-1)
    key, sample = 77, 3
    scores = [[float(dist[t, v]) + float(gumbel_noise(key, sample, t, 12)[v]) for v in range(12)] for t in range(5)]
    drawn = [max(range(12), key=lambda v: row[v]) for row in scores]
    assert sampling_gaps(dist, drawn, key, sample).tolist() == [0.0] * 5
    other = [(x + 1) % 12 for x in drawn]
    expected = [max(row) - row[x] for row, x in zip(scores, other)]
    got = sampling_gaps(dist, other, key, sample).tolist()
    assert all(math.isclose(a, b, abs_tol=1e-12) for a, b in zip(got, expected)) and min(got) > 0
    # Another sample index or key is other noise: the drawn tokens are no longer all drawn.
    assert sampling_gaps(dist, drawn, key, sample + 1).max() > 0 or sampling_gaps(dist, drawn, key + 1, sample).max() > 0


def test_non_finite_gaps_fail_and_near_ties_are_counted():
    dist = torch.full((2, 4), -math.log(4), dtype=torch.float64)
    drawn = [int((dist[t] + gumbel_noise(1, 0, t, 4)).argmax()) for t in range(2)]
    assert sampled(sampling_gaps(dist, drawn, 1, 0).tolist(), 0.0)
    excluded = dist.clone()
    excluded[0, drawn[0]] = -math.inf  # a token the trusted distribution excludes (top-p) was submitted
    assert not sampled(sampling_gaps(excluded, drawn, 1, 0).tolist(), 1e9)
    nan = dist.clone()
    nan[1] = math.nan
    assert not sampled(sampling_gaps(nan, drawn, 1, 0).tolist(), 1e9)
    # Position 0 made a near tie: the runner-up raised to within 0.01 of the drawn token's perturbed score.
    noise = gumbel_noise(1, 0, 0, 4)
    runner = max((v for v in range(4) if v != drawn[0]), key=lambda v: float(noise[v]))
    tied = dist.clone()
    tied[0, runner] += float(noise[drawn[0]] - noise[runner]) - 0.01
    assert choosable(tied, 1, 0, tolerance=0.02).tolist()[0] == 1
    assert choosable(tied, 1, 0, tolerance=0.005).tolist()[0] == 0
