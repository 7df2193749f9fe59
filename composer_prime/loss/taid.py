"""Alternatives to the generalised JSD for the distillation channel: TAID and entropy-gated KL.

Both work on full-vocabulary logits `[..., V]`, treat the teacher as stop-gradient and reduce with
`loss.jsd.reduce_tokens` (mask, clamp, token weights, sum / mean / none).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch

from composer_prime.loss.jsd import Reduction, divergence_from_logprobs, reduce_tokens


@dataclass(frozen=True)
class TAIDSchedule:
    """Hyper-parameters of TAID's adaptive interpolation (defaults from the paper's code).

    Attributes:
        t_start: initial interpolation weight of the teacher.
        t_end: final weight (1.0: the target becomes the teacher itself).
        step_size: alpha, scale of the adaptive increment.
        momentum: beta, decay of the momentum of the relative loss change.
    """

    t_start: float = 0.4
    t_end: float = 1.0
    step_size: float = 5e-4
    momentum: float = 0.99


@dataclass(frozen=True)
class TAIDState:
    """Interpolation weight t and what its update remembers between steps."""

    t: float
    prev_loss: float | None = None
    momentum: float = 0.0


def taid_init(schedule: TAIDSchedule = TAIDSchedule()) -> TAIDState:
    return TAIDState(t=schedule.t_start)


def taid_update(
    state: TAIDState, loss: float, step: int, total_steps: int, schedule: TAIDSchedule = TAIDSchedule()
) -> TAIDState:
    """One step of TAID's adaptive t schedule (Shing et al. 2025; the momentum rule of the authors' code).

    With J the TAID loss of this step and J_prev the previous one,

        delta = (J_prev - J) / (J_prev + 1e-15)             relative improvement
        m     = momentum * m + (1 - momentum) * delta
        t     = min(t_end, max(t_linear, t + step_size * sigmoid(m) * (1 - t)))
        t_linear = t_start + (t_end - t_start) * step / total_steps

    so t never decreases, moves faster while the student improves quickly, and never lags the
    linear schedule. The first call only records the loss.
    """
    if state.prev_loss is None:
        return replace(state, prev_loss=loss)
    relative_change = (state.prev_loss - loss) / (state.prev_loss + 1e-15)
    momentum = schedule.momentum * state.momentum + (1.0 - schedule.momentum) * relative_change
    increment = schedule.step_size * _sigmoid(momentum) * (1.0 - state.t)
    t_linear = schedule.t_start + (schedule.t_end - schedule.t_start) * step / total_steps
    t = min(schedule.t_end, max(t_linear, state.t + increment))
    return TAIDState(t=t, prev_loss=loss, momentum=momentum)


def taid_loss(
    student_logits: torch.Tensor,
    teacher_logits: torch.Tensor,
    t: float,
    *,
    mask: torch.Tensor | None = None,
    clamp: float | None = None,
    token_weights: torch.Tensor | None = None,
    reduction: Reduction = "mean",
) -> torch.Tensor:
    """TAID (Shing et al. 2025, "TAID: Temporally Adaptive Interpolated Distillation for Efficient
    Knowledge Transfer in Language Models", ICLR 2025): forward KL to an interpolated target

        p_t = softmax((1 - t) * stopgrad(z_S) + t * z_T),   loss = KL(p_t || softmax(z_S))

    interpolating logits (not probabilities). The target moves from the student towards the teacher
    as t grows (`taid_update`); at t = 1 this is forward KL to the teacher. The paper's code uses
    the cross-entropy -sum p_t log p_S, which differs by the target's entropy: same gradient,
    p_S - p_t, but this value is 0 when the student matches the target.

    Args:
        student_logits: `[..., V]`.
        teacher_logits: `[..., V]`.
        t: interpolation weight in [0, 1].
        mask, clamp, token_weights, reduction: see `loss.jsd.reduce_tokens`.
    """
    dtype = torch.promote_types(student_logits.dtype, torch.float32)
    student = student_logits.to(dtype)
    target_logits = (1.0 - t) * student.detach() + t * teacher_logits.detach().to(dtype)
    per_token = divergence_from_logprobs(
        torch.log_softmax(student, dim=-1), torch.log_softmax(target_logits, dim=-1), beta=0.0
    )
    return reduce_tokens(per_token, mask=mask, clamp=clamp, token_weights=token_weights, reduction=reduction)


def entropy_gated_kl(
    student_logits: torch.Tensor,
    teacher_logits: torch.Tensor,
    *,
    entropy_threshold: float,
    temperature: float = 1.0,
    mask: torch.Tensor | None = None,
    clamp: float | None = None,
    token_weights: torch.Tensor | None = None,
    reduction: Reduction = "mean",
) -> torch.Tensor:
    """Entropy-aware on-policy distillation (Jin et al. 2026, arXiv 2603.07079, EOPD), per token:

        loss = KL(p_S || p_T) + [H(p_T) > entropy_threshold] * KL(p_T || p_S)

    Reverse KL everywhere (precise imitation where the teacher is sure); forward KL added where the
    teacher is uncertain, because there reverse KL collapses onto one of several plausible tokens
    and its gradient is unstable. This follows the paper's stated rule (the hard gate and the
    threshold value are this implementation's choice; H in nats, at `temperature`).

    Args:
        student_logits: `[..., V]`.
        teacher_logits: `[..., V]`.
        entropy_threshold: teacher entropy (nats) above which forward KL is added (at most log V).
        temperature: both sides are divided by it before the softmax.
        mask, clamp, token_weights, reduction: see `loss.jsd.reduce_tokens`.
    """
    dtype = torch.promote_types(student_logits.dtype, torch.float32)
    student = torch.log_softmax(student_logits.to(dtype) / temperature, dim=-1)
    teacher = torch.log_softmax(teacher_logits.detach().to(dtype) / temperature, dim=-1)
    teacher_entropy = -(teacher.exp() * teacher).sum(-1)
    per_token = divergence_from_logprobs(student, teacher, beta=1.0) + (teacher_entropy > entropy_threshold) * (
        divergence_from_logprobs(student, teacher, beta=0.0)
    )
    return reduce_tokens(per_token, mask=mask, clamp=clamp, token_weights=token_weights, reduction=reduction)


def _sigmoid(x: float) -> float:
    return 0.5 * (1.0 + math.tanh(0.5 * x))  # no overflow when a loss spike makes x very negative
