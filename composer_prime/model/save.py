"""Save a causal LM and its tokenizer as a Hugging Face directory, all at once or not at all."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from transformers import PreTrainedModel, PreTrainedTokenizerBase

from composer_prime.utils.fs import atomic_publish_dir


def save_model(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, path: Path) -> Path:
    """Write model (safetensors) + tokenizer to `path`, replacing what is there; returns `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        model.save_pretrained(tmp)
        # The chat template goes inside tokenizer_config.json, where every loader looks (vLLM included).
        tokenizer.save_pretrained(tmp, save_jinja_files=False)
        atomic_publish_dir(tmp, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path
