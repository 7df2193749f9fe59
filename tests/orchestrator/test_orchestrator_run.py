"""The orchestrator process end to end against a real inference server, with this test as the trainer.

async_level = 0 and max_off_policy_steps = 0 make every batch's policy version exact: batch N
may start only once version N-1 is published, and only groups sampled by version N-1 are kept.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM

from composer_prime.batch import batch_path, read_batch
from composer_prime.inference.client import InferenceClient
from composer_prime.orchestrator.step_io import completed_steps
from composer_prime.utils.metrics import read_metrics
from composer_prime.weights import publish_weights

WORLD_SIZE = 2
GROUPS_PER_STEP, GROUP_SIZE = 2, 4


def orchestrator(model: Path, out: Path, url: str, max_steps: int) -> subprocess.Popen:
    args = ["--model.path", str(model), "--output-dir", str(out), "--inference-url", url,
            "--max-steps", str(max_steps), "--batch-size", str(GROUPS_PER_STEP * GROUP_SIZE),
            "--group-size", str(GROUP_SIZE), "--async-level", "0", "--max-off-policy-steps", "0",
            "--seq-len", "96", "--micro-batch-rows", "2", "--train-world-size", str(WORLD_SIZE),
            "--sampling.max-tokens", "8", "--eval.num-examples", "4", "--eval.k", "2",
            "--eval.samples-per-prompt", "2", "--eval.temperature", "1.0", "--eval.pass-threshold", "0.3",
            "--eval.interval", "1",
            "--weight-poll-s", "0.1", "--weight-timeout-s", "120", "--no-log.progress"]
    return subprocess.Popen([sys.executable, "-m", "composer_prime.orchestrator.main", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


class Trainer:
    """Publishes weight version N once batch N is on disk, as the real trainer would after its step N."""

    def __init__(self, model: Path, out: Path):
        self.out = out
        self.state = {k: v.clone() for k, v in AutoModelForCausalLM.from_pretrained(model).state_dict().items()}
        self.config_json = (model / "config.json").read_text()

    def wait_for_batch(self, proc: subprocess.Popen, step: int, timeout_s: float = 120) -> None:
        deadline = time.monotonic() + timeout_s
        while step not in completed_steps(self.out, WORLD_SIZE):
            if proc.poll() is not None:
                raise AssertionError(f"orchestrator exited with {proc.returncode}: {proc.communicate()[1][-3000:]}")
            assert time.monotonic() < deadline, f"batch {step} never appeared"
            time.sleep(0.1)

    def publish(self, version: int) -> None:
        generator = torch.Generator().manual_seed(version)
        state = {k: v + 1e-3 * torch.randn(v.shape, generator=generator) for k, v in self.state.items()}
        publish_weights(self.out, version, state, self.config_json)


def finish(proc: subprocess.Popen) -> str:
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr[-3000:]
    return stdout


def served_version(url: str) -> int:
    async def health():
        async with InferenceClient(url) as client:
            return (await client.health()).weight_version

    return asyncio.run(health())


def check_batches(out: Path, step: int) -> None:
    batches = [read_batch(batch_path(out, step, rank)) for rank in range(WORLD_SIZE)]
    loss_tokens = sum(int(m.loss_mask.numpy().sum()) for b in batches for m in b.micro_batches)
    assert loss_tokens > 0
    for rank, batch in enumerate(batches):
        assert (batch.step, batch.rank, batch.world_size) == (step, rank, WORLD_SIZE)
        assert batch.num_loss_tokens == loss_tokens
        assert len(batch.micro_batches) == len(batches[0].micro_batches)
        # async_level 0, max_off_policy_steps 0: batch N comes from version N-1 and nothing else.
        assert batch.min_policy_version == batch.max_policy_version == step - 1
        for micro in batch.micro_batches:
            mask, adv = micro.loss_mask.numpy(), micro.advantages.numpy()
            assert not adv[~mask].any() and not micro.inference_logprobs.numpy()[~mask].any()
            assert (micro.inference_logprobs.numpy()[mask] <= 0).all()
    # Each group's advantages sum to zero (reward minus group mean), so the step's per-sample advantages do too.
    advantages = [a for b in batches for m in b.micro_batches for a in sample_advantages(m)]
    assert len(advantages) == GROUPS_PER_STEP * GROUP_SIZE
    assert abs(sum(advantages)) <= 1e-5 * max(1.0, sum(abs(a) for a in advantages))


def sample_advantages(micro) -> list[float]:
    """One advantage per packed sample: rows split where positions restart, read at the first loss token."""
    pos, mask, adv = micro.position_ids.numpy(), micro.loss_mask.numpy(), micro.advantages.numpy()
    out = []
    for r in range(pos.shape[0]):
        starts = [*np.flatnonzero(pos[r] == 0), pos.shape[1]]
        for a, b in zip(starts[:-1], starts[1:], strict=True):
            loss = np.flatnonzero(mask[r, a:b])
            if loss.size:
                assert (adv[r, a:b][loss] == adv[r, a + loss[0]]).all()
                out.append(float(adv[r, a + loss[0]]))
    return out


@pytest.mark.slow
def test_steps_gated_on_published_weights_then_resume_without_repeats(tiny_model, inference_url, tmp_path):
    out = tmp_path / "run"
    trainer = Trainer(tiny_model, out)

    first = orchestrator(tiny_model, out, inference_url, max_steps=2)
    try:
        trainer.wait_for_batch(first, 1)
        time.sleep(1.0)  # give a broken gate time to run ahead
        assert completed_steps(out, WORLD_SIZE) == [1], "batch 2 was produced before version 1 existed"
        trainer.publish(1)
        trainer.wait_for_batch(first, 2)
        trainer.publish(2)  # the final eval waits for version max_steps
        stdout = finish(first)
    finally:
        first.kill()
        first.wait()
    assert "held-out exact_match" in stdout
    produced = {step: batch_path(out, step, 0).read_bytes() for step in (1, 2)}

    # Rerun with one more step: resumes at step 3 (gated on version 2, already there).
    second = orchestrator(tiny_model, out, inference_url, max_steps=3)
    try:
        trainer.wait_for_batch(second, 3)
        trainer.publish(3)
        stdout = finish(second)
    finally:
        second.kill()
        second.wait()

    assert all(batch_path(out, step, 0).read_bytes() == data for step, data in produced.items()), \
        "a finished step was produced again"
    for step in (1, 2, 3):
        check_batches(out, step)
    assert sorted(p.name for p in (out / "rollouts").iterdir()) == ["step_1", "step_2", "step_3"]
    assert served_version(inference_url) == 3, "inference was not told to load the newest version"

    records = read_metrics(out, "orchestrator")
    steps = [r for r in records if "reward/mean" in r]
    assert [r["step"] for r in steps] == [1, 2, 3], "a step was logged twice or not at all"
    for r in steps:
        assert 0.0 <= r["reward/mean"] <= 1.0 and r["dropped/off_policy_groups"] == 0
        assert r["off_policy/lag_max"] == 0 and 0 < r["completion_len/mean"] <= 8
        assert "env/exact_match" in r and "env/lcs_credit" in r
        assert r["answer_len/ratio"] == pytest.approx(r["answer_len/chars"] / r["answer_len/target_chars"])
        assert 0.0 <= r["truncated/fraction"] <= 1.0 and r["rollouts_per_s"] > 0
    assert steps[1]["time/wait_weights_s"] > 0, "step 2 did not wait for version 1"
    evals = [r for r in records if "eval/reward" in r]
    # The start eval (step 0, version 0) runs once; the interval eval after batch 1 sees version 0 (version 1
    # is published only after it); each run ends with an eval on version max_steps.
    assert [(r["step"], r["eval/weight_version"]) for r in evals] == [(0, 0), (1, 0), (2, 2), (3, 3)]
    start, end = evals[0]["eval/reward"], evals[-1]
    assert end["eval/reward_start"] == start and end["eval/reward_end"] == end["eval/reward"]
    assert end["eval/delta"] == pytest.approx(end["eval/reward"] - start, abs=1e-12)
    assert all(0.0 <= r["eval/pass@2"] <= 1.0 for r in evals)
    # The task's verdict heads the summary, sampled and greedy, with the reward beside it.
    assert all(r["eval/solved"] == r["eval/env/exact_match"] and "eval/greedy/solved" in r for r in evals)
    assert end["eval/solved_start"] == evals[0]["eval/solved"]
    assert end["eval/greedy/solved_delta"] == pytest.approx(end["eval/greedy/solved"] - evals[0]["eval/greedy/solved"])
    assert (f"held-out exact_match {end['eval/solved_start']:.3f} -> {end['eval/solved']:.3f}" in stdout
            and f"reward {start:.3f} -> {end['eval/reward']:.3f}" in stdout)
