"""PRIME-RL's default RL loss: DPPO trust-region masking plus a squared-log-ratio penalty."""

from __future__ import annotations

import torch

from composer_prime.loss.types import LossInputs, LossOutputs


def dppo_loss(inputs: LossInputs, mask_low: float = 0.2, mask_high: float = 0.2, kl_coef: float = 1e-3) -> LossOutputs:
    r"""Masked importance-weighted policy gradient with a trainer/sampler mismatch penalty.

    DPPO-Binary-TV masking (arXiv:2602.04879) with the Kimi K2.5 (log r)^2 regulariser
    (arXiv:2602.02276), as in PRIME-RL's `default_loss_fn`. Per token t with advantage
    A_t, trainer log-prob lp_t (differentiable) and sampler log-prob lp^mu_t:

        r_t  = exp(lp_t - lp^mu_t)                              importance ratio
        dp_t = exp(lp_t) - exp(lp^mu_t)                         probability shift
        m_t  = (A_t > 0 and dp_t > mask_high) or (A_t <= 0 and dp_t < -mask_low)
        l_t  = -(1 - m_t) * A_t * r_t + kl_coef * (log r_t)^2
        loss = sum_{t in loss_mask} w_t * l_t                   (w_t = loss_weights, else 1)

    The mask is conditioned on the advantage sign: a token whose probability already rose
    by more than `mask_high` gets no further push up, one that already fell by more than
    `mask_low` no further push down. It replaces PPO's ratio clipping (no min/clip here).
    Gradient of the unmasked policy term: d l_t / d lp_t = -A_t * r_t; of the penalty:
    2 * kl_coef * log r_t. Returns the SUM; the trainer divides by the global count of
    loss tokens. Every term is per token, so one call on a packed micro-batch equals the
    sum of per-sequence calls.

    Metrics, one value per loss token (the trainer averages them over the step):
    `masked_low` / `masked_high` (which side masked the token), `masked` (either),
    `importance_ratio` (r_t), and `mismatch_kl_k3`: r_t - log r_t - 1, the k3 estimator
    (Schulman, "Approximating KL divergence") of KL(mu || pi_theta) from tokens sampled by mu.
    """
    log_ratio = inputs.trainer_logprobs - inputs.inference_logprobs
    ratio = torch.exp(log_ratio)
    advantages = inputs.advantages
    mask = inputs.loss_mask.bool()

    with torch.no_grad():
        prob_shift = torch.exp(inputs.trainer_logprobs) - torch.exp(inputs.inference_logprobs)
        positive = advantages > 0
        masked_high = positive & (prob_shift > mask_high)
        masked_low = ~positive & (prob_shift < -mask_low)
        masked = masked_high | masked_low

    per_token = -torch.where(masked, 0.0, advantages * ratio) + kl_coef * log_ratio.square()
    if inputs.loss_weights is not None:
        per_token = per_token * inputs.loss_weights
    loss = torch.where(mask, per_token, 0.0).sum()

    with torch.no_grad():
        ratio_on_mask = ratio[mask]
        metrics = {
            "masked": masked[mask].float(),
            "masked_low": masked_low[mask].float(),
            "masked_high": masked_high[mask].float(),
            "importance_ratio": ratio_on_mask,
            "mismatch_kl_k3": ratio_on_mask - log_ratio[mask] - 1,
        }
    return LossOutputs(loss=loss, metrics=metrics)
