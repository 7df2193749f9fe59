"""Generalised Jensen-Shannon divergence between a student and a (stop-gradient) teacher.

The distillation channel of the recipe (SDPO / Composer 2.5 hint self-distillation, on-policy
distillation) in three forms that compute the same per-token quantity:

- `generalized_jsd`: full vocabulary, plain autograd, `[..., V]` logits.
- `chunked_generalized_jsd`: full vocabulary, tokens processed `chunk_size` at a time with a
  hand-derived backward, so that the extra memory is O(chunk x V) in forward, and in backward
  beyond the `[tokens, V]` gradient itself, instead of several O(tokens x V) tensors.
- `sparse_generalized_jsd`: over the teacher's top-k ids plus one tail bucket (`loss/topk.py`).

Convention (checked against TRL 1.16 `trl.experimental.gkd.GKDTrainer.generalized_jsd_loss`;
Agarwal et al. 2024, "On-Policy Distillation of Language Models", Eq. 1): with
p_S = softmax(student / T), p_T = softmax(teacher / T) and M = (1 - beta) p_S + beta p_T,

    beta = 0:       KL(p_T || p_S)                                (forward KL, mode covering)
    beta = 1:       KL(p_S || p_T)                                (reverse KL, mode seeking)
    0 < beta < 1:   beta KL(p_T || M) + (1 - beta) KL(p_S || M)

summed over the vocabulary. The interior is bounded by log 2 and tends to 0 at both ends, which is
why the endpoints are separate cases: beta = 0.5 is not "half way" in scale between them. No T^2
factor is applied (TRL does not either).
"""

from __future__ import annotations

import math
from typing import Literal

import torch

from composer_prime.loss.topk import TopKLogprobs, append_tail, gather_logprobs

Reduction = Literal["sum", "mean", "none"]


def divergence_from_logprobs(
    student_logprobs: torch.Tensor, teacher_logprobs: torch.Tensor, beta: float
) -> torch.Tensor:
    """Generalised JSD over the last dimension of two normalised log-prob tensors.

    Args:
        student_logprobs: `[..., K]` log p_S (K = V, or k + 1 buckets).
        teacher_logprobs: `[..., K]` log p_T.
        beta: 0 forward KL(p_T || p_S), 1 reverse KL(p_S || p_T), else the JSD mixture (module docstring).

    Returns:
        `[...]` per-token divergence.
    """
    _check_beta(beta)
    if beta == 0.0:
        return _kl(teacher_logprobs, student_logprobs)
    if beta == 1.0:
        return _kl(student_logprobs, teacher_logprobs)
    mixture = torch.logaddexp(student_logprobs + math.log1p(-beta), teacher_logprobs + math.log(beta))
    return beta * _kl(teacher_logprobs, mixture) + (1.0 - beta) * _kl(student_logprobs, mixture)


def reduce_tokens(
    per_token: torch.Tensor,
    *,
    mask: torch.Tensor | None = None,
    clamp: float | None = None,
    token_weights: torch.Tensor | None = None,
    reduction: Reduction = "mean",
) -> torch.Tensor:
    """Clamp, weight, mask and reduce a per-token loss.

    Args:
        per_token: `[...]` per-token loss.
        mask: `[...]` bool (or 0/1), True where the token counts. Masked tokens add 0 and get 0 gradient.
        clamp: cap on each token's loss (OPSD); a capped token gets no gradient.
        token_weights: `[...]` multiplier applied after the clamp (e.g. `sdpo_importance_weights`).
        reduction: "sum", "mean" (sum over the count of unmasked tokens, at least 1), or "none"
            (per-token, masked tokens set to 0).
    """
    if clamp is not None:
        per_token = per_token.clamp(max=clamp)
    if token_weights is not None:
        per_token = per_token * token_weights
    if mask is not None:
        mask = mask.bool()
        per_token = per_token.masked_fill(~mask, 0.0)
    if reduction == "none":
        return per_token
    if reduction == "sum":
        return per_token.sum()
    if reduction == "mean":
        count = per_token.new_tensor(max(per_token.numel(), 1)) if mask is None else mask.sum().clamp(min=1)
        return per_token.sum() / count
    raise ValueError(f"reduction must be 'sum', 'mean' or 'none', got {reduction!r}")


def generalized_jsd(
    student_logits: torch.Tensor,
    teacher_logits: torch.Tensor,
    *,
    beta: float = 0.5,
    temperature: float = 1.0,
    mask: torch.Tensor | None = None,
    clamp: float | None = None,
    token_weights: torch.Tensor | None = None,
    reduction: Reduction = "mean",
) -> torch.Tensor:
    """Full-vocabulary generalised JSD (module docstring) of student and teacher logits.

    Materialises several `[tokens, V]` tensors for autograd; use `chunked_generalized_jsd` when
    tokens x V is large. The teacher is detached.

    Args:
        student_logits: `[..., V]`.
        teacher_logits: `[..., V]`, same shape.
        beta: interpolation in [0, 1].
        temperature: both sides are divided by it before the softmax.
        mask, clamp, token_weights, reduction: see `reduce_tokens`.
    """
    dtype = torch.promote_types(student_logits.dtype, torch.float32)
    student = torch.log_softmax(student_logits.to(dtype) / temperature, dim=-1)
    teacher = torch.log_softmax(teacher_logits.detach().to(dtype) / temperature, dim=-1)
    per_token = divergence_from_logprobs(student, teacher, beta)
    return reduce_tokens(per_token, mask=mask, clamp=clamp, token_weights=token_weights, reduction=reduction)


def chunked_generalized_jsd(
    student_logits: torch.Tensor,
    teacher_logits: torch.Tensor,
    *,
    beta: float = 0.5,
    temperature: float = 1.0,
    mask: torch.Tensor | None = None,
    clamp: float | None = None,
    token_weights: torch.Tensor | None = None,
    reduction: Reduction = "mean",
    chunk_size: int | None = None,
) -> torch.Tensor:
    """`generalized_jsd` computed `chunk_size` tokens at a time, forward and backward.

    Forward keeps only the per-token values; backward recomputes each chunk's softmaxes and writes
    the closed-form gradient into the `[tokens, V]` gradient buffer (which autograd needs anyway).
    With s = z / T, p = softmax(s) and L the per-token divergence,

        dL/dz_j = p_j (g_j - sum_i p_i g_i) / T,   g = dL/dp:
        beta = 0: dL/dz = (p - q) / T;   beta = 1: g = log p - log q;   else g = (1 - beta) log(p / M).

    Args:
        chunk_size: tokens per chunk; the extra memory is 4 x chunk_size x V floats (plus the
            `[tokens, V]` gradient in backward). Default: 2^20 // V on CPU (cache-sized), 2^25 // V
            on accelerators.
        Others: as `generalized_jsd`.
    """
    _check_beta(beta)
    vocab = student_logits.shape[-1]
    chunk_size = chunk_size or _default_chunk_size(student_logits)
    per_token = _ChunkedJSD.apply(
        student_logits.reshape(-1, vocab), teacher_logits.detach().reshape(-1, vocab), beta, temperature, chunk_size
    ).reshape(student_logits.shape[:-1])
    return reduce_tokens(per_token, mask=mask, clamp=clamp, token_weights=token_weights, reduction=reduction)


def sparse_generalized_jsd(
    student_logits: torch.Tensor,
    teacher_topk: TopKLogprobs,
    *,
    beta: float = 0.5,
    temperature: float = 1.0,
    mask: torch.Tensor | None = None,
    clamp: float | None = None,
    token_weights: torch.Tensor | None = None,
    reduction: Reduction = "mean",
) -> torch.Tensor:
    """Generalised JSD over k + 1 buckets: the teacher's top-k ids and one tail bucket.

    The student's log-probs are gathered at the teacher's ids and completed with the student's own
    tail, log(1 - sum_k p_S); the teacher's tail comes from its k log-probs (`loss/topk.py`). With
    k = V it equals `generalized_jsd`; for k < V it is a lower bound (merging outcomes can only
    lower an f-divergence), tight when both sides put little mass in the tail. SDPO's reference
    code takes the support from the student's top-k instead; any ids work here as long as the
    teacher's log-probs are at those ids.

    Args:
        student_logits: `[..., V]`.
        teacher_topk: `TopKLogprobs` with `[..., k]` ids and log-probs, extracted at `temperature`.
        Others: as `generalized_jsd`.
    """
    student = gather_logprobs(student_logits, teacher_topk.ids, temperature=temperature)
    teacher = append_tail(teacher_topk.logprobs.detach().to(student.dtype))
    per_token = divergence_from_logprobs(student, teacher, beta)
    return reduce_tokens(per_token, mask=mask, clamp=clamp, token_weights=token_weights, reduction=reduction)


def sdpo_importance_weights(logprobs: torch.Tensor, old_logprobs: torch.Tensor, clip: float = 2.0) -> torch.Tensor:
    """SDPO's clipped importance weight min(pi / pi_old, clip) of each sampled token, no gradient.

    The rollout came from the policy at sampling time (pi_old, e.g. the inference log-probs), the
    distillation gradient is taken at the current policy pi; Hubotter et al. (2026) reweight each
    token's distillation loss by this ratio, capped at 2, to correct for the staleness. Pass the
    result as `token_weights`.

    Args:
        logprobs: `[...]` current log-prob of each sampled token.
        old_logprobs: `[...]` log-prob of the same tokens at sampling time.
        clip: upper cap of the ratio.
    """
    return torch.exp(torch.clamp(logprobs.detach() - old_logprobs, max=math.log(clip)))


def _kl(log_p: torch.Tensor, log_q: torch.Tensor) -> torch.Tensor:
    """KL(p || q) = sum p (log p - log q) over the last dimension."""
    return (log_p.exp() * (log_p - log_q)).sum(-1)


def _check_beta(beta: float) -> None:
    if not 0.0 <= beta <= 1.0:
        raise ValueError(f"beta must be in [0, 1], got {beta}")


class _ChunkedJSD(torch.autograd.Function):
    """Per-token generalised JSD of `[N, V]` logits; only the student receives a gradient."""

    @staticmethod
    def forward(ctx, student_logits, teacher_logits, beta, temperature, chunk_size):
        dtype = torch.promote_types(student_logits.dtype, torch.float32)
        work = _workspace(student_logits, chunk_size, dtype)
        per_token = student_logits.new_empty(student_logits.shape[0], dtype=dtype)
        for start in range(0, student_logits.shape[0], chunk_size):
            rows = slice(start, start + chunk_size)
            per_token[rows] = _chunk(student_logits[rows], teacher_logits[rows], beta, temperature, work, False)
        ctx.save_for_backward(student_logits, teacher_logits)
        ctx.beta, ctx.temperature, ctx.chunk_size = beta, temperature, chunk_size
        return per_token

    @staticmethod
    def backward(ctx, grad_per_token):
        student_logits, teacher_logits = ctx.saved_tensors
        work = _workspace(student_logits, ctx.chunk_size, grad_per_token.dtype)
        grad = torch.empty_like(student_logits)
        for start in range(0, student_logits.shape[0], ctx.chunk_size):
            rows = slice(start, start + ctx.chunk_size)
            _chunk(student_logits[rows], teacher_logits[rows], ctx.beta, ctx.temperature, work, True)
            chunk_grad = work[0][: grad[rows].shape[0]]
            torch.mul(chunk_grad, grad_per_token[rows].unsqueeze(-1), out=grad[rows])
        return grad, None, None, None, None


def _default_chunk_size(logits: torch.Tensor) -> int:
    # CPU: ~4 MiB per buffer keeps a chunk in L2 (reverse KL measured 1.4x cross-entropy time, 2.3x
    # with 128-row chunks); accelerators: large chunks, since each chunk costs ~20 kernel launches.
    elements = 2**20 if logits.device.type == "cpu" else 2**25
    return max(1, elements // logits.shape[-1])


def _workspace(logits: torch.Tensor, chunk_size: int, dtype: torch.dtype) -> list[torch.Tensor]:
    # Reused by every chunk: a fresh large allocation per op costs page faults that, on CPU,
    # took longer than the arithmetic.
    rows = min(chunk_size, logits.shape[0])
    return [logits.new_empty(rows, logits.shape[-1], dtype=dtype) for _ in range(4)]


def _log_softmax_into(out: torch.Tensor, logits: torch.Tensor, temperature: float, scratch: torch.Tensor) -> None:
    if temperature == 1.0:
        torch.log_softmax(logits, -1, dtype=out.dtype, out=out)
    else:
        torch.div(logits.to(out.dtype), temperature, out=scratch)
        torch.log_softmax(scratch, -1, out=out)


def _chunk(
    student_logits: torch.Tensor,
    teacher_logits: torch.Tensor,
    beta: float,
    temperature: float,
    work: list[torch.Tensor],
    with_grad: bool,
) -> torch.Tensor:
    """Per-token divergence of one chunk; with `with_grad`, `work[0]` ends up holding dL/dz.

    Everything happens in place in the four workspace buffers a, b, c, d.
    """
    a, b, c, d = (w[: student_logits.shape[0]] for w in work)
    _log_softmax_into(a, student_logits, temperature, c)  # a = log p
    _log_softmax_into(b, teacher_logits, temperature, c)  # b = log q
    if beta == 0.0:
        torch.exp(b, out=c)  # c = q
        value = torch.sub(b, a, out=d).mul_(c).sum(-1)
        if with_grad:
            a.exp_().sub_(c)  # p - q
    elif beta == 1.0:
        torch.exp(a, out=c)  # c = p
        a.sub_(b)  # a = g = log p - log q
        value = torch.mul(c, a, out=d).sum(-1)
        if with_grad:
            a.sub_(value.unsqueeze(-1)).mul_(c)  # p (g - <p, g>), and <p, g> is the value itself
    else:
        # M is formed in probability space (one log) rather than by logaddexp of the log-probs (an exp,
        # a log1p and several passes): half the time of this branch on CPU. Clamping M at the smallest
        # normal float only changes entries where p and q both underflow, which weigh 0 in both terms.
        torch.exp(a, out=c)  # c = p
        torch.exp(b, out=d)  # d = q
        q_log_q = b.mul_(d).sum(-1)
        torch.mul(c, 1.0 - beta, out=b).add_(d, alpha=beta).clamp_(min=torch.finfo(b.dtype).tiny).log_()  # b = log M
        teacher_term = q_log_q - d.mul_(b).sum(-1)  # KL(q || M)
        a.sub_(b)  # a = log p - log M
        student_term = torch.mul(c, a, out=d).sum(-1)  # KL(p || M)
        value = beta * teacher_term + (1.0 - beta) * student_term
        if with_grad:
            # g = (1 - beta)(log p - log M), so <p, g> = (1 - beta) KL(p || M)
            a.sub_(student_term.unsqueeze(-1)).mul_(c).mul_(1.0 - beta)
    if with_grad and temperature != 1.0:
        a.div_(temperature)
    return value
