"""Finished steps on disk: what makes a step done, where a restarted orchestrator resumes.

A step is published as one directory, `rollouts/step_<N>/`, holding every rank's batch and the
step's metrics: it is staged under a hidden name and renamed into place, so all ranks' files
appear together or not at all. Ranks can therefore never train on halves of two different
samplings of the same step (which would also give them different micro-batch counts and hang
their collectives). The saved metrics let a restart log a step that was published but not yet
logged when the process died, so every step is produced once and logged once.

Trainer sites that do not share this disk read steps from a store (`orchestrator.step_store`):
each published step's rank files are uploaded, then its COMPLETE marker holding the orchestrator's
seal (verify/step_seal.py), which a site checks before training. A crash between the local publish and
the upload is repaired at start-up (`mirror_missing`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from composer_prime.batch import TrainBatch, batch_path, store_batch_key, store_complete_key, write_batch
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from composer_prime.store import Store
from composer_prime.utils.fs import atomic_publish_dir, atomic_write_bytes, step_dirs
from composer_prime.utils.metrics import MetricsLogger, read_metrics
from composer_prime.verify.step_seal import seal_step

METRICS_FILE = "orchestrator_metrics.json"


def step_dir(output_dir: Path, step: int) -> Path:
    return batch_path(output_dir, step, 0).parent


def write_step(output_dir: Path, step: int, batches: list[TrainBatch], metrics: dict[str, Any],
               store: Store | None = None, key: Ed25519PrivateKey | None = None) -> Path:
    """Publish all ranks' batches of `step` and its metrics in one rename, then to `store` if given
    (sealed with `key`); returns the step directory."""
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
    if store is not None:
        mirror_step(store, key, output_dir, step, len(batches))
    return final


def mirror_step(store: Store, key: Ed25519PrivateKey, output_dir: Path, step: int, world_size: int) -> None:
    ranks = [batch_path(output_dir, step, rank).read_bytes() for rank in range(world_size)]
    for rank, data in enumerate(ranks):
        store.write_bytes(store_batch_key(step, rank), data)
    store.write_bytes(store_complete_key(step), seal_step(key, step, ranks))


def mirror_missing(store: Store, key: Ed25519PrivateKey, output_dir: Path, world_size: int) -> list[int]:
    """Upload the published steps the store lacks (a crash came between the two); returns them."""
    store.fs.invalidate_cache()
    missing = [step for step in completed_steps(output_dir, world_size) if not store.exists(store_complete_key(step))]
    for step in missing:
        mirror_step(store, key, output_dir, step, world_size)
    return missing


def completed_steps(output_dir: Path, world_size: int) -> list[int]:
    """Steps whose batches exist for every rank, ascending."""
    steps = step_dirs(Path(output_dir) / "rollouts")
    return sorted(s for s in steps if all(batch_path(output_dir, s, r).is_file() for r in range(world_size)))


def next_step(output_dir: Path, world_size: int) -> int:
    """1 + the highest completed step (1 on a fresh run)."""
    return max(completed_steps(output_dir, world_size), default=0) + 1


def log_unlogged_steps(output_dir: Path, world_size: int, metrics: MetricsLogger) -> None:
    """Log the metrics of steps published by a previous run that died before logging them."""
    logged = {r["step"] for r in read_metrics(output_dir, "orchestrator") if "reward/mean" in r}
    for step in completed_steps(output_dir, world_size):
        record = saved_metrics(output_dir, step)
        if step not in logged and record is not None:
            metrics.log(step, record)


def saved_metrics(output_dir: Path, step: int) -> dict[str, Any] | None:
    path = step_dir(output_dir, step) / METRICS_FILE
    return json.loads(path.read_text()) if path.is_file() else None
