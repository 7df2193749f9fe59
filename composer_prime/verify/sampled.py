"""Proof that a volunteer's tokens were sampled by the policy, not chosen by the volunteer.

Recomputing log-probs only shows that the numbers a worker reports belong to the tokens it sent;
any completion, written by hand and scored with the run's published weights, passes that check.
So the run also fixes the randomness. The coordinator assigns every batch a 64-bit key
(coordinator/assign.py) and the worker draws completion token t of sample j by Gumbel-max:

    x_t = argmax_v (d_tv + g_tv),      g_tv = gumbel_noise(key, j, t, v)   (inference/sampling.py)

with d_t the processed log-distribution at t (log_softmax of the logits / T after top-p, the
distribution the log-probs are reported from). x_t is distributed as softmax(d_t), so an honest
worker samples exactly the policy; but given the key, the tokens are a function of the weights. The
verifier recomputes d_t with the trusted weights and the noise from the key, and measures

    gap_t = max_v (d_tv + g_tv) - (d_t,x_t + g_t,x_t)      (>= 0; 0 when x_t is the trusted argmax)

A sample passes when every gap_t <= `tolerance`; a NaN or infinite gap (a token the trusted
distribution excludes, non-finite logits) fails. The tolerance is for logits that differ slightly on
another machine (other kernels, dtype, batch shape): measured in benchmarks/sampling_proof.py.

What a worker can still choose: at a position where another token's perturbed score is within
`tolerance` of the maximum, either token passes. `choosable` counts those tokens; the measured
fraction of positions with any is in benchmarks/README.md ("Samples proven sampled"). Everywhere
else the token is forced. Noise is keyed by position, not by prefix, so a choice at one position does
not reopen the others.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from composer_prime.inference.sampling import gumbel_noise


CHUNK = 64  # positions at a time: [64, V] float64 scores, not [L, V]


def perturbed_scores(dist: torch.Tensor, key: int, sample: int, first: int = 0) -> torch.Tensor:
    """d_tv + g_tv for positions first .. first + len(dist) - 1 (`dist`: their [n, V] processed log-probs), float64."""
    vocab = dist.shape[-1]
    noise = torch.stack([gumbel_noise(key, sample, first + t, vocab) for t in range(dist.shape[0])])
    return dist.double().cpu() + noise


def sampling_gaps(dist: torch.Tensor, tokens: Sequence[int], key: int, sample: int) -> torch.Tensor:
    """gap_t (module docstring) of each token, [L] float64."""
    targets = torch.tensor(list(tokens), dtype=torch.long)
    gaps = []
    for start in range(0, dist.shape[0], CHUNK):
        scores = perturbed_scores(dist[start:start + CHUNK], key, sample, start)
        chosen = scores.gather(1, targets[start:start + CHUNK, None]).squeeze(1)
        gaps.append(scores.max(dim=1).values - chosen)
    return torch.cat(gaps)


def choosable(dist: torch.Tensor, key: int, sample: int, tolerance: float) -> torch.Tensor:
    """Per position, how many tokens besides the trusted argmax score within `tolerance` of it ([L] long):
    the alternatives a worker could submit there and still pass."""
    counts = []
    for start in range(0, dist.shape[0], CHUNK):
        scores = perturbed_scores(dist[start:start + CHUNK], key, sample, start)
        counts.append((scores >= scores.max(dim=1, keepdim=True).values - tolerance).sum(dim=1) - 1)
    return torch.cat(counts)


def sampled(gaps: Sequence[float], tolerance: float) -> bool:
    """Every gap provably within tolerance (NaN compares false, so it fails)."""
    return all(gap <= tolerance for gap in gaps)
