"""The model as the trainer holds it: master precision, activation checkpointing, LoRA, sharding.

`model.dtype` names the precision inference runs in. With `mixed_precision` and a half-precision
dtype the trainer keeps float32 parameters (so AdamW's state is float32 too) and computes in the
half dtype the way FSDP2 does it (MixedPrecisionPolicy: each layer's parameters cast to the half dtype
before its forward, gradients reduced in float32), on one process as on several: the network it runs
is the half-precision model inference runs, where autocast would compute some ops in float32 from
float32 weights. Published versions are cast back to `model.dtype`: inference loads the weights it
would load from any checkpoint of that dtype.

With LoRA the frozen base weights stay in `model.dtype` (they are never stepped: no master copy is
needed) and only the adapters are kept in the master dtype.

On several ranks only rank 0 reads the checkpoint: the others build the model on the meta device, and
after sharding every rank's shards (and the buffers) are filled from rank 0's copy, so no rank but one
ever holds the whole model in memory.
"""

from __future__ import annotations

import torch
from torch.distributed.fsdp import MixedPrecisionPolicy
from transformers import PreTrainedModel

from composer_prime.errors import UserError
from composer_prime.model.load import empty_train_model, load_train_model, resolve_dtype
from composer_prime.configs.trainer import TrainerConfig
from composer_prime.trainer.packed_attention import ATTENTION, checkpoint_contexts
from composer_prime.trainer.parallel import (World, fill_from_rank0, full_model_state_dict, init_process_group,
                                             shard_model)

_HALF = (torch.bfloat16, torch.float16)


def compute_dtype(config: TrainerConfig, world: World) -> torch.dtype:
    """The dtype forward passes run in and versions are published in: the resolved `model.dtype`."""
    return resolve_dtype(config.model, world.device)


def master_dtype(config: TrainerConfig, world: World) -> torch.dtype:
    """The dtype of the parameters AdamW steps."""
    dtype = compute_dtype(config, world)
    return torch.float32 if config.mixed_precision and dtype in _HALF else dtype


def build_train_model(config: TrainerConfig, world: World) -> torch.nn.Module:
    """Load, adapt and shard the model; every rank calls it."""
    compute, master = compute_dtype(config, world), master_dtype(config, world)
    sharded = world.distributed or compute != master
    if sharded:
        init_process_group(world)
    frozen = compute if config.lora is not None else master  # the dtype of the weights AdamW never steps
    load_config = config.model.model_copy(update={"dtype": str(frozen).removeprefix("torch.")})
    if not world.distributed:
        model = load_train_model(load_config, world.device)
    elif world.is_main:
        model = load_train_model(load_config, torch.device("cpu"))  # sharding moves each rank's part to its device
    else:
        model = empty_train_model(load_config)
    model.config.dtype = compute  # what the published config.json states: versions are cast to it
    model.set_attn_implementation(ATTENTION)  # packed rows without a [rows, 1, S, S] mask
    if config.activation_checkpointing:
        _checkpoint_layers(model)
    if config.lora is not None:
        from composer_prime.trainer.lora import apply_lora  # peft: imported by LoRA runs only (~1 s per start)

        model = apply_lora(model, config.lora)
        for parameter in model.parameters():
            if parameter.requires_grad:
                parameter.data = parameter.data.to(master)
    if sharded:
        whole = model.state_dict() if world.distributed and world.is_main else None
        shard_model(model, MixedPrecisionPolicy(param_dtype=compute, reduce_dtype=torch.float32)
                    if compute != master else None)
        if world.distributed:
            fill_from_rank0(model, whole, world)
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
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False,
                                                                       "context_fn": checkpoint_contexts})
