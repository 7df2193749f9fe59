"""Trainer checkpoints: `<output>/checkpoints/step_<N>/` holding everything needed to continue bit-exactly.

Files: `state/` (model and AdamW state through `torch.distributed.checkpoint`: each rank writes its
own shards, keyed by parameter name and global shape, so any number of ranks can read them back),
`rng_rank_<R>.pt` (each rank's torch RNG states), `meta.json`, the model's `config.json` and
tokenizer files (so that `export` turns the checkpoint into a model directory on its own), and for a
DiLoCo site `diloco.pt` (agreed parameters and outer optimizer state). The directory is assembled
under a temporary name and renamed into place, so a `step_<N>` directory is always complete;
temporary directories left by a crash are ignored and removed at the next start.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.metadata import TensorStorageMetadata
from torch.distributed.checkpoint.state_dict import (get_model_state_dict, get_optimizer_state_dict,
                                                     set_model_state_dict, set_optimizer_state_dict)

from composer_prime.errors import UserError
from composer_prime.utils.fs import atomic_publish_dir, remove_hidden, step_dirs
from composer_prime.weights import copy_model_assets

# 1: whole-model torch.save files (model.pt, optimizer.pt); 2: sharded `state/`.
CHECKPOINT_FORMAT = 2
STATE_DIR = "state"


def checkpoint_root(output_dir: Path) -> Path:
    return Path(output_dir) / "checkpoints"


def checkpoint_dir(output_dir: Path, step: int) -> Path:
    return checkpoint_root(output_dir) / f"step_{step}"


def staging_dir(output_dir: Path, step: int) -> Path:
    return checkpoint_root(output_dir) / f".tmp_step_{step}"


def list_checkpoints(output_dir: Path) -> list[int]:
    return sorted(step_dirs(checkpoint_root(output_dir)))


def remove_checkpoints_after(output_dir: Path, step: int) -> None:
    """A run starting at `step` owns the later steps: older runs' checkpoints there would be resumed by mistake."""
    for later in list_checkpoints(output_dir):
        if later > step:
            shutil.rmtree(checkpoint_dir(output_dir, later), ignore_errors=True)


def remove_staging_dirs(output_dir: Path) -> None:
    """Drop half-written checkpoints of a crashed run."""
    remove_hidden(checkpoint_root(output_dir))


def begin_checkpoint(output_dir: Path, step: int) -> Path:
    """Create an empty staging directory for step `step` (rank 0, before the ranks write into it)."""
    staging = staging_dir(output_dir, step)
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    return staging


def write_rng(staging: Path, rank: int) -> None:
    state: dict[str, object] = {"cpu": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    torch.save(state, staging / f"rng_rank_{rank}.pt")


def save_train_state(staging: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> None:
    """Write this rank's shards of the model and AdamW state into `staging` (collective: every rank calls it)."""
    state = {"model": get_model_state_dict(model), "optim": get_optimizer_state_dict(model, optimizer)}
    dcp.save(state, checkpoint_id=staging / STATE_DIR, no_dist=not dist.is_initialized())


def load_train_state(path: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> None:
    """Read a checkpoint's model and AdamW state into this rank's (sharded or whole) model (collective).

    The template is this run's own state, AdamW's included (torch creates its moments when empty),
    so each rank reads exactly its shards whatever the number of ranks that wrote them."""
    check_format(path)
    state = {"model": get_model_state_dict(model), "optim": get_optimizer_state_dict(model, optimizer)}
    dcp.load(state, checkpoint_id=path / STATE_DIR, no_dist=not dist.is_initialized())
    set_model_state_dict(model, state["model"])
    set_optimizer_state_dict(model, optimizer, state["optim"])


def read_tensors(path: Path, prefix: str = "model.") -> dict[str, torch.Tensor]:
    """Every tensor of a checkpoint whose key starts with `prefix`, whole, on CPU, prefix dropped; no process group.

    `model.` gives the model's full state dict (as the trainer's model names it), `optim.state.` AdamW's."""
    check_format(path)
    metadata = dcp.FileSystemReader(path / STATE_DIR).read_metadata()
    state = {
        key.removeprefix(prefix): torch.empty(meta.size, dtype=meta.properties.dtype)
        for key, meta in metadata.state_dict_metadata.items()
        if key.startswith(prefix) and isinstance(meta, TensorStorageMetadata)
    }
    dcp.load({prefix.rstrip("."): state}, checkpoint_id=path / STATE_DIR, no_dist=True)
    return state


def check_format(path: Path) -> dict:
    """The checkpoint's meta.json; a one-line error for a checkpoint this version cannot read."""
    meta = json.loads((path / "meta.json").read_text())
    if meta.get("format") != CHECKPOINT_FORMAT:
        raise UserError(f"checkpoint {path} has format {meta.get('format')} (whole-model torch.save files), this "
                        f"version reads format {CHECKPOINT_FORMAT} (sharded): start a new output_dir or set "
                        "ckpt.resume = false")
    return meta


def finish_checkpoint(
    output_dir: Path, step: int, world_size: int, keep_last: int, config_json: str, assets_dir: Path | None,
    lora: dict | None = None, diloco_state: dict | None = None, metrics: dict | None = None,
) -> Path:
    """Add the model's description (and DiLoCo site state) to the ranks' shards, publish the directory, prune old ones.

    `lora` (the LoRA settings, None: full weights) tells `export` how to merge adapters. `metrics` is the
    step's own record: a kill after the checkpoint and before the record reaches the metrics file would
    lose it, since the resumed run starts after this step (`load_metrics`)."""
    staging = staging_dir(output_dir, step)
    if diloco_state is not None:
        torch.save(diloco_state, staging / "diloco.pt")
    if metrics is not None:
        (staging / "metrics.json").write_text(json.dumps(metrics))
    (staging / "config.json").write_text(config_json)
    copy_model_assets(assets_dir, staging)
    meta = {"format": CHECKPOINT_FORMAT, "step": step, "world_size": world_size, "lora": lora}
    (staging / "meta.json").write_text(json.dumps(meta))
    final = checkpoint_dir(output_dir, step)
    atomic_publish_dir(staging, final)
    for old in list_checkpoints(output_dir)[:-keep_last]:
        shutil.rmtree(checkpoint_dir(output_dir, old), ignore_errors=True)
    return final


def load_metrics(path: Path) -> dict | None:
    """The record of the step a checkpoint ends (None: written without one)."""
    file = path / "metrics.json"
    return json.loads(file.read_text()) if file.is_file() else None


def load_diloco(path: Path) -> dict | None:
    """The DiLoCo site state of a checkpoint (None: written by a lone trainer)."""
    file = path / "diloco.pt"
    return torch.load(file, map_location="cpu", weights_only=True) if file.is_file() else None


def restore_rng(path: Path, rank: int) -> None:
    """Set this rank's RNG states as the checkpoint saved them; one written by fewer ranks has none for it."""
    file = path / f"rng_rank_{rank}.pt"
    if file.is_file():
        state = torch.load(file, weights_only=True)
        torch.set_rng_state(state["cpu"])
        if "cuda" in state and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda"])
