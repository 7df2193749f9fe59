"""Next-token sampling for a batch of sequences with per-row parameters, as pure tensor functions.

The log-prob reported for a sampled token is its log-prob under the distribution it was
actually drawn from: `log_softmax(filter(logits / T))`, where `filter` keeps each row's
top-k tokens, then the top-p nucleus of what remains (vLLM's order), and renormalises.
Greedy rows (T = 0) take the argmax and report `log_softmax(logits)` of it. The RL loss
compares these numbers with the trainer's log-probs at the same temperature, so any other
convention would bias the importance ratio.

Randomness comes from one uniform number per row and step, drawn by the caller from that
sequence's own generator: a seeded request samples the same tokens whatever batch it shares.
A row can instead be drawn by Gumbel-max with keyed noise (`gumbel_noise`): the token is
`argmax_v (dist_v + g_v)`, where `dist` is the same processed log-distribution and `g` is a pure
function of (key, sample, position, v). That draw has the same distribution, and anyone holding
the key and the logits can re-derive it: how volunteers prove their tokens were sampled
(composer_prime/verify/sampled.py).
"""

from __future__ import annotations

import numpy as np
import torch

GUMBEL_DOMAIN = 0x636F6D706F736572  # the second Philox key word: these streams serve nothing else


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


def log_softmax(logits: torch.Tensor) -> torch.Tensor:
    """`log_softmax` over the last dim, as `logits - logsumexp(logits)`: the normaliser the trainer scores with
    (trainer/logprobs.py), so sampler and trainer report the same log-probs for the same logits.

    Not torch's `log_softmax`: on CPU in float32 its sum over the vocabulary drifts with the vocabulary's size,
    always upward (+8.9e-6 nats per token at 49,152 logits, +2.2e-5 at 151,936; `logsumexp` stays within 2e-7 of
    float64), which put SmolLM2's on-policy importance ratio 1 - 1.5e-5 instead of 1 (benchmarks/README.md,
    "SmolLM2").
    """
    return logits - torch.logsumexp(logits, dim=-1, keepdim=True)


def gumbel_noise(key: int, sample: int, position: int, vocab: int) -> torch.Tensor:
    """[vocab] float64 standard Gumbel noise for completion `sample`'s token at `position`:

        g_v = -log(-log(u_v)),   u_v = (w_v + 1/2) / 2^32,

    where w_0, w_1, ... are the 32-bit halves (low first) of the 64-bit outputs of Philox4x64-10
    (Salmon et al. 2011, "Parallel random numbers: as easy as 1, 2, 3"; numpy.random.Philox) keyed
    (key, GUMBEL_DOMAIN) from counter (0, position, sample, 0). A counter-based generator: each
    (key, sample, position) owns its own stream, so the noise is the same on every machine and in
    any batch. Half-open 32-bit uniforms keep u in (0, 1): g is finite, within about +-23.
    numpy's Philox is the field's tested implementation; torch exposes no keyed counter-based one.
    """
    if not 0 <= key < 2**64:
        raise ValueError(f"a Gumbel key is 64 bits, got {key}")
    # uint64 arrays: from a list numpy takes a word >= 2^63 through float64 and rounds it (key 2^63 + 5 became 2^63).
    words64 = np.array([key, GUMBEL_DOMAIN], dtype=np.uint64), np.array([0, position, sample, 0], dtype=np.uint64)
    bits = np.random.Philox(key=words64[0], counter=words64[1]).random_raw((vocab + 1) // 2)
    words = bits.view(np.uint32)[:vocab]  # little-endian: the low half of each output first
    uniform = (torch.from_numpy(words.astype(np.float64)) + 0.5) / 2.0**32
    return -torch.log(-torch.log(uniform))


def sample(
    logits: torch.Tensor,
    temperature: torch.Tensor,
    top_k: torch.Tensor,
    top_p: torch.Tensor,
    uniform: torch.Tensor,
    noise: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw one token per row; returns (token ids [B] long, their log-probs [B] float32).

    logits [B, V]; temperature [B] (0: greedy); top_k, top_p as in `filter_logits`;
    uniform [B] in [0, 1). Sampling is by inverse CDF: the token is the first index whose
    cumulative probability (float64) exceeds `uniform * total`, which never selects a
    token of probability zero.
    noise [B, V] float64 (optional): rows whose noise is finite are drawn by Gumbel-max instead,
    `argmax_v (dist_v + noise_v)` with `dist` the processed log-distribution (Gumbel, 1954: the
    argmax is distributed as softmax(dist)); a NaN row keeps the inverse CDF. Filtered-out tokens
    (dist = -inf) are never drawn either way.
    """
    logits = logits.float()
    greedy = temperature <= 0
    tokens = torch.empty(logits.shape[0], dtype=torch.long, device=logits.device)
    logprobs = torch.empty(logits.shape[0], dtype=torch.float32, device=logits.device)
    if bool(greedy.any()):
        rows = greedy.nonzero().squeeze(1)
        raw = log_softmax(logits[rows])
        best = raw.argmax(dim=-1)
        tokens[rows] = best
        logprobs[rows] = raw.gather(1, best[:, None]).squeeze(1)
    if not bool(greedy.all()):
        rows = (~greedy).nonzero().squeeze(1)
        scaled = logits[rows] / temperature[rows, None]
        dist = log_softmax(filter_logits(scaled, top_k[rows], top_p[rows]))
        cdf = dist.double().exp().cumsum(dim=-1)
        target = uniform[rows].double()[:, None] * cdf[:, -1:]
        drawn = torch.searchsorted(cdf, target, right=True).clamp(max=logits.shape[-1] - 1)
        if noise is not None:
            keyed = noise[rows, 0].isfinite()
            if bool(keyed.any()):
                perturbed = dist[keyed].double() + noise[rows][keyed].to(dist.device)
                drawn[keyed] = perturbed.argmax(dim=-1, keepdim=True)
        tokens[rows] = drawn.squeeze(1)
        logprobs[rows] = dist.gather(1, drawn).squeeze(1)
    return tokens, logprobs
