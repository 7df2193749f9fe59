"""Held-out KL(student || hinted teacher) at error sites: what channel 2 is meant to lower.

The same computation as the trainer's hint channel (trainer/hint.py), without gradient: for each
site the model scores the error turn after the original context (student) and after the hinted
one (teacher); the value is the mean over the turn's tokens of KL(p_student || p_teacher).
"""

from __future__ import annotations

import torch

from composer_prime.batch import HintSite
from composer_prime.configs.trainer import HintLossConfig
from composer_prime.trainer.hint import HintChannel


@torch.no_grad()
def error_site_kl(model: torch.nn.Module, sites: list[HintSite], temperature: float = 1.0) -> float:
    """Mean per-token reverse KL to the hinted teacher over all sites' error-turn tokens."""
    if not sites:
        raise ValueError("no error sites to evaluate")
    channel = HintChannel(HintLossConfig(weight=1.0, beta=1.0, temperature=temperature), total_steps=1)
    device = next(model.parameters()).device
    total, tokens = 0.0, 0
    for mb in channel.micro_batches(sites, device):
        _, diagnostics = channel.loss(model, mb)
        total += float(diagnostics["hint/kl"])
        tokens += int(mb.student_mask.sum())
    return total / tokens
