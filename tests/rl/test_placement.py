"""Where rl puts each process on a machine with N GPUs, and the counts it refuses in one line before starting anything.

Only a GPU shows the devices themselves working; what a CPU can check is the environment each child gets
(CUDA_VISIBLE_DEVICES) and the trainer's cap, for every machine shape, and that the real launcher hands it to each
child process it starts, torchrun's ranks included."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from composer_prime.cli import parse_config
from composer_prime.configs.rl import RLConfig
from composer_prime.errors import UserError
from composer_prime.rl.placement import place, trainer_fraction
from composer_prime.utils.net import free_port

REPO = Path(__file__).resolve().parents[2]


def config(*args: str) -> RLConfig:
    return parse_config(RLConfig, ["--model.path", "/tmp/m", *args])


VLLM = ("--inference.backend.type", "vllm")


@pytest.fixture(autouse=True)
def _all_gpus_visible(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


def envs(cfg: RLConfig, gpus: int) -> dict[str, str]:
    placement = place(cfg, gpus)
    return {name: placement.env(name)["CUDA_VISIBLE_DEVICES"] for name in ("inference", "orchestrator", "trainer")}


def test_without_gpus_nothing_is_placed_and_named_ids_are_refused():
    assert place(config(*VLLM), 0) is None
    with pytest.raises(UserError, match="name GPUs, but torch sees none"):
        place(config(*VLLM, "--inference-gpu-ids", "[0]"), 0)


def test_inference_first_gpus_then_the_trainer_and_the_orchestrator_none():
    assert envs(config(*VLLM), 2) == {"inference": "0", "orchestrator": "", "trainer": "1"}
    cfg = config(*VLLM, "--inference.backend.tensor-parallel-size", "2", "--inference.backend.data-parallel-size", "2",
                 "--num-train-processes", "4")
    assert envs(cfg, 8) == {"inference": "0,1,2,3", "orchestrator": "", "trainer": "4,5,6,7"}
    assert envs(config(), 2) == {"inference": "0", "orchestrator": "", "trainer": "1"}  # transformers: one GPU


def test_ids_are_the_parents_visible_devices(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5,7")
    assert envs(config(*VLLM, "--inference-gpu-ids", "[2]", "--trainer-gpu-ids", "[0]"), 3) == {
        "inference": "7", "orchestrator": "", "trainer": "3"}


def test_one_gpu_is_shared_and_the_trainer_capped_to_what_vllm_leaves():
    cfg = config(*VLLM, "--inference.backend.gpu-memory-utilization", "0.3")
    placement = place(cfg, 1)
    assert placement.shared == (0,) and envs(cfg, 1)["trainer"] == envs(cfg, 1)["inference"] == "0"
    assert trainer_fraction(cfg, placement) == pytest.approx(0.65)


def test_a_cpu_process_gets_no_gpu():
    cfg = config(*VLLM, "--inference.model.device", "cpu")
    assert envs(cfg, 1) == {"inference": "", "orchestrator": "", "trainer": "0"}
    assert place(config(*VLLM, "--model.device", "cpu"), 4) is None


@pytest.mark.parametrize(("args", "gpus", "message"), [
    (("--num-train-processes", "2"), 1,
     "the trainer (num_train_processes = 2) needs 2 GPU(s) besides inference's [0], this machine shows 1"),
    (("--inference.backend.tensor-parallel-size", "2"), 2,
     "inference (tensor_parallel_size x data_parallel_size = 2) and the trainer (num_train_processes = 1) need 3 GPUs, "
     "this machine shows 2"),
    (("--trainer-gpu-ids", "[0, 0]", "--num-train-processes", "2"), 2, "names a GPU twice"),
    (("--trainer-gpu-ids", "[3]",), 2, "trainer_gpu_ids = [3], but this machine shows 2 GPU(s)"),
    (("--inference-gpu-ids", "[0, 1]",), 2, "inference_gpu_ids names 2 GPU(s)"),
    (("--inference.backend.gpu-memory-utilization", "0.9"), 1, "leaves the trainer 0.05"),
    (("--trainer.model.device", "cuda:1"), 2, "model.device = cuda:1: under rl each process sees only its own GPUs"),
])
def test_what_cannot_be_placed_is_refused_with_the_counts(args, gpus, message):
    with pytest.raises(UserError, match=re.escape(message)):
        place(config(*VLLM, *args), gpus)


@pytest.mark.slow
def test_rl_starts_each_child_with_its_own_gpus(tmp_path):
    """Issue 29 defect 6: `rl` itself on a machine showing 4 GPUs as CUDA_VISIBLE_DEVICES=4,5,6,7, each child it
    starts a recorder of its environment (placed_children.py): inference on GPU 3 of 4, the trainer's two torchrun
    ranks on GPUs 0 and 2 (each rank picks its own by LOCAL_RANK), the orchestrator on none."""
    seen = tmp_path / "seen"
    seen.mkdir()
    done = subprocess.run(
        [sys.executable, str(Path(__file__).parent / "placed_children.py"), "4", str(seen),
         "@", str(REPO / "configs" / "quickstart" / "rl.toml"), "--output-dir", str(tmp_path / "run"),
         "--inference.port", str(free_port()), "--num-train-processes", "2", "--inference-gpu-ids", "[3]",
         "--trainer-gpu-ids", "[0, 2]", "--no-plot", "--no-log.progress"],
        env={**os.environ, "CUDA_VISIBLE_DEVICES": "4,5,6,7"}, capture_output=True, text=True, cwd=REPO, timeout=400)
    assert done.returncode == 0, done.stderr[-2000:]
    children: dict[str, list[tuple[str | None, str | None]]] = {}
    for path in seen.iterdir():
        env = json.loads(path.read_text())
        children.setdefault(path.name.split("-")[0], []).append((env["CUDA_VISIBLE_DEVICES"], env["LOCAL_RANK"]))
    assert {name: sorted(envs, key=str) for name, envs in children.items()} == {
        "inference": [("7", None)], "orchestrator": [("", None)], "trainer": [("4,6", "0"), ("4,6", "1")]}
