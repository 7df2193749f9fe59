"""benchmarks/gpu/run.sh as far as a CPU machine can check it: valid bash, a one-line refusal without
CUDA, and every step's command accepted by what it runs (rl's config, the benchmark's arguments)."""

import importlib.util
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from composer_prime.cli import parse_config
from composer_prime.configs.rl import RLConfig

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks/gpu/run.sh"


def dry_steps(out: Path) -> list[list[str]]:
    env = {**os.environ, "GPU_RUN_DRY": "1"}
    done = subprocess.run(["bash", str(SCRIPT), str(out)], env=env, capture_output=True, text=True, check=True)
    return [shlex.split(line) for line in done.stdout.splitlines()]


def benchmark_parser():
    sys.path.insert(0, str(REPO / "benchmarks"))  # the benchmark imports its sibling trainer_throughput
    try:
        spec = importlib.util.spec_from_file_location("trainer_memory", REPO / "benchmarks/trainer_memory.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    return module


def test_the_script_is_valid_bash():
    assert subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True).returncode == 0


def test_without_cuda_it_stops_at_once_with_one_line(tmp_path):
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run(["bash", str(SCRIPT), str(tmp_path / "out")], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "error: no CUDA device (torch.cuda.is_available() is False): benchmarks/gpu/run.sh needs a GPU"
    ]
    assert not (tmp_path / "out").exists()  # nothing synced, run or written


def test_every_step_is_accepted_by_what_it_runs(tmp_path):
    sync, tests, quickstart, benchmark = dry_steps(tmp_path / "out")
    assert sync == ["uv", "sync", "--extra", "vllm"]
    assert tests[:4] == ["uv", "run", "--no-sync", "pytest"] and tests[4:6] == ["-m", "gpu"]

    assert quickstart[:4] == ["uv", "run", "--no-sync", "rl"]
    config = parse_config(RLConfig, quickstart[4:])
    assert config.inference.backend.type == "vllm"
    assert config.output_dir == tmp_path / "out/quickstart"
    assert config.trainer.model.dtype == "bfloat16" and config.trainer.mixed_precision

    assert benchmark[:5] == ["uv", "run", "--no-sync", "python", "benchmarks/trainer_memory.py"]
    module = benchmark_parser()
    args = module.build_parser().parse_args(benchmark[5:])
    assert (args.device, args.dtype) == ("cuda", "bfloat16")
    assert args.tokens % module.SEQ_LEN == 0
    assert args.variants == list(module.VARIANTS)
    assert module.qwen3_06b_config().num_hidden_layers == 28  # >= 0.5 B parameters: 0.60 B with its vocab


def test_the_gpu_quickstart_is_the_quickstart_on_a_gpu():
    """gpu.toml is a file of its own (a layer would keep rl.toml's transformers-backend fields): it must
    differ from rl.toml in the GPU settings only."""
    cpu = parse_config(RLConfig, ["@", "configs/quickstart/rl.toml"]).model_dump(mode="json")
    gpu = parse_config(RLConfig, ["@", "configs/quickstart/gpu.toml"]).model_dump(mode="json")
    assert gpu["inference"].pop("backend")["type"] == "vllm"
    cpu["inference"].pop("backend")
    assert gpu["trainer"]["model"]["dtype"] == "bfloat16"
    assert without(gpu, "output_dir", "dtype") == without(cpu, "output_dir", "dtype")


def without(tree, *keys):
    """`tree` with every entry named in `keys` dropped, at any depth (rl copies output_dir and model.dtype
    into every process's config)."""
    if isinstance(tree, dict):
        return {k: without(v, *keys) for k, v in tree.items() if k not in keys}
    return tree


def test_the_gpu_quickstart_asks_vllm_for_no_longer_context_than_its_model_has():
    """vLLM refuses at engine start a max_model_len beyond the model's positions (1024 for a 512-position model)."""
    config = parse_config(RLConfig, ["@", "configs/quickstart/gpu.toml"])
    positions = json.loads((REPO / config.model.path / "config.json").read_text())["max_position_embeddings"]
    assert config.inference.backend.max_model_len is None or config.inference.backend.max_model_len <= positions
