"""`[trainer.loss]` resolution: the default loss, custom losses by import path, one-line errors."""

import textwrap

import pytest
import torch

from composer_prime.configs.trainer import CustomLossConfig, DPPOLossConfig
from composer_prime.errors import UserError
from composer_prime.loss.dppo import dppo_loss
from composer_prime.loss.resolve import resolve_loss
from composer_prime.loss.types import LossInputs


def sample_inputs():
    g = torch.Generator().manual_seed(0)
    lp_inf = -torch.rand(30, generator=g, dtype=torch.float64) * 2
    lp_train = (lp_inf + torch.randn(30, generator=g, dtype=torch.float64) * 0.5).clamp(max=0)
    return LossInputs(
        trainer_logprobs=lp_train, inference_logprobs=lp_inf, ref_logprobs=None,
        advantages=torch.randn(30, generator=g, dtype=torch.float64), loss_mask=torch.rand(30, generator=g) > 0.3,
    )


def test_dppo_config_fields_reach_the_loss():
    config = DPPOLossConfig(mask_low=0.05, mask_high=0.1, kl_coef=0.3)
    loss = resolve_loss(config)
    x = sample_inputs()
    assert loss.elementwise
    expected = dppo_loss(x, mask_low=0.05, mask_high=0.1, kl_coef=0.3).loss
    assert loss.fn(x).loss.item() == expected.item()
    assert loss.fn(x).loss.item() != dppo_loss(x).loss.item()


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """A PRIME-RL-style loss module on sys.path, written as a user would (only the import changed)."""
    (tmp_path / "my_losses.py").write_text(textwrap.dedent("""
        import torch
        from composer_prime.loss import LossInputs, LossOutputs

        def ppo_clip_loss(inputs: LossInputs, clip_eps: float = 0.2) -> LossOutputs:
            ratio = torch.exp(inputs.trainer_logprobs - inputs.inference_logprobs)
            clipped = torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps)
            loss = -torch.min(ratio * inputs.advantages, clipped * inputs.advantages)[inputs.loss_mask].sum()
            return LossOutputs(loss=loss, metrics={"clip_frac": (ratio != clipped)[inputs.loss_mask].float().mean()})

        NOT_A_FUNCTION = 3
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    return "my_losses"


def test_custom_loss_by_import_path_with_kwargs(user_module):
    loss = resolve_loss(CustomLossConfig(import_path=f"{user_module}.ppo_clip_loss", kwargs={"clip_eps": 0.1}))
    assert not loss.elementwise
    x = sample_inputs()
    out = loss.fn(x)
    expected = 0.0
    columns = (x.trainer_logprobs, x.inference_logprobs, x.advantages, x.loss_mask)
    for lp, lpi, a, m in zip(*(c.tolist() for c in columns)):
        if m:
            r = torch.tensor(lp - lpi, dtype=torch.float64).exp().item()
            expected += -min(r * a, min(max(r, 0.9), 1.1) * a)
    assert out.loss.item() == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    "path,kwargs,message",
    [
        ("no_such_package_xyz.loss", {}, "cannot import loss module 'no_such_package_xyz'"),
        ("my_losses.missing", {}, "has no loss function 'missing'"),
        ("my_losses.NOT_A_FUNCTION", {}, "is not callable"),
        ("my_losses.ppo_clip_loss", {"clip": 0.1}, "does not accept kwargs ['clip']"),
        ("ppo_clip_loss", {}, "must be 'package.module.function'"),
    ],
)
def test_bad_custom_loss_is_a_one_line_user_error(user_module, path, kwargs, message):
    with pytest.raises(UserError) as info:
        resolve_loss(CustomLossConfig(import_path=path, kwargs=kwargs))
    assert message in str(info.value)
    assert "\n" not in str(info.value)
