"""One trainer step in process: loss value, global normalisation, micro-batch invariance, warm-up."""

import copy
import math

import pytest
import torch
from transformers import AutoModelForCausalLM

from composer_prime.batch import TrainBatch
from composer_prime.configs.trainer import DPPOLossConfig, OptimConfig
from composer_prime.loss.resolve import resolve_loss
from composer_prime.trainer.parallel import World
from composer_prime.trainer.step import learning_rate, train_step

CPU = World(rank=0, world_size=1, device=torch.device("cpu"))


def load(path):
    # float64: in float32, re-splitting micro-batches already used a quarter of the parameter tolerance
    # below on one CPU. HF's RMSNorm still rounds to float32, which leaves ~1e-8 relative: far inside.
    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float64, attn_implementation="sdpa")


def batch_of(helpers, samples, rows_per_micro, num_loss_tokens=None, temperature=1.0):
    tokens = int(sum(s["loss_mask"].sum() for s in samples))
    return TrainBatch(
        step=1, rank=0, world_size=1, temperature=temperature, num_loss_tokens=num_loss_tokens or tokens,
        micro_batches=helpers.pack(samples, 64, rows_per_micro), min_policy_version=0, max_policy_version=0,
    )


def step(model, batch, max_norm=1e9, kl_coef=1e-3):
    # SGD with lr 1: the weight change is the gradient itself (Adam's first step, ~lr * sign(g),
    # would turn float noise on near-zero gradients into lr-sized differences).
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    return train_step(model, optimizer, batch, resolve_loss(DPPOLossConfig(kl_coef=kl_coef)), 1.0, max_norm, CPU)


def test_step_loss_equals_the_formula_on_each_sample_alone(tiny_model_dir, helpers):
    samples = helpers.make_samples(seed=0, count=6)
    model = load(tiny_model_dir)
    reference_model = copy.deepcopy(model)
    T = 0.9
    result = step(model, batch_of(helpers, samples, rows_per_micro=2, temperature=T), kl_coef=0.1)

    total, count = 0.0, 0
    with torch.no_grad():
        for s in samples:
            ids = torch.as_tensor(s["input_ids"], dtype=torch.long)
            logp = torch.log_softmax(reference_model(input_ids=ids[None]).logits[0] / T, -1)
            for t in range(1, len(ids)):
                if not s["loss_mask"][t]:
                    continue
                lp, lpi, a = logp[t - 1, ids[t]].item(), float(s["inference_logprobs"][t]), float(s["advantages"][t])
                r = math.exp(lp - lpi)
                dp = math.exp(lp) - math.exp(lpi)
                masked = (a > 0 and dp > 0.2) or (a <= 0 and dp < -0.2)
                total += -(0.0 if masked else 1.0) * a * r + 0.1 * math.log(r) ** 2
                count += 1
    assert result.loss == pytest.approx(total / count, rel=1e-5)
    assert result.num_tokens == 64 * len(helpers.pack(samples, 64, 1))
    assert set(result.loss_metrics) == {"masked", "masked_low", "masked_high", "importance_ratio", "mismatch_kl_k3"}


def test_micro_batch_split_does_not_change_the_step(tiny_model_dir, helpers):
    samples = helpers.make_samples(seed=1, count=8)
    one, many = load(tiny_model_dir), load(tiny_model_dir)
    a = step(one, batch_of(helpers, samples, rows_per_micro=8))
    b = step(many, batch_of(helpers, samples, rows_per_micro=1))
    assert len(batch_of(helpers, samples, rows_per_micro=1).micro_batches) >= 3 and a.grad_norm > 0
    assert a.loss == pytest.approx(b.loss, rel=1e-5)
    assert a.grad_norm == pytest.approx(b.grad_norm, rel=1e-5)
    for (name, p), q in zip(one.named_parameters(), many.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-7, msg=name)


def test_loss_is_divided_by_the_global_token_count(tiny_model_dir, helpers):
    samples = helpers.make_samples(seed=2, count=4)
    local = int(sum(s["loss_mask"].sum() for s in samples))
    a = step(load(tiny_model_dir), batch_of(helpers, samples, 2))
    b = step(load(tiny_model_dir), batch_of(helpers, samples, 2, num_loss_tokens=3 * local))
    assert b.loss == pytest.approx(a.loss / 3, rel=1e-6)
    assert b.grad_norm == pytest.approx(a.grad_norm / 3, rel=1e-5)


def test_gradient_norm_is_clipped(tiny_model_dir, helpers):
    samples = helpers.make_samples(seed=3, count=4)
    model = load(tiny_model_dir)
    before = [p.detach().clone() for p in model.parameters()]
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)  # the update is the clipped gradient itself
    result = train_step(model, optimizer, batch_of(helpers, samples, 2), resolve_loss(DPPOLossConfig()), 1.0, 1e-3, CPU)
    update_norm = torch.sqrt(sum(((p - b) ** 2).sum() for p, b in zip(model.parameters(), before)))
    assert result.grad_norm > 1e-3
    assert update_norm.item() == pytest.approx(1e-3, rel=1e-4)


def test_learning_rate_warms_up_linearly():
    optim = OptimConfig(lr=1e-3, warmup_steps=4)
    assert [learning_rate(s, optim) for s in (1, 2, 4, 9)] == pytest.approx([2.5e-4, 5e-4, 1e-3, 1e-3])
    assert learning_rate(1, OptimConfig(lr=2e-3)) == 2e-3


def test_a_step_whose_loss_or_gradients_are_not_finite_changes_nothing(tiny_model_dir, helpers, caplog):
    """Issue 30: one batch scored at a subnormal temperature made every weight NaN in one step. Such a step, or one
    carrying a NaN log-prob, is skipped and said so; AdamW's state is untouched, and the next batch trains."""
    samples = helpers.make_samples(seed=4, count=4)
    model = load(tiny_model_dir)
    before = copy.deepcopy(model.state_dict())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    loss = resolve_loss(DPPOLossConfig())
    poisoned = [dict(s, inference_logprobs=torch.full_like(torch.as_tensor(s["inference_logprobs"]), math.nan))
                for s in samples]
    for batch in (batch_of(helpers, samples, 2, temperature=1e-310), batch_of(helpers, poisoned, 2)):
        result = train_step(model, optimizer, batch, loss, 1e-2, 1.0, CPU)
        assert result.skipped and not optimizer.state
        assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert "step skipped: its loss or gradients are not finite" in caplog.text
    result = train_step(model, optimizer, batch_of(helpers, samples, 2), loss, 1e-2, 1.0, CPU)
    assert not result.skipped and math.isfinite(result.loss)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    assert any(not torch.equal(before[k], v) for k, v in model.state_dict().items())
