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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file

from composer_prime.utils.fs import atomic_publish_dir, step_dirs

if TYPE_CHECKING:
    from composer_prime.configs.shared import ModelConfig

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
    """Read a published version; refuses a directory without its STABLE marker, and a file that is not whole
    safetensors (ValueError: a bad version, which the caller refuses, not a crash)."""
    file = require_stable(path) / WEIGHTS_FILE
    try:
        return load_file(str(file))
    except SafetensorError as exc:
        raise ValueError(f"{file} is not readable safetensors: {exc}") from None


def prune_versions(output_dir: Path, keep_last: int) -> None:
    """Delete all but the newest `keep_last` versions (in-flight readers hold the newest)."""
    for version in list_versions(output_dir)[:-keep_last]:
        shutil.rmtree(version_dir(output_dir, version), ignore_errors=True)


def _safetensors_files(directory: Path) -> list[Path]:
    files = sorted(Path(directory).glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(f"{directory} holds no safetensors weights")
    return files


def tensor_shapes(directory: Path) -> dict[str, tuple[int, ...]]:
    """Name -> shape of every tensor in the directory's safetensors files, from their headers only."""
    shapes = {}
    for file in _safetensors_files(directory):
        try:
            with safe_open(str(file), framework="pt") as reader:
                shapes |= {name: tuple(reader.get_slice(name).get_shape()) for name in reader.keys()}
        except SafetensorError as exc:
            raise ValueError(f"{file} is not readable safetensors: {exc}") from None
    return shapes


def iter_checkpoint_tensors(directory: Path, copies: dict[str, list[str]] | None = None,
                            ) -> Iterator[tuple[str, torch.Tensor]]:
    """(name, tensor) of every tensor in the directory's safetensors files (a version, or a sharded Hugging Face
    checkpoint), read one at a time: a reader holds one tensor in memory, not the whole model. A tensor named in
    `copies` comes again under each of its names there (WeightLayout.tied_copies)."""
    for file in _safetensors_files(directory):
        with safe_open(str(file), framework="pt") as reader:
            for name in reader.keys():
                tensor = reader.get_tensor(name)
                yield name, tensor
                for alias in (copies or {}).get(name, ()):
                    yield alias, tensor


@dataclass(frozen=True)
class WeightLayout:
    """What a complete weight version of one model holds: every tensor's name and shape, tied names grouped."""

    shapes: dict[str, tuple[int, ...]]
    aliases: list[list[str]]
    """Names of one shared tensor (tied input/output embeddings): a version needs any one of them."""

    @classmethod
    def from_module(cls, module: torch.nn.Module) -> WeightLayout:
        state = module.state_dict(keep_vars=True)  # tied names map to the same Parameter object
        groups: dict[int, list[str]] = {}
        for name, tensor in state.items():
            groups.setdefault(id(tensor), []).append(name)
        return cls(shapes={name: tuple(t.shape) for name, t in state.items()}, aliases=list(groups.values()))

    @classmethod
    def from_config(cls, model: ModelConfig) -> WeightLayout:
        """The layout of the Hugging Face model at `model.path`, built on the meta device (no weights read)."""
        from transformers import AutoConfig, AutoModelForCausalLM

        config = AutoConfig.from_pretrained(model.path, trust_remote_code=model.trust_remote_code)
        with torch.device("meta"):
            module = AutoModelForCausalLM.from_config(config, trust_remote_code=model.trust_remote_code)
        return cls.from_module(module)

    def tied_copies(self, names) -> dict[str, list[str]]:
        """For a version holding `names`: each tied tensor it holds once, mapped to its names it lacks.

        A Hugging Face checkpoint saves tied embeddings once; a reload must still reach every layer that shares
        them: vLLM on CPU repacks the output head for its kernels from the weight loaded under its own name, and
        kept the previous version's head when only the input embedding came."""
        copies = {}
        for group in self.aliases:
            held = [n for n in group if n in names]
            if held and len(held) < len(group):
                copies[held[0]] = [n for n in group if n not in names]
        return copies

    def check(self, shapes: dict[str, tuple[int, ...]], where: str) -> None:
        """ValueError unless `shapes` (a version's tensors) is this model whole: loading anything less
        would leave some layers on the old weights."""
        unknown = sorted(shapes.keys() - self.shapes.keys())
        if unknown:
            raise ValueError(f"{where}: {len(unknown)} tensors the model does not have, e.g. {unknown[0]!r}")
        for name, shape in shapes.items():
            if tuple(shape) != self.shapes[name]:
                raise ValueError(f"{where}: {name} has shape {tuple(shape)}, the model {self.shapes[name]}")
        missing = [names[0] for names in self.aliases if not any(n in shapes for n in names)]
        if missing:
            raise ValueError(f"{where}: {len(missing)} model tensors are missing, e.g. {missing[0]!r}")
