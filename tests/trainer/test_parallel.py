"""Data parallel: `torchrun --nproc-per-node 2` (FSDP2 on gloo) trains like one process on the same global batch."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

from composer_prime.model.export import ExportConfig, export
from composer_prime.trainer.checkpoint import read_tensors
from composer_prime.utils.metrics import read_metrics
from composer_prime.utils.net import free_port
from composer_prime.utils.processes import spawn, stop
from composer_prime.weights import WEIGHTS_FILE, version_dir

pytestmark = pytest.mark.slow

STEPS = (1, 2, 3)
# Rank 0 gets 6 samples (3 micro-batches), rank 1 gets 2 (1 micro-batch): the ranks must still
# agree on the number of forward/backward passes.
SPLIT = [[0, 1, 2, 3, 4, 5], [6, 7]]
SETTINGS = {"max_steps": 3, "keep_weight_versions": 5, "ckpt.keep_last": 5, "ckpt.interval": 1, "optim.max_norm": 100.0}


def samples_of(helpers, step):
    return helpers.make_samples(100 + step, 8)


def write_batches(helpers, out, world_size):
    for step in STEPS:
        split = SPLIT if world_size == 2 else None
        helpers.write_step(out, step, samples_of(helpers, step), world_size=world_size, rows_per_micro=1, split=split)




def run_two_ranks(helpers, config) -> str:
    """torchrun with two ranks, to the end; returns its output. It runs in a process group of its own, so that a
    timeout stops the ranks with it (killing torchrun alone left both ranks running, waiting on each other)."""
    command = [
        sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
        "--master-port", str(free_port()), "-m", "composer_prime.trainer.main", "@", str(config),
    ]
    env = helpers.trainer_env(GLOO_SOCKET_IFNAME="lo", MASTER_ADDR="127.0.0.1")
    child = spawn("torchrun", command, Path(config).parent / "torchrun-logs", env)
    try:
        code = child.process.wait(timeout=500)  # 130 s at load 12: most of it is each rank importing torch
    except subprocess.TimeoutExpired:
        code = None
    finally:
        stop([child])
    output = child.log_path.read_text(errors="replace")
    assert code == 0, output[-8000:]
    return output


def curve(out, key):
    return [r[key] for r in read_metrics(out, "trainer")]


def assert_same_weights(a_dir, b_dir, version):
    a = load_file(str(version_dir(a_dir, version) / WEIGHTS_FILE))
    b = load_file(str(version_dir(b_dir, version) / WEIGHTS_FILE))
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=1e-4, atol=1e-5, msg=key)


@pytest.fixture(scope="module")
def one_process(tmp_path_factory, tiny_model_dir, helpers):
    """Reference: one process on the whole global batch of each step."""
    out = tmp_path_factory.mktemp("one_process") / "run"
    write_batches(helpers, out, world_size=1)
    result = helpers.run_trainer(helpers.trainer_config(out, tiny_model_dir, **SETTINGS))
    assert result.returncode == 0, result.stdout + result.stderr
    return out


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory, tiny_model_dir, helpers):
    out = tmp_path_factory.mktemp("two_ranks") / "run"
    write_batches(helpers, out, world_size=2)
    run_two_ranks(helpers, helpers.trainer_config(out, tiny_model_dir, **SETTINGS))
    return out


def test_two_ranks_match_one_process(two_ranks, one_process):
    out = two_ranks
    # ranks pack differently, moving float32 log-probs by <= 5e-7; the loss averages them times |A| ~ 1
    assert curve(out, "loss") == pytest.approx(curve(one_process, "loss"), rel=1e-5, abs=1e-6)
    # Adam ignores a global gradient scale, so the norm is what shows that ranks' gradients are
    # summed (the loss is already divided by the global token count), not averaged.
    assert curve(out, "grad_norm") == pytest.approx(curve(one_process, "grad_norm"), rel=1e-4)
    for version in STEPS:
        assert_same_weights(out, one_process, version)
    sharded = read_tensors(out / "checkpoints/step_3", "optim.state.")
    single = read_tensors(one_process / "checkpoints/step_3", "optim.state.")
    assert sharded.keys() == single.keys()
    second_moments = [name for name in single if name.endswith(".exp_avg_sq")]
    assert second_moments
    for name in second_moments:
        torch.testing.assert_close(sharded[name], single[name], rtol=1e-3, atol=1e-12, msg=name)


def test_two_ranks_resume_a_checkpoint_into_the_sharded_model(tmp_path, tiny_model_dir, helpers, one_process):
    """The one-process checkpoint of step 2 (full state dicts) loads into 2 FSDP ranks, which then
    train step 3 like the one process did."""
    out = tmp_path / "resumed"
    write_batches(helpers, out, world_size=2)
    shutil.copytree(one_process / "checkpoints/step_2", out / "checkpoints/step_2")
    output = run_two_ranks(helpers, helpers.trainer_config(out, tiny_model_dir, **SETTINGS))
    assert "resumed from" in output
    assert [r["step"] for r in read_metrics(out, "trainer")] == [3]
    assert curve(out, "loss") == pytest.approx(curve(one_process, "loss")[2:], rel=1e-5, abs=1e-6)  # as above
    assert_same_weights(out, one_process, 3)


def test_one_rank_resumes_a_checkpoint_two_ranks_wrote(tmp_path, tiny_model_dir, helpers, one_process, two_ranks):
    """Step 2's sharded checkpoint of the 2-rank run, each rank's half of every parameter and moment, read
    back whole by one process, which then trains step 3 as the one process and the two ranks did."""
    assert len(list((two_ranks / "checkpoints/step_2/state").glob("*.distcp"))) == 2  # one file per rank
    out = tmp_path / "resumed"
    write_batches(helpers, out, world_size=1)
    shutil.copytree(two_ranks / "checkpoints/step_2", out / "checkpoints/step_2")
    result = helpers.run_trainer(helpers.trainer_config(out, tiny_model_dir, **SETTINGS))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "resumed from" in result.stderr
    assert [r["step"] for r in read_metrics(out, "trainer")] == [3]
    assert curve(out, "loss") == pytest.approx(curve(two_ranks, "loss")[2:], rel=1e-5, abs=1e-6)  # as above
    assert curve(out, "loss") == pytest.approx(curve(one_process, "loss")[2:], rel=1e-5, abs=1e-6)
    assert_same_weights(out, two_ranks, 3)


def test_export_of_a_two_rank_checkpoint_is_its_weight_version(tmp_path, two_ranks):
    exported = export(ExportConfig(source=two_ranks / "checkpoints/step_3", output_dir=tmp_path / "hf"))
    version = load_file(str(version_dir(two_ranks, 3) / WEIGHTS_FILE))
    loaded = AutoModelForCausalLM.from_pretrained(exported).state_dict()
    assert loaded.keys() == version.keys()
    for key, tensor in version.items():
        assert torch.equal(loaded[key], tensor), key
