"""A tiny Qwen3 model on disk, packed batch files as the orchestrator writes them, and trainer runs."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tomli_w
import torch
from transformers import Qwen3Config, Qwen3ForCausalLM

from composer_prime.batch import Array, MicroBatch, TrainBatch, write_batch

VOCAB = 300
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    torch.manual_seed(0)
    config = Qwen3Config(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, max_position_embeddings=256, tie_word_embeddings=False,
    )
    path = tmp_path_factory.mktemp("tiny_qwen3")
    Qwen3ForCausalLM(config).save_pretrained(path)
    return path


def make_samples(seed: int, count: int) -> list[dict[str, np.ndarray]]:
    """Prompt + completion token sequences with sampler log-probs and one advantage each."""
    rng = np.random.default_rng(seed)
    samples = []
    for _ in range(count):
        prompt, completion = int(rng.integers(4, 10)), int(rng.integers(6, 20))
        n = prompt + completion
        loss_mask = np.arange(n) >= prompt
        # near log(1 / VOCAB), what a freshly initialised model assigns
        sampled = np.log(1 / VOCAB) + rng.normal(0, 0.3, n)
        samples.append({
            "input_ids": rng.integers(1, VOCAB, n).astype(np.int32),
            "loss_mask": loss_mask,
            "advantages": np.where(loss_mask, rng.normal(), 0.0).astype(np.float32),
            "inference_logprobs": np.where(loss_mask, sampled, 0.0).astype(np.float32),
        })
    return samples


def pack(samples: list[dict], seq_len: int, rows_per_micro: int) -> list[MicroBatch]:
    """Greedy in-order packing into [rows, seq_len] micro-batches; padding is its own segment."""
    rows, current = [], []
    for s in samples:
        if current and sum(len(c["input_ids"]) for c in current) + len(s["input_ids"]) > seq_len:
            rows.append(current)
            current = []
        current.append(s)
    rows.append(current)

    def row_arrays(row):
        pad = seq_len - sum(len(s["input_ids"]) for s in row)
        def cat(key, fill, dtype):
            return np.concatenate([s[key] for s in row] + [np.full(pad, fill)]).astype(dtype)
        positions = np.concatenate([np.arange(len(s["input_ids"])) for s in row] + [np.arange(pad)])
        return (cat("input_ids", 0, np.int32), positions.astype(np.int32), cat("loss_mask", False, np.bool_),
                cat("advantages", 0.0, np.float32), cat("inference_logprobs", 0.0, np.float32))

    micro = []
    for i in range(0, len(rows), rows_per_micro):
        arrays = [np.stack(a) for a in zip(*(row_arrays(r) for r in rows[i : i + rows_per_micro]))]
        micro.append(MicroBatch(*(Array.from_numpy(a) for a in arrays)))
    return micro


def write_step(output_dir: Path, step: int, samples: list[dict], world_size: int = 1, seq_len: int = 64,
               rows_per_micro: int = 2, temperature: float = 1.0, min_policy_version: int = 0,
               split: list[list[int]] | None = None) -> None:
    """The step's samples split over `world_size` rank files (round robin unless `split` gives
    each rank's sample indices), all sharing the global loss-token count."""
    split = split or [list(range(r, len(samples), world_size)) for r in range(world_size)]
    num_loss_tokens = int(sum(s["loss_mask"].sum() for s in samples))
    for rank, indices in enumerate(split):
        batch = TrainBatch(
            step=step, rank=rank, world_size=world_size, temperature=temperature, num_loss_tokens=num_loss_tokens,
            micro_batches=pack([samples[i] for i in indices], seq_len, rows_per_micro),
            min_policy_version=min_policy_version, max_policy_version=step - 1,
        )
        write_batch(output_dir, batch)


def trainer_config(output_dir: Path, model_dir: Path, **overrides) -> Path:
    config = {
        "model": {"path": str(model_dir)},
        "output_dir": str(output_dir),
        "max_steps": 3,
        "optim": {"lr": 1e-3, "max_norm": 1.0},
        "batch_timeout_s": 60.0,
        "log": {"progress": False},
    }
    for key, value in overrides.items():
        node = config
        *parents, leaf = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    path = Path(output_dir).with_name(Path(output_dir).name + ".toml")
    path.write_text(tomli_w.dumps(config))
    return path


def trainer_env(**extra: str) -> dict[str, str]:
    # One thread per process: two cores are shared, and equal thread counts keep runs bit-comparable.
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1", **extra}


def start_trainer(config_path: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "composer_prime.trainer.main", "@", str(config_path)],
        cwd=REPO, env=env or trainer_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )


# 400 s: a trainer start is 20-30 s on a quiet machine, but over 120 s on 2 cores at load 10-15
def run_trainer(config_path: Path, env: dict[str, str] | None = None, timeout: float = 400):
    return subprocess.run(
        [sys.executable, "-m", "composer_prime.trainer.main", "@", str(config_path)],
        cwd=REPO, env=env or trainer_env(), capture_output=True, text=True, timeout=timeout,
    )


@pytest.fixture(scope="session")
def helpers():
    """The module's helpers, for test files (conftest is not importable under --import-mode=importlib)."""
    return sys.modules[__name__]
