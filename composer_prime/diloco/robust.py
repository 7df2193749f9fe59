"""Checks and robust combination of pseudo-gradients from sites that may be faulty or malicious.

A pseudo-gradient counts only if it is finite, its norm is within `max_norm_ratio` of the median
norm of the finite ones (when that median is 0, only a zero one is), and its direction agrees
with the coordinate-wise median of those (cosine >= `min_cosine`; none does with a zero median,
and a zero pseudo-gradient, which cannot steer anything, always does). The accepted ones are
then combined coordinate-wise by a rule that a minority cannot drag arbitrarily far: trimmed
mean (drop `trim` values at each end) or median.
`mean` is plain averaging, kept to show what it lets through.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

import torch
from torch import Tensor


@dataclass
class Verdict:
    accepted: list[str]
    rejected: dict[str, str] = field(default_factory=dict)
    """site -> reason (non-finite, norm, direction)."""
    norms: dict[str, float] = field(default_factory=dict)
    cosines: dict[str, float] = field(default_factory=dict)


def coordinate_median(stacked: Tensor) -> Tensor:
    """Median over dim 0; the mean of the two middle values for an even count (torch.median takes the lower)."""
    ordered = stacked.sort(dim=0).values
    n = ordered.shape[0]
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def check(pseudo_grads: dict[str, Tensor], max_norm_ratio: float, min_cosine: float) -> Verdict:
    verdict = Verdict(accepted=[])
    finite = {}
    for site, pg in sorted(pseudo_grads.items()):
        if not bool(torch.isfinite(pg).all()):
            verdict.rejected[site] = "non-finite"
        else:
            finite[site] = pg
            verdict.norms[site] = float(pg.double().norm())
    if not finite:
        return verdict
    median_norm = statistics.median(verdict.norms[s] for s in finite)
    # A median of 0 allows 0, not anything: `ratio x 0` would be NaN for an infinite ratio, and NaN compares false.
    limit = max_norm_ratio * median_norm if median_norm > 0 else 0.0
    in_norm = {}
    for site, pg in finite.items():
        if verdict.norms[site] > limit:
            verdict.rejected[site] = "norm"
        else:
            in_norm[site] = pg
    if not in_norm:
        return verdict
    reference = coordinate_median(torch.stack([pg.double() for pg in in_norm.values()]))
    ref_norm = float(reference.norm())
    for site, pg in in_norm.items():
        norm = verdict.norms[site]
        if norm == 0:
            # A zero pseudo-gradient points nowhere: it can only shrink the combination, never steer it.
            verdict.cosines[site] = 0.0
            verdict.accepted.append(site)
            continue
        # Against a zero reference no direction agrees with the majority: cosine 0 and refused, whatever min_cosine.
        cosine = float(pg.double() @ reference) / (norm * ref_norm) if ref_norm > 0 else 0.0
        verdict.cosines[site] = cosine
        if ref_norm == 0 or cosine < min_cosine:
            verdict.rejected[site] = "direction"
        else:
            verdict.accepted.append(site)
    return verdict


def combine(pseudo_grads: list[Tensor], rule: str, trim: int = 1) -> Tensor:
    if not pseudo_grads:
        raise ValueError("no pseudo-gradient to combine")
    stacked = torch.stack(pseudo_grads)
    if rule == "mean":
        return stacked.mean(dim=0)
    if rule == "median":
        return coordinate_median(stacked)
    if rule == "trimmed_mean":
        n = stacked.shape[0]
        if n - 2 * trim < 1:
            return coordinate_median(stacked)  # too few to trim: the median is the fully trimmed mean
        return stacked.sort(dim=0).values[trim:n - trim].mean(dim=0)
    raise ValueError(f"unknown combination rule {rule!r}")


