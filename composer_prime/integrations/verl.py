"""Channel 1 of the recipe in VeRL's own registries: our advantage estimator and our DPPO policy loss.

    from composer_prime.integrations.verl import register
    register()   # then algorithm.adv_estimator=composer_prime, actor_rollout_ref.actor.policy_loss.loss_mode=composer_dppo

`register` puts `group_advantage` under `core_algos.register_adv_est("composer_prime")` and
`dppo_policy_loss` under `core_algos.register_policy_loss("composer_dppo")`, VeRL's documented extension
points; the functions themselves are VeRL-shaped wrappers of orchestrator/advantage.py and loss/dppo.py.

The `verl` extra installs verl 0.9.1 (Python < 3.13). It pins transformers >= 5.5.3, < 5.11 where the `vllm`
extra's vLLM 0.32 needs >= 5.16.1, so the two extras are declared conflicting and locked apart: `uv sync
--extra verl` gives transformers 5.10.4, every other environment 5.19.0. CI syncs it into its own
environment (.ci/run) and runs tests/integrations/test_verl.py there, VeRL's side included (registries,
`agg_loss`, a step through VeRL's `ppo_loss`); elsewhere those tests skip.

Channels 2 and 3 do not fit these registries: a VeRL policy loss receives per-token log-probs only, while
hint distillation needs the teacher's and the student's full next-token distributions and the preference
channel its own forward passes over the pairs (see integrations/trl.py for both inside TRL).
"""

from __future__ import annotations

import functools
from collections import defaultdict
from typing import Any

import torch
from torch import Tensor

from composer_prime.loss.dppo import dppo_loss
from composer_prime.loss.types import LossInputs
from composer_prime.orchestrator.advantage import group_advantages

ADVANTAGE_NAME = "composer_prime"
POLICY_LOSS_NAME = "composer_dppo"


def group_advantage(token_level_rewards: Tensor, response_mask: Tensor, index, config: Any = None,
                    std_normalize: bool = False, **kwargs) -> tuple[Tensor, Tensor]:
    """VeRL advantage estimator: each response's summed reward minus its group's mean (PRIME-RL's default),
    broadcast over the response tokens. Returns (advantages, returns), both `[bs, response_length]`."""
    scores = token_level_rewards.sum(-1).tolist()
    groups: dict[Any, list[int]] = defaultdict(list)
    for i, key in enumerate(index):
        groups[key].append(i)
    advantages = [0.0] * len(scores)
    for members in groups.values():
        for i, a in zip(members, group_advantages([scores[i] for i in members], std_normalize)):
            advantages[i] = a
    out = torch.tensor(advantages, dtype=token_level_rewards.dtype, device=token_level_rewards.device)
    out = out.unsqueeze(-1) * response_mask
    return out, out


def _token_weights(response_mask: Tensor, loss_agg_mode: str, dp_size: int = 1, batch_num_tokens: int | None = None,
                   global_batch_size: int | None = None, loss_scale_factor: float | None = None) -> Tensor:
    """Per-token weights w with sum(w * l) = VeRL's `agg_loss(l, response_mask, loss_agg_mode, ...)` for any
    per-token loss l: every VeRL aggregation is linear in l, so loss/dppo.py's weighted sum gives it exactly.
    The global-batch arguments are those VeRL puts in `config.global_batch_info` (data-parallel runs)."""
    mask = response_mask.to(torch.float64)
    sequences = (mask.sum(-1, keepdim=True) > 0).sum().clamp(min=1) if global_batch_size is None else global_batch_size
    if loss_agg_mode == "token-mean":
        tokens = mask.sum().clamp(min=1) if batch_num_tokens is None else batch_num_tokens
        return mask / tokens * dp_size
    if loss_agg_mode == "token-sum":
        return mask * dp_size
    if loss_agg_mode == "seq-mean-token-sum":
        return mask / sequences * dp_size
    if loss_agg_mode == "seq-mean-token-sum-norm":
        return mask / sequences * dp_size / (loss_scale_factor or mask.shape[-1])
    if loss_agg_mode == "seq-mean-token-mean":
        return mask / (mask.sum(-1, keepdim=True) + 1e-8) / sequences * dp_size
    raise ValueError(f"loss_agg_mode {loss_agg_mode!r} is not one of VeRL's aggregations")


def dppo_policy_loss(old_log_prob: Tensor, log_prob: Tensor, advantages: Tensor, response_mask: Tensor,
                     loss_agg_mode: str = "token-mean", config: Any = None, rollout_is_weights: Tensor | None = None,
                     rollout_log_probs: Tensor | None = None, *, mask_low: float = 0.2, mask_high: float = 0.2,
                     kl_coef: float = 1e-3, **kwargs) -> tuple[Tensor, dict[str, float]]:
    """VeRL policy loss: loss/dppo.py on `[bs, response_length]` tensors, aggregated as `loss_agg_mode` says.

    The importance ratio is taken against the sampler's log-probs when VeRL passes them
    (`rollout_log_probs`, older VeRL), as composer-prime's trainer does, else against `old_log_prob`;
    VeRL's rollout-correction weights (`rollout_is_weights`, pi_old / sampler) then scale each token's
    loss, as VeRL's own losses apply them.
    """
    sampler = rollout_log_probs if rollout_log_probs is not None else old_log_prob
    batch_info = dict(getattr(config, "global_batch_info", None) or {})
    weights = _token_weights(response_mask, loss_agg_mode, **batch_info).to(log_prob.dtype)
    if rollout_is_weights is not None:
        weights = weights * rollout_is_weights.detach()
    out = dppo_loss(LossInputs(trainer_logprobs=log_prob, inference_logprobs=sampler, ref_logprobs=None,
                               advantages=advantages, loss_mask=response_mask.bool(), loss_weights=weights),
                    mask_low=mask_low, mask_high=mask_high, kl_coef=kl_coef)
    metrics = {f"actor/{k}": v.double().mean().item() for k, v in out.metrics.items() if v.numel()}
    return out.loss, metrics


def register(mask_low: float = 0.2, mask_high: float = 0.2, kl_coef: float = 1e-3, std_normalize: bool = False) -> None:
    """Register both functions in VeRL's registries (needs verl importable)."""
    from verl.trainer.ppo.core_algos import register_adv_est, register_policy_loss

    register_adv_est(ADVANTAGE_NAME)(functools.partial(group_advantage, std_normalize=std_normalize))
    register_policy_loss(POLICY_LOSS_NAME)(
        functools.partial(dppo_policy_loss, mask_low=mask_low, mask_high=mask_high, kl_coef=kl_coef))
