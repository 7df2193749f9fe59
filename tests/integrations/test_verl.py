"""composer_prime/integrations/verl.py: the functions VeRL's registries receive, against float64 references.

The functions are tested as VeRL would call them in every environment; the tests that use VeRL itself need
the `verl` extra (its own environment in CI, .ci/run: it conflicts with the `vllm` extra) and skip elsewhere.
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


@pytest.fixture(scope="module")
def core_algos():
    """verl's registries with ours registered (once: VeRL refuses a second, different estimator of one name)."""
    core_algos = pytest.importorskip("verl.trainer.ppo.core_algos")
    from composer_prime.integrations.verl import register

    register()
    return core_algos


def test_register_puts_both_in_verls_registries(core_algos):
    assert core_algos.get_adv_estimator_fn(ADVANTAGE_NAME).func is group_advantage
    assert core_algos.get_policy_loss_fn(POLICY_LOSS_NAME).func is dppo_policy_loss


@pytest.mark.parametrize("mode", ["token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-sum-norm",
                                  "seq-mean-token-mean"])
@pytest.mark.parametrize("batch_info", [{}, {"dp_size": 2, "batch_num_tokens": 60, "global_batch_size": 12,
                                             "loss_scale_factor": 5}])
def test_aggregation_equals_verls_own_agg_loss(core_algos, mode, batch_info):
    old, current, advantages, mask, _ = _batch(5)
    per_token = torch.from_numpy(_reference_per_token(current, old, advantages))
    expected = core_algos.agg_loss(per_token, mask, mode, **batch_info)
    loss, _ = dppo_policy_loss(old, current, advantages, mask, mode, _Config(**batch_info))
    assert abs(loss.item() - expected.item()) < 1e-12


def test_verls_own_ppo_loss_takes_a_training_step_with_composer_dppo(core_algos):
    """VeRL's engine-worker loss (`verl.workers.utils.losses.ppo_loss`) on a real model's log-probs, then AdamW."""
    losses = pytest.importorskip("verl.workers.utils.losses")
    from pathlib import Path

    from tensordict import TensorDict
    from transformers import AutoModelForCausalLM
    from verl.utils import tensordict_utils as tu
    from verl.workers.config import ActorConfig
    from verl.workers.utils.padding import no_padding_2_padding

    model = AutoModelForCausalLM.from_pretrained(Path(__file__).parents[2] / "configs" / "composed" / "warmstart")
    prompts, responses = [[5, 6, 7], [8, 9, 10, 11]], [[12, 13, 14, 15], [16, 17]]
    width_p, width_r = max(map(len, prompts)), max(map(len, responses))
    prompt_ids = torch.zeros(2, width_p, dtype=torch.long)
    response_ids = torch.zeros(2, width_r, dtype=torch.long)
    attention = torch.zeros(2, width_p + width_r, dtype=torch.long)
    for i, (p, r) in enumerate(zip(prompts, responses)):  # VeRL's layout: prompts left-padded, responses right-padded
        prompt_ids[i, width_p - len(p):] = torch.tensor(p)
        response_ids[i, : len(r)] = torch.tensor(r)
        attention[i, width_p - len(p): width_p + len(r)] = 1

    def flat_logprobs():  # VeRL's unpadded model output: at each token, the log-prob of the next one
        out = []
        for p, r in zip(prompts, responses):
            ids = torch.tensor(p + r)
            logps = torch.log_softmax(model(input_ids=ids[None]).logits[0], -1)
            out.append(logps.gather(-1, torch.roll(ids, -1)[:, None])[:, 0])
        return torch.cat(out)

    base = TensorDict({"prompts": prompt_ids, "responses": response_ids, "attention_mask": attention}, batch_size=[2])
    with torch.no_grad():
        old = no_padding_2_padding(flat_logprobs(), base)
    mask = attention[:, width_p:].float()
    data = TensorDict({"prompts": prompt_ids, "responses": response_ids, "attention_mask": attention,
                       "response_mask": mask, "old_log_probs": old,
                       "advantages": torch.tensor([[1.0], [-1.0]]) * mask}, batch_size=[2])
    tu.assign_non_tensor(data, dp_size=1, batch_num_tokens=None, global_batch_size=None)
    config = ActorConfig(strategy="fsdp", ppo_mini_batch_size=2, ppo_micro_batch_size_per_gpu=2, rollout_n=1,
                         policy_loss={"loss_mode": POLICY_LOSS_NAME})

    before = [p.detach().clone() for p in model.parameters()]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loss, metrics = losses.ppo_loss(config, {"log_probs": flat_logprobs()}, data)
    # On-policy (ratio 1, nothing masked): the token mean of -A over the 6 response tokens.
    assert abs(loss.item() - (-(4 * 1.0 + 2 * -1.0) / 6)) < 1e-6
    loss.backward()
    optimizer.step()
    assert any(not torch.equal(b, p) for b, p in zip(before, model.parameters()))
