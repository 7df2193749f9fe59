"""Save a causal LM and its tokenizer as a Hugging Face directory, all at once or not at all."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from transformers import PreTrainedModel, PreTrainedTokenizerBase

from composer_prime.utils.fs import atomic_publish_dir


@contextmanager
def staged_dir(path: Path) -> Iterator[Path]:
    """A fresh temporary sibling of `path` to write into, moved into place as `path` when the block completes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        yield tmp
        atomic_publish_dir(tmp, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def save_model(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, path: Path) -> Path:
    """Write model (safetensors) + tokenizer to `path`, replacing what is there; returns `path`."""
    with staged_dir(path) as tmp:
        model.save_pretrained(tmp)
        # The chat template goes inside tokenizer_config.json, where every loader looks (vLLM included).
        tokenizer.save_pretrained(tmp, save_jinja_files=False)
    return Path(path)
