"""`uv run export --source DIR --output-dir OUT`: a trainer checkpoint or a weight version as a Hugging Face model.

A checkpoint (`checkpoints/step_N`, sharded by any number of ranks) is read whole without a
process group, its LoRA adapters (if it was trained with them) merged as weight versions merge
them; a weight version (`broadcasts/step_N`) is read as it is. Either is written as a model
directory (safetensors, config.json, the tokenizer files the run carried) that
`AutoModelForCausalLM.from_pretrained` and vLLM load, all at once or not at all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import torch
from pydantic import Field
from pydantic_config import BaseConfig
from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedModel

from composer_prime.cli import run_cli
from composer_prime.configs.shared import Dtype
from composer_prime.errors import UserError
from composer_prime.trainer.checkpoint import check_format, read_tensors
from composer_prime.configs.trainer import LoRAConfig
from composer_prime.trainer.lora import apply_lora, merge_lora
from composer_prime.model.save import staged_dir
from composer_prime.weights import STABLE, copy_model_assets


class ExportConfig(BaseConfig):
    """Write a checkpoint or weight version as a Hugging Face model directory."""

    source: Annotated[Path, Field(description="A checkpoint (<run>/checkpoints/step_N) or a weight version "
                                              "(<run>/broadcasts/step_N).")]
    output_dir: Annotated[Path, Field(description="Model directory to write (replaced).")]
    dtype: Annotated[
        Dtype | None, Field(description="Parameter dtype to write; None: the dtype the run's config.json states "
                                        "(its model.dtype), as weight versions are published.")
    ] = None


def load_checkpoint_model(path: Path) -> PreTrainedModel:
    """The model a checkpoint holds, adapters merged, in the dtype its config states."""
    meta = check_format(path)
    config = AutoConfig.from_pretrained(path)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    state = read_tensors(path)
    if meta.get("lora") is not None:
        adapted = apply_lora(AutoModelForCausalLM.from_config(config, dtype=torch.float32), LoRAConfig(**meta["lora"]))
        adapted.load_state_dict(state)
        state = merge_lora(adapted, adapted.state_dict())
    model.load_state_dict(state)
    return model.to(config.dtype or torch.float32)


def load_source(source: Path) -> PreTrainedModel:
    if (source / "meta.json").is_file():
        return load_checkpoint_model(source)
    if (source / STABLE).is_file():
        return AutoModelForCausalLM.from_pretrained(source)
    raise UserError(f"{source} is neither a checkpoint (no meta.json) nor a weight version (no {STABLE})")


def export(config: ExportConfig) -> Path:
    model = load_source(config.source)
    if config.dtype is not None:
        model = model.to(getattr(torch, config.dtype))
    with staged_dir(config.output_dir) as tmp:
        model.save_pretrained(tmp)
        copy_model_assets(config.source, tmp)
    print(f"exported {config.source} to {config.output_dir}", flush=True)
    return config.output_dir


def cli() -> None:
    run_cli(ExportConfig, export)
