"""`uv run export`: a LoRA run's checkpoint and weight version as Hugging Face model directories, and
one-line refusals of what it cannot read."""

import json
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

from composer_prime.configs.shared import ModelConfig
from composer_prime.errors import UserError
from composer_prime.trainer.build import build_train_model
from composer_prime.trainer.checkpoint import load_train_state
from composer_prime.configs.trainer import TrainerConfig
from composer_prime.trainer.parallel import World
from composer_prime.weights import WEIGHTS_FILE, version_dir

pytestmark = pytest.mark.slow


def export(helpers, source, output):
    return subprocess.run(
        [sys.executable, "-c", "from composer_prime.model.export import cli; cli()",
         "--source", str(source), "--output-dir", str(output)],
        cwd=helpers.REPO, env=helpers.trainer_env(), capture_output=True, text=True, timeout=300,
    )


@pytest.fixture(scope="module")
def lora_run(tmp_path_factory, tiny_model_dir, helpers):
    out = tmp_path_factory.mktemp("lora") / "run"
    for step in (1, 2):
        helpers.write_step(out, step, helpers.make_samples(step, 8))
    config = helpers.trainer_config(out, tiny_model_dir, max_steps=2, **{"lora.rank": 4, "lora.alpha": 8.0})
    result = helpers.run_trainer(config, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return out


def test_a_lora_checkpoint_and_its_version_export_to_the_same_full_model(tmp_path, lora_run, tiny_model_dir, helpers):
    from_checkpoint = export(helpers, lora_run / "checkpoints/step_2", tmp_path / "from_checkpoint")
    from_version = export(helpers, version_dir(lora_run, 2), tmp_path / "from_version")
    assert from_checkpoint.returncode == 0 and from_version.returncode == 0, from_checkpoint.stderr + from_version.stderr

    published = load_file(str(version_dir(lora_run, 2) / WEIGHTS_FILE))  # merged by the trainer
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir).state_dict()
    assert any(not torch.equal(published[k], base[k]) for k in base), "the adapters changed nothing"
    for exported in (tmp_path / "from_checkpoint", tmp_path / "from_version"):
        model = AutoModelForCausalLM.from_pretrained(exported)
        assert not any("lora" in k for k in model.state_dict())
        assert model.state_dict().keys() == published.keys()
        for key, tensor in published.items():
            assert torch.equal(model.state_dict()[key], tensor), (exported.name, key)
    assert json.loads((lora_run / "checkpoints/step_2/meta.json").read_text())["lora"]["rank"] == 4


def test_what_export_cannot_read_is_refused_in_one_line(tmp_path, helpers):
    result = export(helpers, tmp_path, tmp_path / "out")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: {tmp_path} is neither a checkpoint (no meta.json) nor a weight version (no STABLE)"
    ]
    assert not (tmp_path / "out").exists()


def test_an_old_whole_model_checkpoint_is_refused_in_one_line(tmp_path, tiny_model_dir, helpers):
    """Format 1 (torch.save of the whole model and optimizer) is not read: a clear line, for export and resume."""
    old = tmp_path / "checkpoints/step_4"
    old.mkdir(parents=True)
    (old / "meta.json").write_text(json.dumps({"format": 1, "step": 4, "world_size": 1}))
    result = export(helpers, old, tmp_path / "out")
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"error: checkpoint {old} has format 1") and "ckpt.resume = false" in line

    world = World(rank=0, world_size=1, device=torch.device("cpu"))
    model = build_train_model(TrainerConfig(model=ModelConfig(path=str(tiny_model_dir), device="cpu")), world)
    with pytest.raises(UserError, match="has format 1"):
        load_train_state(old, model, torch.optim.AdamW(model.parameters()))
