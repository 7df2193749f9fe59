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


def test_gumbel_noise_is_philox_keyed_by_key_sample_and_position():
    """Against the definition written out with numpy's Philox and Python's math (an independent code path):
    u = (w + 1/2) / 2^32 over the 32-bit halves w of the 64-bit outputs, g = -log(-log u)."""
    import numpy as np

    from composer_prime.inference.sampling import GUMBEL_DOMAIN, gumbel_noise

    key, vocab = 2**63 + 12345, 7
    for sample, position in [(0, 0), (3, 11), (11, 3)]:
        philox = np.random.Philox(key=np.array([key, GUMBEL_DOMAIN], dtype=np.uint64),
                                  counter=np.array([0, position, sample, 0], dtype=np.uint64))
        assert philox.state["state"]["key"].tolist() == [key, GUMBEL_DOMAIN]  # every bit of both words
        raw = philox.random_raw(4).tolist()
        halves = [half for word in raw for half in (word & 0xFFFFFFFF, word >> 32)][:vocab]
        expected = [-math.log(-math.log((w + 0.5) / 2**32)) for w in halves]
        got = gumbel_noise(key, sample, position, vocab)
        assert got.dtype == torch.float64 and got.tolist() == pytest.approx(expected, abs=1e-12)
    # Each (key, sample, position) has its own stream; the same one gives the same noise.
    # Keys over 2^63 too: from a Python list numpy rounded them through float64, so these two were one stream.
    cases = [(1, 0, 0), (2, 0, 0), (1, 1, 0), (1, 0, 1), (2**63 + 1, 0, 0), (2**63 + 2, 0, 0), (2**64 - 1, 0, 0)]
    streams = {tuple(gumbel_noise(k, s, p, 8).tolist()) for k, s, p in cases}
    assert len(streams) == len(cases) and torch.equal(gumbel_noise(1, 0, 0, 8), gumbel_noise(1, 0, 0, 8))
    with pytest.raises(ValueError, match="64 bits"):
        gumbel_noise(2**64, 0, 0, 8)


def test_keyed_rows_take_the_argmax_of_processed_logprobs_plus_noise_and_the_others_keep_the_inverse_cdf():
    from composer_prime.inference.sampling import gumbel_noise

    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(len(CASES), 40, dtype=torch.float64, generator=generator) * 3
    temperature = torch.tensor([c[0] for c in CASES])
    top_k, top_p = torch.tensor([c[1] for c in CASES]), torch.tensor([c[2] for c in CASES])
    uniform = torch.rand(len(CASES), dtype=torch.float64, generator=generator)
    noise = torch.stack([gumbel_noise(7, row, 0, 40) for row in range(len(CASES))])
    noise[1] = torch.nan  # row 1 keeps its uniform draw
    tokens, logprobs = sample(logits.float(), temperature, top_k, top_p, uniform, noise=noise)
    for i, (t, k, p) in enumerate(CASES):
        distribution = reference_distribution(logits[i].float().double().tolist(), t, k, p)
        if i == 1:
            expected = reference_draw(distribution, float(uniform[i]))
        else:  # outside the support a token never wins: it is not a key of `distribution`
            expected = max(distribution, key=lambda token: distribution[token] + float(noise[i, token]))
        assert int(tokens[i]) == expected
        assert float(logprobs[i]) == pytest.approx(distribution[expected], abs=1e-5)


def test_gumbel_max_draws_follow_the_softmax():
    """20,000 keyed draws of one distribution (sample index s, position 0) against its float64 probabilities:
    Pearson's chi-square over 6 tokens stays below the 0.999 quantile of chi2(5), 20.5."""
    from composer_prime.inference.sampling import gumbel_noise

    logits = torch.tensor([[2.0, 1.0, 0.5, 0.0, -1.0, -3.0]])
    probs = torch.softmax(logits.double()[0], 0)
    n = 20_000
    counts = torch.zeros(6, dtype=torch.float64)
    noise = torch.stack([gumbel_noise(99, s, 0, 6) for s in range(n)])
    tokens, _ = sample(logits.expand(n, 6).float(), torch.ones(n), torch.full((n,), -1), torch.ones(n),
                       torch.zeros(n, dtype=torch.float64), noise=noise)
    counts.index_add_(0, tokens, torch.ones(n, dtype=torch.float64))
    chi2 = float(((counts - n * probs) ** 2 / (n * probs)).sum())
    assert chi2 < 20.5, (counts.tolist(), (n * probs).tolist())


def test_logprobs_at_a_real_vocabulary_size_carry_no_bias_and_match_the_trainers():
    # torch's float32 log_softmax on CPU over 49,152 logits (SmolLM2's vocabulary) reads every token +8.9e-6 nats
    # too likely, a drift of one sign that put the on-policy importance ratio at 1 - 1.5e-5. The sampler's
    # log-probs must sit on float64's and equal the trainer's normaliser (trainer/logprobs.py) to float32 rounding.
    from composer_prime.trainer.logprobs import selected_log_softmax

    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(64, 49152, generator=generator) * 2.5 + 5
    logits[:, 0] += 15  # a confident token, as a trained model has
    rows = logits.shape[0]
    for temperature in (1.0, 0.7):
        tokens, logprobs = sample(logits, torch.full((rows,), temperature), torch.zeros(rows, dtype=torch.long),
                                  torch.ones(rows), torch.rand(rows, generator=generator, dtype=torch.float64))
        exact = (logits.double() / temperature).log_softmax(-1).gather(1, tokens[:, None]).squeeze(1)
        error = logprobs.double() - exact
        assert abs(error.mean().item()) < 1e-6 and error.abs().max().item() < 1e-5
        trainer = selected_log_softmax(logits, tokens, temperature)
        assert (logprobs - trainer).abs().max().item() < 2e-6
