"""dppo_loss against the formula written out token by token in plain Python (float64)."""

import math

import pytest
import torch

from composer_prime.loss.dppo import dppo_loss
from composer_prime.loss.types import LossInputs


def reference_terms(lp_train, lp_inf, adv, mask, mask_low=0.2, mask_high=0.2, kl_coef=1e-3, weights=None):
    """Per-token (loss, d loss / d lp_train, masked_low, masked_high) on loss tokens, by hand.

    l = -(1 - m) * A * r + kl * (log r)^2 with r = exp(lp - lp_mu), so
    dl/dlp = -(1 - m) * A * r + 2 * kl * log r   (m does not depend on lp: it is a hard mask).
    """
    rows = []
    for t in range(len(lp_train)):
        if not mask[t]:
            continue
        r = math.exp(lp_train[t] - lp_inf[t])
        dp = math.exp(lp_train[t]) - math.exp(lp_inf[t])
        high = adv[t] > 0 and dp > mask_high
        low = adv[t] <= 0 and dp < -mask_low
        keep = 0.0 if (high or low) else 1.0
        w = 1.0 if weights is None else weights[t]
        loss = w * (-keep * adv[t] * r + kl_coef * math.log(r) ** 2)
        grad = w * (-keep * adv[t] * r + 2 * kl_coef * math.log(r))
        rows.append((t, loss, grad, low, high, r))
    return rows


def random_tokens(n, seed):
    g = torch.Generator().manual_seed(seed)
    lp_inf = -torch.rand(n, generator=g, dtype=torch.float64) * 3  # probabilities from e^-3 to 1
    lp_train = lp_inf + torch.randn(n, generator=g, dtype=torch.float64) * 0.6
    lp_train = lp_train.clamp(max=0.0)
    adv = torch.randn(n, generator=g, dtype=torch.float64)
    adv[::7] = 0.0  # A == 0 falls on the "low" side of the mask
    mask = torch.rand(n, generator=g) > 0.25
    return lp_train, lp_inf, adv, mask


def inputs(lp_train, lp_inf, adv, mask, weights=None):
    return LossInputs(
        trainer_logprobs=lp_train, inference_logprobs=lp_inf, ref_logprobs=None,
        advantages=adv, loss_mask=mask, loss_weights=weights,
    )


@pytest.mark.parametrize("mask_low,mask_high,kl_coef", [(0.2, 0.2, 1e-3), (0.05, 0.3, 0.5)])
def test_loss_gradient_and_metrics_match_the_formula(mask_low, mask_high, kl_coef):
    lp_train, lp_inf, adv, mask = random_tokens(400, seed=1)
    lp_train.requires_grad_(True)
    out = dppo_loss(inputs(lp_train, lp_inf, adv, mask), mask_low=mask_low, mask_high=mask_high, kl_coef=kl_coef)
    out.loss.backward()

    rows = reference_terms(
        lp_train.tolist(), lp_inf.tolist(), adv.tolist(), mask.tolist(), mask_low, mask_high, kl_coef
    )
    assert any(r[3] for r in rows) and any(r[4] for r in rows), "data must exercise both masks"
    assert out.loss.item() == pytest.approx(sum(r[1] for r in rows), rel=1e-12, abs=1e-12)

    expected_grad = [0.0] * len(lp_train)
    for t, _, grad, *_ in rows:
        expected_grad[t] = grad
    torch.testing.assert_close(lp_train.grad, torch.tensor(expected_grad, dtype=torch.float64), rtol=1e-12, atol=1e-12)

    n = len(rows)
    m = out.metrics
    assert m["masked_low"].mean().item() == pytest.approx(sum(r[3] for r in rows) / n)
    assert m["masked_high"].mean().item() == pytest.approx(sum(r[4] for r in rows) / n)
    assert m["masked"].mean().item() == pytest.approx(sum(r[3] or r[4] for r in rows) / n)
    assert m["importance_ratio"].mean().item() == pytest.approx(sum(r[5] for r in rows) / n, rel=1e-12)
    k3 = sum(r[5] - math.log(r[5]) - 1 for r in rows) / n
    assert m["mismatch_kl_k3"].mean().item() == pytest.approx(k3, rel=1e-12)


def test_masking_depends_on_advantage_sign():
    p_inf = torch.tensor([0.5, 0.5, 0.5, 0.5, 0.5, 0.5], dtype=torch.float64)
    p_train = torch.tensor([0.8, 0.2, 0.2, 0.8, 0.2, 0.55], dtype=torch.float64)
    adv = torch.tensor([1.0, 1.0, -1.0, -1.0, 0.0, 1.0], dtype=torch.float64)
    # token:          up+A>0  down+A>0  down+A<0  up+A<0  down+A=0  small up+A>0
    expected_high = [True, False, False, False, False, False]
    expected_low = [False, False, True, False, True, False]
    out = dppo_loss(inputs(p_train.log(), p_inf.log(), adv, torch.ones(6, dtype=torch.bool)), kl_coef=0.0)
    assert out.metrics["masked_high"].bool().tolist() == expected_high
    assert out.metrics["masked_low"].bool().tolist() == expected_low
    ratio = (p_train / p_inf).tolist()
    expected = sum(-a * r for a, r, h, lo in zip(adv.tolist(), ratio, expected_high, expected_low) if not (h or lo))
    assert out.loss.item() == pytest.approx(expected, rel=1e-12)


def test_masked_token_keeps_only_the_kl_gradient():
    lp_inf = torch.tensor([math.log(0.3)], dtype=torch.float64)
    lp_train = torch.tensor([math.log(0.9)], dtype=torch.float64, requires_grad=True)  # dp = 0.6 > 0.2
    adv = torch.tensor([2.0], dtype=torch.float64)
    out = dppo_loss(inputs(lp_train, lp_inf, adv, torch.tensor([True])), kl_coef=0.1)
    out.loss.backward()
    log_r = math.log(0.9 / 0.3)
    assert out.loss.item() == pytest.approx(0.1 * log_r**2, rel=1e-12)
    assert lp_train.grad.item() == pytest.approx(2 * 0.1 * log_r, rel=1e-12)


def test_kl_term_alone_when_advantages_are_zero():
    lp_train, lp_inf, _, mask = random_tokens(50, seed=2)
    adv = torch.zeros_like(lp_train)
    out = dppo_loss(inputs(lp_train, lp_inf, adv, mask), mask_low=10.0, kl_coef=0.25)
    expected = sum(0.25 * (a - b) ** 2 for a, b, m in zip(lp_train.tolist(), lp_inf.tolist(), mask.tolist()) if m)
    assert out.loss.item() == pytest.approx(expected, rel=1e-12)


def test_loss_weights_scale_each_token():
    lp_train, lp_inf, adv, mask = random_tokens(60, seed=3)
    weights = torch.rand(60, dtype=torch.float64, generator=torch.Generator().manual_seed(9))
    out = dppo_loss(inputs(lp_train, lp_inf, adv, mask, weights))
    rows = reference_terms(lp_train.tolist(), lp_inf.tolist(), adv.tolist(), mask.tolist(), weights=weights.tolist())
    assert out.loss.item() == pytest.approx(sum(r[1] for r in rows), rel=1e-12)


def test_tokens_off_the_loss_mask_contribute_nothing():
    lp_train, lp_inf, adv, mask = random_tokens(40, seed=4)
    garbage = lp_train.clone()
    garbage[~mask] = -50.0  # e.g. padding: whatever the model says there must not matter
    a = dppo_loss(inputs(lp_train, lp_inf, adv, mask)).loss
    b = dppo_loss(inputs(garbage, lp_inf, adv, mask)).loss
    assert a.item() == pytest.approx(b.item(), rel=1e-12)
