"""A nearby but different model: seeded Gaussian noise on every weight.

Stands in for another checkpoint where tests and benchmarks need one and no hub is reachable
(replay teachers, a worker proving with the wrong weights).
"""

from __future__ import annotations

import torch


@torch.no_grad()
def add_weight_noise_(model: torch.nn.Module, noise: float, seed: int) -> torch.nn.Module:
    """In place: each parameter p += N(0, (noise * std(p))^2), from a generator seeded with `seed`; returns `model`."""
    generator = torch.Generator().manual_seed(seed)
    for param in model.parameters():
        param.add_(torch.randn(param.shape, generator=generator) * noise * param.std().clamp_min(1e-6))
    return model
