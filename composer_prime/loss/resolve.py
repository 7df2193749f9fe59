"""`[trainer.loss]` -> the loss function the trainer calls."""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass

from composer_prime.configs.trainer import CustomLossConfig, DPPOLossConfig
from composer_prime.errors import UserError
from composer_prime.loss.dppo import dppo_loss
from composer_prime.loss.types import LossInputs, LossOutputs


@dataclass(frozen=True)
class Loss:
    fn: Callable[[LossInputs], LossOutputs]
    elementwise: bool
    """True when the loss is a sum of per-token terms: one call on a whole packed
    micro-batch then equals the sum of per-sequence calls and the trainer skips the split."""


def import_object(path: str) -> object:
    """`package.module.name` -> the object, or a one-line UserError."""
    module_path, _, name = path.rpartition(".")
    if not module_path or not name:
        raise UserError(f"loss import_path {path!r} must be 'package.module.function'")
    try:
        module = importlib.import_module(module_path)
    except Exception as exc:  # any failure while importing user code is the user's to fix
        raise UserError(f"cannot import loss module {module_path!r}: {type(exc).__name__}: {exc}") from None
    try:
        return getattr(module, name)
    except AttributeError:
        raise UserError(f"module {module_path!r} has no loss function {name!r}") from None


def resolve_loss(config: DPPOLossConfig | CustomLossConfig) -> Loss:
    if isinstance(config, DPPOLossConfig):
        fn = functools.partial(dppo_loss, mask_low=config.mask_low, mask_high=config.mask_high, kl_coef=config.kl_coef)
        return Loss(fn=fn, elementwise=True)
    fn = import_object(config.import_path)
    if not callable(fn):
        raise UserError(f"loss {config.import_path!r} is not callable")
    try:
        inspect.signature(fn).bind(None, **config.kwargs)
    except TypeError as exc:
        raise UserError(f"loss {config.import_path!r} does not accept kwargs {sorted(config.kwargs)}: {exc}") from None
    except ValueError:
        pass  # builtins without a signature: let the first call speak
    return Loss(fn=functools.partial(fn, **config.kwargs), elementwise=False)
