"""Next-token sampling for a batch of sequences with per-row parameters, as pure tensor functions.

The log-prob reported for a sampled token is its log-prob under the distribution it was
actually drawn from: `log_softmax(filter(logits / T))`, where `filter` keeps each row's
top-k tokens, then the top-p nucleus of what remains (vLLM's order), and renormalises.
Greedy rows (T = 0) take the argmax and report `log_softmax(logits)` of it. The RL loss
compares these numbers with the trainer's log-probs at the same temperature, so any other
convention would bias the importance ratio.

Randomness comes from one uniform number per row and step, drawn by the caller from that
sequence's own generator: a seeded request samples the same tokens whatever batch it shares.
"""

from __future__ import annotations

import torch


def filter_logits(logits: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor) -> torch.Tensor:
    """Set to -inf every token outside the row's top-k set and then outside its top-p nucleus.

    logits [B, V] float; top_k [B] long (<= 0 or >= V: off); top_p [B] float in (0, 1] (1: off).
    Top-k keeps the k largest logits (ties with the k-th kept too). Top-p keeps, in decreasing
    probability order, every token whose preceding mass is below p: the smallest prefix whose
    mass reaches p (Holtzman et al., 2020, "The Curious Case of Neural Text Degeneration").
    """
    vocab = logits.shape[-1]
    k_on = (top_k > 0) & (top_k < vocab)
    if bool(k_on.any()):
        k_max = int(top_k[k_on].max())
        kth = logits.topk(k_max, dim=-1).values.gather(1, (top_k.clamp(1, k_max) - 1)[:, None])
        kth = torch.where(k_on[:, None], kth, torch.full_like(kth, -torch.inf))
        logits = logits.masked_fill(logits < kth, -torch.inf)
    p_on = top_p < 1.0
    if bool(p_on.any()):
        rows = p_on.nonzero().squeeze(1)
        sub = logits[rows]
        sorted_logits, order = sub.sort(dim=-1, descending=True)
        probs = sorted_logits.softmax(dim=-1)
        mass_before = probs.cumsum(dim=-1) - probs
        drop = torch.zeros_like(logits, dtype=torch.bool)
        drop[rows] = torch.zeros_like(sub, dtype=torch.bool).scatter(1, order, mass_before >= top_p[rows, None])
        logits = logits.masked_fill(drop, -torch.inf)
    return logits


def sample(
    logits: torch.Tensor,
    temperature: torch.Tensor,
    top_k: torch.Tensor,
    top_p: torch.Tensor,
    uniform: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw one token per row; returns (token ids [B] long, their log-probs [B] float32).

    logits [B, V]; temperature [B] (0: greedy); top_k, top_p as in `filter_logits`;
    uniform [B] in [0, 1). Sampling is by inverse CDF: the token is the first index whose
    cumulative probability (float64) exceeds `uniform * total`, which never selects a
    token of probability zero.
    """
    logits = logits.float()
    greedy = temperature <= 0
    tokens = torch.empty(logits.shape[0], dtype=torch.long, device=logits.device)
    logprobs = torch.empty(logits.shape[0], dtype=torch.float32, device=logits.device)
    if bool(greedy.any()):
        rows = greedy.nonzero().squeeze(1)
        raw = logits[rows].log_softmax(dim=-1)
        best = raw.argmax(dim=-1)
        tokens[rows] = best
        logprobs[rows] = raw.gather(1, best[:, None]).squeeze(1)
    if not bool(greedy.all()):
        rows = (~greedy).nonzero().squeeze(1)
        scaled = logits[rows] / temperature[rows, None]
        dist = filter_logits(scaled, top_k[rows], top_p[rows]).log_softmax(dim=-1)
        cdf = dist.double().exp().cumsum(dim=-1)
        target = uniform[rows].double()[:, None] * cdf[:, -1:]
        drawn = torch.searchsorted(cdf, target, right=True).clamp(max=logits.shape[-1] - 1)
        tokens[rows] = drawn.squeeze(1)
        logprobs[rows] = dist.gather(1, drawn).squeeze(1)
    return tokens, logprobs
