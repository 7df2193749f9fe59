"""The trainer process end to end: real subprocesses, real batch files, real checkpoints."""

import json
import shutil
import signal
import textwrap
import time

import pytest
import torch
from safetensors.torch import load_file

from composer_prime.trainer.checkpoint import read_tensors
from composer_prime.utils.metrics import read_metrics
from composer_prime.weights import WEIGHTS_FILE, list_versions, load_version_state_dict, version_dir

pytestmark = pytest.mark.slow


def test_trains_checkpoints_publishes_and_logs(tmp_path, tiny_model_dir, helpers):
    out = tmp_path / "run"
    oldest_policy = {1: 0, 2: 1, 3: 0}
    for step in (1, 2, 3):
        helpers.write_step(out, step, helpers.make_samples(step, 8), min_policy_version=oldest_policy[step])
    config = helpers.trainer_config(out, tiny_model_dir, keep_weight_versions=2, **{"ckpt.keep_last": 2})
    result = helpers.run_trainer(config)
    assert result.returncode == 0, result.stdout + result.stderr

    assert list_versions(out) == [2, 3]
    # every ckpt.interval (50, PRIME-RL's default) steps and at the last: a model and its AdamW state per step was
    # three times the model's size written every step
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step_3"]
    # `.metadata` is torch.distributed.checkpoint's index of a checkpoint's shards
    assert not [p for p in out.rglob(".*") if p.name != ".metadata"], "temporary files or directories left behind"
    base = load_file(str(tiny_model_dir / "model.safetensors"))
    v3 = load_version_state_dict(version_dir(out, 3))
    assert set(v3) == set(base)
    assert any(not torch.equal(v3[k], base[k]) for k in base), "training changed nothing"
    checkpoint = read_tensors(out / "checkpoints/step_3")
    assert all(torch.equal(checkpoint[k], v3[k]) for k in v3)
    assert json.loads((version_dir(out, 3) / "config.json").read_text())["model_type"] == "qwen3"

    records = read_metrics(out, "trainer")
    assert [r["step"] for r in records] == [1, 2, 3]
    for r in records:
        for key in ("loss", "grad_norm", "lr", "tokens_per_s", "idle_s", "step_s", "loss/masked_low",
                    "loss/masked_high", "loss/mismatch_kl_k3", "loss/importance_ratio"):
            assert isinstance(r[key], float), key
    assert [r["off_policy_lag"] for r in records] == [0, 0, 2]  # step - 1 - min_policy_version


def test_killed_run_resumes_bit_exactly(tmp_path, tiny_model_dir, helpers):
    """SIGKILL while waiting for step 4 (checkpoint at 2, version 3 already published): the resumed
    run must drop version 3, recompute it, and match an uninterrupted run bit for bit."""
    batches = {step: helpers.make_samples(10 + step, 8) for step in (1, 2, 3, 4)}
    overrides = {"max_steps": 4, "keep_weight_versions": 10, "ckpt.interval": 2, "optim.warmup_steps": 3}

    straight = tmp_path / "straight"
    for step, samples in batches.items():
        helpers.write_step(straight, step, samples)
    straight_run = helpers.start_trainer(helpers.trainer_config(straight, tiny_model_dir, **overrides))

    crashed = tmp_path / "crashed"
    for step in (1, 2, 3):
        helpers.write_step(crashed, step, batches[step])
    config = helpers.trainer_config(crashed, tiny_model_dir, **overrides)
    process = helpers.start_trainer(config)
    try:
        deadline = time.monotonic() + 60
        while not any(r["step"] == 3 for r in read_metrics(crashed, "trainer")):
            assert process.poll() is None, process.stdout.read()
            assert time.monotonic() < deadline, "trainer did not reach step 3"
            time.sleep(0.1)
        process.send_signal(signal.SIGKILL)  # it is now waiting for the batch of step 4
        assert straight_run.wait(timeout=60) == 0, straight_run.stdout.read()
    finally:
        for p in (process, straight_run):
            p.kill()
            p.wait()
            p.stdout.close()
    assert list_versions(crashed) == [0, 1, 2, 3]  # 0: the initial weights, published at the start
    first_v3 = json.loads((version_dir(crashed, 3) / "STABLE").read_text())["time"]
    crash_time = read_metrics(crashed, "trainer")[-1]["time"]

    helpers.write_step(crashed, 4, batches[4])
    result = helpers.run_trainer(config)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "resumed from" in result.stderr
    assert json.loads((version_dir(crashed, 3) / "STABLE").read_text())["time"] > first_v3, "stale version 3 kept"
    for version in (1, 2, 3, 4):
        a = load_file(str(version_dir(straight, version) / WEIGHTS_FILE))
        b = load_file(str(version_dir(crashed, version) / WEIGHTS_FILE))
        assert all(torch.equal(a[k], b[k]) for k in a), f"version {version} differs"
    resumed = [r for r in read_metrics(crashed, "trainer") if r["time"] > crash_time]
    assert [r["step"] for r in resumed] == [3, 4]
    straight_loss = {r["step"]: r["loss"] for r in read_metrics(straight, "trainer")}
    assert [r["loss"] for r in resumed] == [straight_loss[3], straight_loss[4]]


def test_kill_between_checkpoint_and_log_loses_no_record_and_no_version(tmp_path, tiny_model_dir, helpers):
    """A SIGKILL after step 2's checkpoint and before its version and metrics line: the files as that
    kill leaves them (the run's own files with both removed). The resumed run starts after step 2, so
    it must log step 2's record from the checkpoint, once, and publish version 2 again."""
    out = tmp_path / "run"
    overrides = {"max_steps": 2, "keep_weight_versions": 10, "ckpt.interval": 2}
    for step in (1, 2):
        helpers.write_step(out, step, helpers.make_samples(20 + step, 8))
    config = helpers.trainer_config(out, tiny_model_dir, **overrides)
    assert helpers.run_trainer(config).returncode == 0
    logged = next(r for r in read_metrics(out, "trainer") if r["step"] == 2 and "loss" in r)
    lines = (out / "metrics.jsonl").read_text().splitlines()
    (out / "metrics.jsonl").write_text("".join(line + "\n" for line in lines if json.loads(line) != logged))
    shutil.rmtree(version_dir(out, 2))

    helpers.write_step(out, 3, helpers.make_samples(23, 8))
    result = helpers.run_trainer(helpers.trainer_config(out, tiny_model_dir, **{**overrides, "max_steps": 3}))
    assert result.returncode == 0, result.stdout + result.stderr
    records = [r for r in read_metrics(out, "trainer") if "loss" in r]
    assert [r["step"] for r in records] == [1, 2, 3]
    assert {k: v for k, v in records[1].items() if k != "time"} == {k: v for k, v in logged.items() if k != "time"}
    assert list_versions(out) == [0, 1, 2, 3]


def test_missing_batch_times_out_with_one_line(tmp_path, tiny_model_dir, helpers):
    config = helpers.trainer_config(tmp_path / "run", tiny_model_dir, batch_timeout_s=0.5)
    result = helpers.run_trainer(config)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("error: no batch for step 1 at ") and "orchestrator" in lines[-1]
    assert "Traceback" not in result.stderr


def test_unimportable_custom_loss_exits_with_one_line(tmp_path, tiny_model_dir, helpers):
    config = helpers.trainer_config(
        tmp_path / "run", tiny_model_dir, loss={"pg": {"type": "custom", "import_path": "no_such_pkg_q.loss"}}
    )
    result = helpers.run_trainer(config)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == ["error: cannot import loss module 'no_such_pkg_q': "
                                                  "ModuleNotFoundError: No module named 'no_such_pkg_q'"]


def test_custom_loss_by_import_path_trains(tmp_path, tiny_model_dir, helpers):
    """A user module on PYTHONPATH, called once per packed sample, with its kwargs."""
    (tmp_path / "user_pkg").mkdir()
    (tmp_path / "user_pkg" / "__init__.py").write_text("")
    (tmp_path / "user_pkg" / "losses.py").write_text(textwrap.dedent("""
        import torch
        from composer_prime.loss import LossInputs, LossOutputs
        from composer_prime.loss.dppo import dppo_loss

        def scaled_dppo(inputs: LossInputs, scale: float) -> LossOutputs:
            out = dppo_loss(inputs)
            return LossOutputs(loss=scale * out.loss, metrics={"tokens": inputs.loss_mask.sum().float()})
    """))
    samples = helpers.make_samples(99, 8)
    losses = {"default": {"type": "dppo"},
              "custom": {"type": "custom", "import_path": "user_pkg.losses.scaled_dppo", "kwargs": {"scale": 2.0}}}
    processes = {}
    for name, loss in losses.items():
        helpers.write_step(tmp_path / name, 1, samples)
        config = helpers.trainer_config(tmp_path / name, tiny_model_dir, max_steps=1, loss={"pg": loss})
        processes[name] = helpers.start_trainer(config, env=helpers.trainer_env(PYTHONPATH=str(tmp_path)))
    runs = {}
    for name, process in processes.items():
        output = process.communicate(timeout=120)[0]
        assert process.returncode == 0, output
        runs[name] = read_metrics(tmp_path / name, "trainer")[0]
    assert runs["custom"]["loss"] == pytest.approx(2 * runs["default"]["loss"], rel=1e-5)
    per_sample = [int(s["loss_mask"].sum()) for s in samples]
    assert runs["custom"]["loss/tokens"] == pytest.approx(sum(per_sample) / len(per_sample))
