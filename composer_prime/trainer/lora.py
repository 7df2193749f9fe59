"""LoRA through peft: adapters on the linear layers, and their merge into plain weights for publishing.

Inference never sees adapters: every weight version is the base weights with each adapter folded in,
W + B A * alpha / rank, under the base model's own parameter names, so any backend loads it as a full
model. The merge works on the full state dict (what FSDP gathers on rank 0), not on live modules: merging
in place and unmerging again would round the frozen base weights a little at every publish.
"""

from __future__ import annotations

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from peft.tuners.lora import LoraLayer
from transformers import PreTrainedModel

from composer_prime.configs.trainer import LoRAConfig

ADAPTER = "default"
_PEFT_PREFIX = "base_model.model."


def apply_lora(model: PreTrainedModel, config: LoRAConfig) -> PeftModel:
    """Wrap `model` with fresh adapters (B = 0: the wrapped model computes exactly what `model` did)."""
    peft_config = LoraConfig(r=config.rank, lora_alpha=config.alpha, lora_dropout=0.0,
                             target_modules=config.target_modules, task_type="CAUSAL_LM")
    return get_peft_model(model, peft_config, adapter_name=ADAPTER)


def merge_lora(model: PeftModel, state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """`model`'s full state dict (peft names; {} off the main rank) as the base model's, every adapter merged.

    Scale and orientation come from the live adapter layers: GPT-2's Conv1D stores its weight transposed."""
    if not state:
        return state
    state = dict(state)
    for name, layer in model.named_modules():
        if not isinstance(layer, LoraLayer) or ADAPTER not in layer.lora_A:
            continue
        a = state.pop(f"{name}.lora_A.{ADAPTER}.weight").float()
        b = state.pop(f"{name}.lora_B.{ADAPTER}.weight").float()
        delta = (b @ a) * layer.scaling[ADAPTER]
        weight = state[f"{name}.base_layer.weight"]
        state[f"{name}.base_layer.weight"] = (weight.float() + (delta.T if layer.fan_in_fan_out else delta)).to(weight.dtype)
    return {key.removeprefix(_PEFT_PREFIX).replace(".base_layer.", "."): t for key, t in state.items()}
