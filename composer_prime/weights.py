"""Published weight versions: the trainer -> inference hand-off.

Version N is the policy after N optimizer steps; version 0 is the starting model itself.
Layout: `<output>/broadcasts/step_<N>/{model.safetensors, config.json, STABLE}`. The
directory is written under a temporary name and renamed into place, and `STABLE` is the
last file written inside it, so a reader that sees `STABLE` sees a complete version and a
crash mid-write leaves only a temporary directory that no reader looks at.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from composer_prime.utils.fs import atomic_publish_dir, step_dirs

STABLE = "STABLE"
WEIGHTS_FILE = "model.safetensors"


def broadcast_root(output_dir: Path) -> Path:
    return Path(output_dir) / "broadcasts"


def version_dir(output_dir: Path, version: int) -> Path:
    return broadcast_root(output_dir) / f"step_{version}"


# Everything but the weights that makes a version a loadable HF model directory on its own, so that
# `eval`, vLLM or a volunteer worker can open `broadcasts/step_N` like any checkpoint.
MODEL_ASSETS = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja",
                "generation_config.json", "vocab.json", "merges.txt", "tokenizer.model", "added_tokens.json")


def publish_weights(output_dir: Path, version: int, state_dict: dict[str, torch.Tensor], config_json: str,
                    assets_dir: Path | None = None) -> Path:
    """Write version `version` atomically, with the tokenizer files found in `assets_dir`; returns its directory."""
    final = version_dir(output_dir, version)
    tmp = final.with_name(f".tmp_step_{version}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    tensors = _distinct_storage({k: v.detach().to("cpu").contiguous() for k, v in state_dict.items()})
    save_file(tensors, str(tmp / WEIGHTS_FILE), metadata={"format": "pt", "version": str(version)})
    (tmp / "config.json").write_text(config_json)
    copy_model_assets(assets_dir, tmp)
    (tmp / STABLE).write_text(json.dumps({"version": version, "time": time.time()}))
    atomic_publish_dir(tmp, final)
    return final


def copy_model_assets(assets_dir: Path | None, dest: Path) -> None:
    """Copy the tokenizer and generation files of `assets_dir` (None: none) into `dest`."""
    for name in MODEL_ASSETS if assets_dir is not None else ():
        if (Path(assets_dir) / name).is_file():
            shutil.copyfile(Path(assets_dir) / name, Path(dest) / name)


def _distinct_storage(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    # safetensors refuses tensors that share memory, as tied input/output embeddings do.
    seen: set[int] = set()
    out = {}
    for key, tensor in state.items():
        ptr = tensor.untyped_storage().data_ptr()
        out[key] = tensor.clone() if ptr in seen else tensor
        seen.add(ptr)
    return out


def list_versions(output_dir: Path) -> list[int]:
    """All complete versions, ascending."""
    return sorted(v for v, path in step_dirs(broadcast_root(output_dir)).items() if (path / STABLE).is_file())


def latest_version(output_dir: Path) -> int:
    """Newest complete version, or 0 (the starting model) when none was published."""
    return max(list_versions(output_dir), default=0)


def require_stable(path: Path | str) -> Path:
    """The version directory, or FileNotFoundError when it is missing or not yet complete."""
    if not (Path(path) / STABLE).is_file():
        raise FileNotFoundError(f"{path} is not a complete weight version (no {STABLE} marker)")
    return Path(path)


def load_version_state_dict(path: Path) -> dict[str, torch.Tensor]:
    """Read a published version; refuses a directory without its STABLE marker."""
    return load_file(str(require_stable(path) / WEIGHTS_FILE))


def prune_versions(output_dir: Path, keep_last: int) -> None:
    """Delete all but the newest `keep_last` versions (in-flight readers hold the newest)."""
    for version in list_versions(output_dir)[:-keep_last]:
        shutil.rmtree(version_dir(output_dir, version), ignore_errors=True)
