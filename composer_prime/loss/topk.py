"""Top-k + tail side channel: a teacher distribution compressed to what travels between processes.

PRIME-RL's trainer only sees per-token log-probs, never full logits, so a distillation teacher
computed elsewhere (the inference server running the hinted context, for SDPO / Composer hint
distillation) sends, per token, its k most likely token ids (int32) and their log-probs (float32):
8 k bytes per token instead of 4 V.

Divergences are then taken over k + 1 buckets: the k ids plus one "tail" bucket holding the
leftover mass log(1 - sum_k p), for both teacher and student, so that the bucketed distributions
still sum to one (Hubotter et al. 2026, "Reinforcement Learning via Self-Distillation", SDPO;
the same construction as TRL's `trl.experimental.sdpo.loss_utils.add_tail_bucket`).
"""

from __future__ import annotations

from typing import NamedTuple

import torch


class TopKLogprobs(NamedTuple):
    """Teacher side channel for a batch of tokens.

    Attributes:
        ids: `[..., k]` int32 token ids, most likely first.
        logprobs: `[..., k]` log-probs of those ids under the full-vocabulary softmax (at the
            temperature given to `extract_topk`); float32, or float64 for float64 logits.
    """

    ids: torch.Tensor
    logprobs: torch.Tensor


def extract_topk(logits: torch.Tensor, k: int, *, temperature: float = 1.0) -> TopKLogprobs:
    """The k most likely tokens of `softmax(logits / temperature)` and their log-probs.

    Args:
        logits: `[..., V]` teacher logits, any float dtype (the softmax is taken in float32 or wider).
        k: number of ids kept per token, 1 <= k <= V.
        temperature: the divergence's temperature; the consumer must use the same one.
    """
    if not 1 <= k <= logits.shape[-1]:
        raise ValueError(f"k must be in [1, {logits.shape[-1]}], got {k}")
    logprobs = torch.log_softmax(logits.to(torch.promote_types(logits.dtype, torch.float32)) / temperature, dim=-1)
    values, ids = torch.topk(logprobs, k, dim=-1)
    return TopKLogprobs(ids=ids.to(torch.int32), logprobs=values)


def append_tail(logprobs: torch.Tensor) -> torch.Tensor:
    """`[..., k]` log-probs -> `[..., k + 1]` with last bucket log(1 - sum_k exp(logprobs)).

    The captured mass is capped at 1 - eps (machine epsilon of the dtype): when the k ids hold all
    the mass (k = V, or a tail below rounding), both sides get the same eps tail, which adds exactly
    0 to any divergence, and the cap stops log(0) from turning gradients into NaN. The tail is a
    difference 1 - sum, so a tail near eps (1.2e-7 in float32) carries a large relative error: a
    student that puts mass p where the teacher's tail is tinier is charged about p log(p / eps).
    """
    captured = torch.logsumexp(logprobs, dim=-1, keepdim=True).clamp(max=-torch.finfo(logprobs.dtype).eps)
    return torch.cat([logprobs, torch.log(-torch.expm1(captured))], dim=-1)


def gather_logprobs(logits: torch.Tensor, ids: torch.Tensor, *, temperature: float = 1.0) -> torch.Tensor:
    """Student log-probs of `softmax(logits / temperature)` at `ids`, plus the student's own tail bucket.

    Args:
        logits: `[..., V]` student logits (gradients flow through them).
        ids: `[..., k]` token ids, usually `TopKLogprobs.ids` from the teacher.

    Returns:
        `[..., k + 1]` log-probs in float32 or wider.
    """
    scaled = logits.to(torch.promote_types(logits.dtype, torch.float32)) / temperature
    picked = scaled.gather(-1, ids.long()) - torch.logsumexp(scaled, dim=-1, keepdim=True)
    return append_tail(picked)
