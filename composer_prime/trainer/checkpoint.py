"""Trainer checkpoints: `<output>/checkpoints/step_<N>/` holding everything needed to continue bit-exactly.

Files: `model.pt` and `optimizer.pt` (full, unsharded state dicts), `rng_rank_<R>.pt` (each
rank's torch RNG states), `meta.json`, and for a DiLoCo site `diloco.pt` (agreed parameters and
outer optimizer state). The directory is assembled under a temporary
name and renamed into place, so a `step_<N>` directory is always complete; temporary
directories left by a crash are ignored and removed at the next start.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import torch

from composer_prime.utils.fs import atomic_publish_dir

CHECKPOINT_FORMAT = 1
_STEP_DIR = re.compile(r"^step_(\d+)$")


def checkpoint_root(output_dir: Path) -> Path:
    return Path(output_dir) / "checkpoints"


def checkpoint_dir(output_dir: Path, step: int) -> Path:
    return checkpoint_root(output_dir) / f"step_{step}"


def staging_dir(output_dir: Path, step: int) -> Path:
    return checkpoint_root(output_dir) / f".tmp_step_{step}"


def list_checkpoints(output_dir: Path) -> list[int]:
    root = checkpoint_root(output_dir)
    if not root.is_dir():
        return []
    return sorted(int(m.group(1)) for child in root.iterdir() if (m := _STEP_DIR.match(child.name)))


def remove_checkpoints_after(output_dir: Path, step: int) -> None:
    """A run starting at `step` owns the later steps: older runs' checkpoints there would be resumed by mistake."""
    for later in list_checkpoints(output_dir):
        if later > step:
            shutil.rmtree(checkpoint_dir(output_dir, later), ignore_errors=True)


def remove_staging_dirs(output_dir: Path) -> None:
    """Drop half-written checkpoints of a crashed run."""
    root = checkpoint_root(output_dir)
    if root.is_dir():
        for child in root.iterdir():
            if child.name.startswith("."):
                shutil.rmtree(child, ignore_errors=True)


def rng_state() -> dict[str, object]:
    state: dict[str, object] = {"cpu": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["cpu"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def begin_checkpoint(output_dir: Path, step: int) -> Path:
    """Create an empty staging directory for step `step` (rank 0, before the ranks write into it)."""
    staging = staging_dir(output_dir, step)
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    return staging


def write_rng(staging: Path, rank: int) -> None:
    torch.save(rng_state(), staging / f"rng_rank_{rank}.pt")


def finish_checkpoint(
    output_dir: Path, step: int, model_state: dict, optimizer_state: dict, world_size: int, keep_last: int,
    diloco_state: dict | None = None, metrics: dict | None = None,
) -> Path:
    """Write the model, optimizer (and DiLoCo site state) into the staging directory, publish it, prune old ones.

    `metrics` is the step's own record: a kill after the checkpoint and before the record reaches the
    metrics file would lose it, since the resumed run starts after this step (`load_metrics`)."""
    staging = staging_dir(output_dir, step)
    torch.save(model_state, staging / "model.pt")
    torch.save(optimizer_state, staging / "optimizer.pt")
    if diloco_state is not None:
        torch.save(diloco_state, staging / "diloco.pt")
    if metrics is not None:
        (staging / "metrics.json").write_text(json.dumps(metrics))
    meta = {"format": CHECKPOINT_FORMAT, "step": step, "world_size": world_size}
    (staging / "meta.json").write_text(json.dumps(meta))
    final = checkpoint_dir(output_dir, step)
    atomic_publish_dir(staging, final)
    for old in list_checkpoints(output_dir)[:-keep_last]:
        shutil.rmtree(checkpoint_dir(output_dir, old), ignore_errors=True)
    return final


def load_states(path: Path) -> tuple[dict, dict]:
    """(model state, optimizer state) of a checkpoint directory, tensors on CPU."""
    model_state = torch.load(path / "model.pt", map_location="cpu", weights_only=True)
    optimizer_state = torch.load(path / "optimizer.pt", map_location="cpu", weights_only=True)
    return model_state, optimizer_state


def load_metrics(path: Path) -> dict | None:
    """The record of the step a checkpoint ends (None: written without one)."""
    file = path / "metrics.json"
    return json.loads(file.read_text()) if file.is_file() else None


def load_diloco(path: Path) -> dict | None:
    """The DiLoCo site state of a checkpoint (None: written by a lone trainer)."""
    file = path / "diloco.pt"
    return torch.load(file, map_location="cpu", weights_only=True) if file.is_file() else None


def load_rng(path: Path, rank: int) -> dict | None:
    """This rank's RNG states, or None when the checkpoint was written by fewer ranks."""
    file = path / f"rng_rank_{rank}.pt"
    return torch.load(file, weights_only=True) if file.is_file() else None
