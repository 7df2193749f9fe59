"""The model as the trainer holds it: master precision, activation checkpointing, LoRA, sharding.

`model.dtype` names the precision inference runs in. With `mixed_precision` and a half-precision
dtype the trainer keeps float32 parameters (so AdamW's state is float32 too) and computes in the
half dtype: FSDP2 casts each layer's gathered parameters (MixedPrecisionPolicy) and reduces gradients
in float32; one unsharded process runs the forward under autocast. Published versions are cast back
to `model.dtype`: inference loads the weights it would load from any checkpoint of that dtype.
"""

from __future__ import annotations

import functools

import torch
from torch.distributed.fsdp import MixedPrecisionPolicy
from transformers import PreTrainedModel

from composer_prime.errors import UserError
from composer_prime.model.load import load_train_model, resolve_dtype
from composer_prime.configs.trainer import TrainerConfig
from composer_prime.trainer.parallel import World, full_model_state_dict, shard_model

_HALF = (torch.bfloat16, torch.float16)


def compute_dtype(config: TrainerConfig, world: World) -> torch.dtype:
    """The dtype forward passes run in and versions are published in: the resolved `model.dtype`."""
    return resolve_dtype(config.model, world.device)


def master_dtype(config: TrainerConfig, world: World) -> torch.dtype:
    """The dtype of the parameters AdamW steps."""
    dtype = compute_dtype(config, world)
    return torch.float32 if config.mixed_precision and dtype in _HALF else dtype


def build_train_model(config: TrainerConfig, world: World) -> torch.nn.Module:
    """Load, adapt and (on several ranks) shard the model; every rank calls it."""
    compute, master = compute_dtype(config, world), master_dtype(config, world)
    master_config = config.model.model_copy(update={"dtype": str(master).removeprefix("torch.")})
    model = load_train_model(master_config, world.device)
    model.config.dtype = compute  # what the published config.json states: versions are cast to it
    if config.activation_checkpointing:
        _checkpoint_layers(model)
    if config.lora is not None:
        from composer_prime.trainer.lora import apply_lora  # peft: imported by LoRA runs only (~1 s per start)

        model = apply_lora(model, config.lora)
    if world.distributed:
        policy = MixedPrecisionPolicy(param_dtype=compute, reduce_dtype=torch.float32) if compute != master else None
        shard_model(model, policy)
    elif compute != master:
        _forward_in(model, compute, world.device)
    return model


def inference_state_dict(model: torch.nn.Module, config: TrainerConfig, world: World) -> dict[str, torch.Tensor]:
    """The weights as inference loads them (collective; {} off the main rank): LoRA merged, in `model.dtype`."""
    state = full_model_state_dict(model, world)
    if config.lora is not None:
        from composer_prime.trainer.lora import merge_lora

        state = merge_lora(model, state)
    dtype = compute_dtype(config, world)
    return {k: v.to(dtype) if v.is_floating_point() else v for k, v in state.items()}


def _checkpoint_layers(model: PreTrainedModel) -> None:
    # Non-reentrant checkpointing recomputes exactly the ops of the first pass (same RNG and autocast
    # state), so gradients equal those without it; HF wraps each decoder layer.
    if not model.supports_gradient_checkpointing:
        raise UserError(f"{type(model).__name__} does not support activation checkpointing "
                        "(set trainer.activation_checkpointing = false)")
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})


def _forward_in(model: torch.nn.Module, dtype: torch.dtype, device: torch.device) -> None:
    """Run every forward of `model` (policy, hint teacher, preference) under autocast to `dtype`."""
    forward = model.forward

    @functools.wraps(forward)
    def autocast_forward(*args, **kwargs):
        with torch.autocast(device.type, dtype=dtype):
            return forward(*args, **kwargs)

    model.forward = autocast_forward
