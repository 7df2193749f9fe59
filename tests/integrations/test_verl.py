"""composer_prime/integrations/verl.py: the functions VeRL's registries receive, against float64 references.

verl itself cannot be installed beside composer-prime (module docstring), so the functions are tested as
VeRL would call them; the registration test runs only where verl is importable.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from composer_prime.integrations.verl import ADVANTAGE_NAME, POLICY_LOSS_NAME, dppo_policy_loss, group_advantage
from composer_prime.loss.dppo import dppo_loss
from composer_prime.loss.types import LossInputs


def _batch(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    bs, length = 6, 7
    sampler = -torch.rand(bs, length, generator=g, dtype=torch.float64) * 3
    current = (sampler + torch.randn(bs, length, generator=g, dtype=torch.float64) * 0.5).clamp(max=0)
    old = sampler + torch.randn(bs, length, generator=g, dtype=torch.float64) * 0.01
    lengths = torch.tensor([7, 5, 1, 3, 6, 2])
    mask = (torch.arange(length)[None, :] < lengths[:, None]).double()
    advantages = torch.randn(bs, 1, generator=g, dtype=torch.float64).expand(bs, length) * mask
    return old, current.requires_grad_(True), advantages, mask, sampler


def _reference_per_token(current, sampler, advantages, mask_low=0.2, mask_high=0.2, kl_coef=1e-3):
    """PRIME-RL's loss written out per token with numpy in float64 (REFERENCE.md)."""
    lp, mu, a = (t.detach().numpy() for t in (current, sampler, advantages))
    ratio = np.exp(lp - mu)
    dp = np.exp(lp) - np.exp(mu)
    masked = ((a > 0) & (dp > mask_high)) | ((a <= 0) & (dp < -mask_low))
    return -(1 - masked) * a * ratio + kl_coef * np.log(ratio) ** 2


@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean"])
def test_policy_loss_equals_an_independent_float64_reference(mode):
    old, current, advantages, mask, sampler = _batch()
    loss, metrics = dppo_policy_loss(old, current, advantages, mask, mode, rollout_log_probs=sampler)
    per_token = _reference_per_token(current, sampler, advantages) * mask.numpy()
    if mode == "token-mean":
        expected = per_token.sum() / mask.sum().item()
    elif mode == "seq-mean-token-sum":
        expected = per_token.sum(-1).mean()
    else:
        expected = (per_token.sum(-1) / (mask.sum(-1).numpy() + 1e-8)).mean()  # VeRL's guard against empty rows
    assert loss.dtype == torch.float64
    assert abs(loss.item() - expected) < 1e-12
    assert 0 <= metrics["actor/masked"] <= 1 and metrics["actor/importance_ratio"] > 0


def test_token_mean_is_our_trainer_loss_over_its_token_count():
    old, current, advantages, mask, sampler = _batch(1)
    loss, _ = dppo_policy_loss(old, current, advantages, mask, rollout_log_probs=sampler)
    ours = dppo_loss(LossInputs(current.reshape(-1), sampler.reshape(-1), None, advantages.reshape(-1),
                                mask.reshape(-1).bool()))
    assert abs(loss.item() - ours.loss.item() / mask.sum().item()) < 1e-12
    grad_verl, = torch.autograd.grad(loss, current)
    grad_ours, = torch.autograd.grad(ours.loss / mask.sum(), current)
    assert torch.allclose(grad_verl, grad_ours, rtol=0, atol=1e-14)


def test_without_rollout_log_probs_the_ratio_is_taken_against_old_log_prob():
    old, current, advantages, mask, sampler = _batch(2)
    loss, _ = dppo_policy_loss(old, current, advantages, mask)
    expected = (_reference_per_token(current, old, advantages) * mask.numpy()).sum() / mask.sum().item()
    assert abs(loss.item() - expected) < 1e-12


def test_an_unknown_aggregation_is_a_one_line_error():
    old, current, advantages, mask, _ = _batch()
    with pytest.raises(ValueError, match="'per-token' is not one of VeRL's aggregations"):
        dppo_policy_loss(old, current, advantages, mask, "per-token")


class _Config:
    """What VeRL's ActorConfig carries for the loss: the global batch of a data-parallel step."""

    def __init__(self, **global_batch_info):
        self.global_batch_info = global_batch_info


def test_global_batch_normalisation_and_rollout_weights():
    old, current, advantages, mask, sampler = _batch(3)
    per_token = _reference_per_token(current, old, advantages) * mask.numpy()
    # Rank 0 of 2 whose tokens are a third of the step's: VeRL's DDP averaging then sums to the global mean.
    config = _Config(dp_size=2, batch_num_tokens=int(mask.sum()) * 3)
    loss, _ = dppo_policy_loss(old, current, advantages, mask, "token-mean", config)
    assert abs(loss.item() - per_token.sum() / (mask.sum().item() * 3) * 2) < 1e-12
    config = _Config(dp_size=2, global_batch_size=12, loss_scale_factor=4)
    loss, _ = dppo_policy_loss(old, current, advantages, mask, "seq-mean-token-sum-norm", config)
    assert abs(loss.item() - per_token.sum() / 12 * 2 / 4) < 1e-12
    weights = torch.rand(mask.shape, generator=torch.Generator().manual_seed(4), dtype=torch.float64) + 0.5
    loss, _ = dppo_policy_loss(old, current, advantages, mask, "token-sum", rollout_is_weights=weights)
    assert abs(loss.item() - (per_token * weights.numpy()).sum()) < 1e-12


def test_advantage_is_reward_minus_group_mean():
    rewards = torch.zeros(6, 4, dtype=torch.float64)
    scores = [1.0, 0.0, 0.5, 0.25, 0.75, 0.0]
    rewards[torch.arange(6), torch.tensor([3, 1, 2, 0, 3, 2])] = torch.tensor(scores, dtype=torch.float64)
    mask = torch.ones(6, 4, dtype=torch.float64)
    mask[1, 2:] = 0
    index = np.array(["a", "a", "b", "b", "b", "c"], dtype=object)
    advantages, returns = group_advantage(rewards, mask, index)
    expected = np.array([0.5, -0.5, 0.5 - 0.5, 0.25 - 0.5, 0.75 - 0.5, 0.0])
    assert torch.equal(advantages, returns)
    assert np.allclose(advantages[:, 0].numpy(), expected, rtol=0, atol=1e-15)
    assert torch.all(advantages[1, 2:] == 0)  # nothing past a response's end


def test_register_puts_both_in_verls_registries():
    core_algos = pytest.importorskip("verl.trainer.ppo.core_algos")
    from composer_prime.integrations.verl import register

    register()
    assert core_algos.get_adv_estimator_fn(ADVANTAGE_NAME).func is group_advantage
    assert core_algos.get_policy_loss_fn(POLICY_LOSS_NAME).func is dppo_policy_loss


@pytest.mark.parametrize("mode", ["token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-sum-norm",
                                  "seq-mean-token-mean"])
@pytest.mark.parametrize("batch_info", [{}, {"dp_size": 2, "batch_num_tokens": 60, "global_batch_size": 12,
                                             "loss_scale_factor": 5}])
def test_aggregation_equals_verls_own_agg_loss(mode, batch_info):
    core_algos = pytest.importorskip("verl.trainer.ppo.core_algos")
    old, current, advantages, mask, _ = _batch(5)
    per_token = torch.from_numpy(_reference_per_token(current, old, advantages))
    expected = core_algos.agg_loss(per_token, mask, mode, **batch_info)
    loss, _ = dppo_policy_loss(old, current, advantages, mask, mode, _Config(**batch_info))
    assert abs(loss.item() - expected.item()) < 1e-12
