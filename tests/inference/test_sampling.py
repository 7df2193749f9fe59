"""Sampling math against a float64 reference written out by hand, one row at a time."""

from __future__ import annotations

import math

import pytest
import torch

from composer_prime.inference.sampling import sample


def reference_distribution(row: list[float], temperature: float, top_k: int, top_p: float) -> dict[int, float]:
    """log p(token) of the distribution sampled from: logits / T, top-k, then top-p, renormalised."""
    scaled = [x / temperature for x in row]
    order = sorted(range(len(row)), key=lambda i: -scaled[i])
    if 0 < top_k < len(row):
        order = order[:top_k]
    top = scaled[order[0]]
    z = sum(math.exp(scaled[i] - top) for i in order)
    nucleus, mass = [], 0.0
    for i in order:
        if mass >= top_p:
            break
        nucleus.append(i)
        mass += math.exp(scaled[i] - top) / z
    log_z = math.log(sum(math.exp(scaled[i] - top) for i in nucleus))
    return {i: scaled[i] - top - log_z for i in nucleus}


def reference_draw(distribution: dict[int, float], uniform: float) -> int:
    """Inverse CDF over token ids in increasing order."""
    target = uniform * sum(math.exp(lp) for lp in distribution.values())
    cumulative = 0.0
    for token in sorted(distribution):
        cumulative += math.exp(distribution[token])
        if cumulative > target:
            return token
    raise AssertionError("uniform outside [0, 1)")


CASES = [  # temperature, top_k, top_p
    (1.0, -1, 1.0),
    (0.7, -1, 1.0),
    (1.3, 5, 1.0),
    (1.0, -1, 0.6),
    (0.5, 8, 0.8),
    (1.0, 64, 0.95),  # top-k larger than the vocabulary: off
]


@pytest.mark.parametrize("seed", range(5))
def test_sampled_tokens_and_logprobs_match_reference(seed):
    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn(len(CASES), 40, dtype=torch.float64, generator=generator) * 3
    uniform = torch.rand(len(CASES), dtype=torch.float64, generator=generator)
    temperature = torch.tensor([c[0] for c in CASES])
    top_k = torch.tensor([c[1] for c in CASES])
    top_p = torch.tensor([c[2] for c in CASES])

    tokens, logprobs = sample(logits.float(), temperature, top_k, top_p, uniform)

    for i, (t, k, p) in enumerate(CASES):
        distribution = reference_distribution(logits[i].float().double().tolist(), t, k, p)
        assert int(tokens[i]) == reference_draw(distribution, float(uniform[i]))
        # float32 log-softmax of the same logits: eps 1.2e-7 x |logits / T| <= ~20 x a few roundings < 1e-5
        assert float(logprobs[i]) == pytest.approx(distribution[int(tokens[i])], abs=1e-5)


def test_filters_shrink_the_support_to_what_the_reference_keeps():
    logits = torch.tensor([[4.0, 3.0, 2.0, 1.0, 0.0]])
    # top-k 2 keeps tokens 0 and 1; top-p 0.5 keeps token 0 only (its own mass is above 0.5).
    for k, p, support in [(2, 1.0, {0, 1}), (-1, 0.5, {0}), (-1, 0.7, {0, 1})]:
        reference = reference_distribution(logits[0].tolist(), 1.0, k, p)
        assert set(reference) == support
        seen = {
            int(sample(logits, torch.tensor([1.0]), torch.tensor([k]), torch.tensor([p]), torch.tensor([u]))[0])
            for u in torch.linspace(0, 0.999, 50).tolist()
        }
        assert seen == support


def test_greedy_rows_take_the_argmax_with_raw_logprob():
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 30, dtype=torch.float64, generator=generator)
    temperature = torch.tensor([0.0, 1.0, 0.0])
    tokens, logprobs = sample(logits.float(), temperature, torch.tensor([3, -1, -1]), torch.tensor([0.5, 1.0, 1.0]),
                              torch.tensor([0.9, 0.5, 0.1]))
    for i in (0, 2):  # top-k / top-p do not apply to greedy rows
        row = logits[i].tolist()
        best = max(range(30), key=lambda j: row[j])
        log_z = math.log(sum(math.exp(x) for x in row))
        assert int(tokens[i]) == best
        assert float(logprobs[i]) == pytest.approx(row[best] - log_z, abs=1e-5)  # float32, as above
    sampled = reference_distribution(logits[1].float().double().tolist(), 1.0, -1, 1.0)
    assert int(tokens[1]) == reference_draw(sampled, 0.5)
