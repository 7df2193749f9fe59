"""Save a causal LM and its tokenizer as a Hugging Face directory, all at once or not at all."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from composer_prime.utils.fs import atomic_publish_dir

if TYPE_CHECKING:  # fetch-model reads PROVENANCE without loading transformers
    from transformers import PreTrainedModel, PreTrainedTokenizerBase


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


PROVENANCE = "fetch_model.json"  # where a fetched model came from (composer_prime.model.fetch)


def write_model(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, path: Path,
                provenance: dict[str, str] | None = None) -> None:
    """Write model (safetensors) + tokenizer into the directory `path`, and `provenance` as PROVENANCE if given."""
    model.save_pretrained(path)
    # The chat template goes inside tokenizer_config.json, where every loader looks (vLLM included).
    tokenizer.save_pretrained(path, save_jinja_files=False)
    if provenance is not None:
        (Path(path) / PROVENANCE).write_text(json.dumps(provenance, indent=2) + "\n")


def save_model(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, path: Path) -> Path:
    """Write model (safetensors) + tokenizer to `path`, replacing what is there; returns `path`."""
    with staged_dir(path) as tmp:
        write_model(model, tokenizer, tmp)
    return Path(path)
