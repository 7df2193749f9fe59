"""Sequence-level preference losses for the trace-replay channel: DPO (sigmoid) and SimPO.

A pair is a chosen (w) and a rejected (l) completion of the same prompt. Inputs are per-sequence
log-probs, built from per-token log-probs with `sequence_logprobs`: DPO uses the sum over the
completion tokens, SimPO their mean.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class PreferenceOutput:
    """Loss and diagnostics of a batch of B pairs (all diagnostics are detached).

    Attributes:
        loss: scalar, mean of `losses`.
        losses: `[B]` per-pair loss.
        chosen_rewards: `[B]` implicit reward of the chosen completion.
        rejected_rewards: `[B]` implicit reward of the rejected completion.
        margins: `[B]` chosen_rewards - rejected_rewards.
        accuracy: scalar, fraction of pairs with chosen_rewards > rejected_rewards.
    """

    loss: torch.Tensor
    losses: torch.Tensor
    chosen_rewards: torch.Tensor
    rejected_rewards: torch.Tensor
    margins: torch.Tensor
    accuracy: torch.Tensor


def sequence_logprobs(token_logprobs: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Summed and length-averaged log-prob of each sequence over its masked-in tokens.

    Args:
        token_logprobs: `[B, T]` log-prob of each token (any value where `mask` is False).
        mask: `[B, T]` bool (or 0/1), True on the completion tokens.

    Returns:
        `(summed, averaged)`, each `[B]`; a sequence with no token averages to 0.
    """
    mask = mask.bool()
    summed = token_logprobs.masked_fill(~mask, 0.0).sum(-1)
    return summed, summed / mask.sum(-1).clamp(min=1)


def dpo_loss(
    policy_chosen_logps: torch.Tensor,
    policy_rejected_logps: torch.Tensor,
    ref_chosen_logps: torch.Tensor,
    ref_rejected_logps: torch.Tensor,
    *,
    beta: float = 0.1,
    label_smoothing: float = 0.0,
) -> PreferenceOutput:
    """Sigmoid DPO (Rafailov et al. 2023, "Direct Preference Optimization"), optionally conservative.

    With h = (log pi(w) - log pi_ref(w)) - (log pi(l) - log pi_ref(l)) over summed token log-probs,

        loss = -(1 - eps) log sigmoid(beta h) - eps log sigmoid(-beta h)

    eps = `label_smoothing` is the assumed probability that a pair's label is flipped (cDPO,
    Mitchell 2023); eps = 0 is plain DPO. Implicit rewards are beta (log pi - log pi_ref).

    Args:
        policy_chosen_logps, policy_rejected_logps: `[B]` summed log-probs under the policy.
        ref_chosen_logps, ref_rejected_logps: `[B]` summed log-probs under the frozen reference.
        beta: inverse temperature of the implicit reward (TRL default 0.1).
        label_smoothing: eps in [0, 0.5).
    """
    chosen_logratios = policy_chosen_logps - ref_chosen_logps
    rejected_logratios = policy_rejected_logps - ref_rejected_logps
    losses = _smoothed_logistic(beta * (chosen_logratios - rejected_logratios), label_smoothing)
    return _output(losses, beta * chosen_logratios.detach(), beta * rejected_logratios.detach())


def simpo_loss(
    policy_chosen_avg_logps: torch.Tensor,
    policy_rejected_avg_logps: torch.Tensor,
    *,
    beta: float = 2.0,
    gamma: float = 0.6,
    label_smoothing: float = 0.0,
) -> PreferenceOutput:
    """SimPO (Meng et al. 2024, "SimPO: Simple Preference Optimization with a Reference-Free Reward").

        loss = -(1 - eps) log sigmoid(beta (avg_w - avg_l) - gamma) - eps log sigmoid(-(beta (avg_w - avg_l) - gamma))

    with avg the length-averaged token log-prob of the policy: no reference model, and a target
    margin gamma. Implicit rewards are beta * avg. Defaults follow the paper's range (beta 2.0-2.5,
    gamma = c beta with c in 0.25-0.4; here c = 0.3).

    Args:
        policy_chosen_avg_logps, policy_rejected_avg_logps: `[B]` averaged log-probs under the policy.
        beta: reward scale.
        gamma: target reward margin.
        label_smoothing: eps in [0, 0.5), as in `dpo_loss`.
    """
    logits = beta * (policy_chosen_avg_logps - policy_rejected_avg_logps) - gamma
    losses = _smoothed_logistic(logits, label_smoothing)
    return _output(losses, beta * policy_chosen_avg_logps.detach(), beta * policy_rejected_avg_logps.detach())


def add_chosen_nll(output: PreferenceOutput, policy_chosen_avg_logps: torch.Tensor, alpha: float) -> PreferenceOutput:
    """RPO (Pang et al. 2024, "Iterative Reasoning Preference Optimization"): the pair loss plus the
    chosen answer's length-normalised negative log-likelihood,

        loss_i = pref_i - alpha * (1 / |w_i|) sum_t log pi(w_i,t | x_i, w_i,<t)

    DPO only widens the gap between chosen and rejected, and in practice lowers the chosen
    likelihood too; the NLL term keeps the policy producing the chosen answers. alpha = 0 is the
    plain pair loss. Rewards, margins and accuracy stay those of the pair loss.

    Args:
        output: the pair loss (`dpo_loss` or `simpo_loss`).
        policy_chosen_avg_logps: `[B]` length-averaged log-probs of the chosen answers under the policy.
        alpha: weight of the NLL term (1.0 in the paper).
    """
    if alpha < 0:
        raise ValueError(f"alpha must be >= 0, got {alpha}")
    losses = output.losses - alpha * policy_chosen_avg_logps
    return PreferenceOutput(losses.mean(), losses, output.chosen_rewards, output.rejected_rewards, output.margins,
                            output.accuracy)


def _smoothed_logistic(logits: torch.Tensor, label_smoothing: float) -> torch.Tensor:
    if not 0.0 <= label_smoothing < 0.5:
        raise ValueError(f"label_smoothing must be in [0, 0.5), got {label_smoothing}")
    return -(1.0 - label_smoothing) * F.logsigmoid(logits) - label_smoothing * F.logsigmoid(-logits)


def _output(losses: torch.Tensor, chosen_rewards: torch.Tensor, rejected_rewards: torch.Tensor) -> PreferenceOutput:
    margins = chosen_rewards - rejected_rewards
    return PreferenceOutput(
        loss=losses.mean(),
        losses=losses,
        chosen_rewards=chosen_rewards,
        rejected_rewards=rejected_rewards,
        margins=margins,
        accuracy=(margins > 0).float().mean(),
    )
