"""Load any Hugging Face causal LM and its tokenizer, with one-line errors for bad inputs."""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from composer_prime.configs.shared import ModelConfig
from composer_prime.errors import UserError

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def resolve_device(config: ModelConfig) -> torch.device:
    if config.device is not None:
        return torch.device(config.device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def resolve_dtype(config: ModelConfig, device: torch.device) -> torch.dtype:
    if config.dtype is not None:
        return _DTYPES[config.dtype]
    return torch.bfloat16 if device.type == "cuda" else torch.float32


def _check_path(path: str) -> None:
    # A string that looks like a filesystem path must exist; anything else may be a hub id.
    looks_local = path.startswith((".", "/", "~")) or Path(path).parts[:1] in (("configs",), ("outputs",))
    if looks_local and not Path(path).expanduser().is_dir():
        raise UserError(f"model directory not found: {path}")


def load_tokenizer(config: ModelConfig, require_chat_template: bool = True) -> PreTrainedTokenizerBase:
    _check_path(config.path)
    try:
        tokenizer = AutoTokenizer.from_pretrained(config.path, trust_remote_code=config.trust_remote_code)
    except OSError as exc:
        raise UserError(f"cannot load tokenizer from {config.path}: {str(exc).splitlines()[0]}") from None
    if require_chat_template and not getattr(tokenizer, "chat_template", None):
        raise UserError(f"tokenizer at {config.path} has no chat template (set tokenizer_config.json 'chat_template')")
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_model(config: ModelConfig, device: torch.device | None = None) -> PreTrainedModel:
    _check_path(config.path)
    device = device or resolve_device(config)
    try:
        model = AutoModelForCausalLM.from_pretrained(config.path, dtype=resolve_dtype(config, device),
                                                     trust_remote_code=config.trust_remote_code, attn_implementation="sdpa")
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot load model from {config.path}: {str(exc).splitlines()[0]}") from None
    return model.to(device)


def disable_dropout(model: torch.nn.Module) -> torch.nn.Module:
    """Set every dropout probability and router jitter of `model` to 0, in place; returns `model`.

    Dropout modules (nn.Dropout, GPT-2's attn/resid/embd dropouts) get p = 0, and float
    attributes named like `attention_dropout`, which attention code passes to sdpa as a
    number when the module is training, are zeroed; so are mixture-of-experts routers' `jitter_noise`
    (Mixtral, PhiMoE, DBRX: multiplicative noise on the router's input in train mode). The config is
    left as it is, so weight versions and exports still carry the checkpoint's own settings.
    """
    for module in model.modules():
        if isinstance(module, torch.nn.modules.dropout._DropoutNd):
            module.p = 0.0
        for name, value in vars(module).items():
            if ("dropout" in name or "jitter" in name) and isinstance(value, float):
                setattr(module, name, 0.0)
    return model


def load_train_model(config: ModelConfig, device: torch.device | None = None) -> PreTrainedModel:
    """The model as the RL trainer trains it: in train mode with dropout off.

    Dropout would make the trainer score tokens under a randomly thinned network while the
    sampler used the whole one: GPT-2 (dropout 0.1 in its config) then showed importance
    ratio 1.002 and mismatch KL 0.002 on a fully on-policy step, instead of 1 and 0."""
    model = disable_dropout(load_model(config, device))
    model.train()
    return model
