"""Finished steps on disk: what makes a step done, where a restarted orchestrator resumes.

A step is published as one directory, `rollouts/step_<N>/`, holding every rank's batch and the
step's metrics: it is staged under a hidden name and renamed into place, so all ranks' files
appear together or not at all. Ranks can therefore never train on halves of two different
samplings of the same step (which would also give them different micro-batch counts and hang
their collectives). The saved metrics let a restart log a step that was published but not yet
logged when the process died, so every step is produced once and logged once.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from composer_prime.batch import TrainBatch, batch_path, write_batch
from composer_prime.utils.fs import atomic_publish_dir, atomic_write_bytes

METRICS_FILE = "orchestrator_metrics.json"
_STEP_DIR = re.compile(r"^step_(\d+)$")


def step_dir(output_dir: Path, step: int) -> Path:
    return batch_path(output_dir, step, 0).parent


def write_step(output_dir: Path, step: int, batches: list[TrainBatch], metrics: dict[str, Any]) -> Path:
    """Publish all ranks' batches of `step` and its metrics in one rename; returns the step directory."""
    final = step_dir(output_dir, step)
    staging = final.parent / f".staging_step_{step}"
    shutil.rmtree(staging, ignore_errors=True)
    for batch in batches:
        # write_batch lays files out under <root>/rollouts/step_N/; stage them inside the hidden root.
        write_batch(staging, batch)
    staged = step_dir(staging, step)
    atomic_write_bytes(staged / METRICS_FILE, json.dumps(metrics).encode())
    atomic_publish_dir(staged, final)
    shutil.rmtree(staging, ignore_errors=True)
    return final


def completed_steps(output_dir: Path, world_size: int) -> list[int]:
    """Steps whose batches exist for every rank, ascending."""
    root = Path(output_dir) / "rollouts"
    if not root.is_dir():
        return []
    steps = []
    for child in root.iterdir():
        match = _STEP_DIR.match(child.name)
        if match and all(batch_path(output_dir, int(match.group(1)), r).is_file() for r in range(world_size)):
            steps.append(int(match.group(1)))
    return sorted(steps)


def next_step(output_dir: Path, world_size: int) -> int:
    """1 + the highest completed step (1 on a fresh run)."""
    return max(completed_steps(output_dir, world_size), default=0) + 1


def saved_metrics(output_dir: Path, step: int) -> dict[str, Any] | None:
    path = step_dir(output_dir, step) / METRICS_FILE
    return json.loads(path.read_text()) if path.is_file() else None
