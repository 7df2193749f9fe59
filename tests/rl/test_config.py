from pathlib import Path

import pytest

from composer_prime.cli import parse_config
from composer_prime.configs.inference import InferenceConfig
from composer_prime.configs.orchestrator import OrchestratorConfig
from composer_prime.configs.rl import RLConfig
from composer_prime.configs.shared import write_config
from composer_prime.configs.trainer import TrainerConfig
from composer_prime.rl.main import commands

REPO = Path(__file__).resolve().parents[2]


def test_shared_fields_reach_every_process():
    config = parse_config(RLConfig, ["--max-steps", "7", "--seed", "3", "--output-dir", "/tmp/run-x",
                                     "--model.path", "/tmp/m", "--inference.port", "9123",
                                     "--num-train-processes", "2"])
    for sub in (config.orchestrator, config.trainer):
        assert (sub.max_steps, sub.seed, sub.output_dir) == (7, 3, Path("/tmp/run-x"))
    assert {c.model.path for c in (config.inference, config.orchestrator, config.trainer)} == {"/tmp/m"}
    assert config.orchestrator.inference_url == "http://127.0.0.1:9123"
    assert config.orchestrator.train_world_size == 2


def test_written_sub_configs_parse_back_identically(tmp_path):
    config = parse_config(RLConfig, ["@", str(REPO / "configs/quickstart/rl.toml"), "--trainer.optim.lr", "0.001"])
    assert config.trainer.optim.lr == 1e-3
    back = parse_config(RLConfig, ["@", str(write_config(config, tmp_path / "rl.toml"))])
    assert back == config


def test_a_model_field_set_on_one_process_wins_for_that_process_only():
    config = parse_config(RLConfig, ["--model.path", "/tmp/m", "--model.dtype", "bfloat16",
                                     "--trainer.model.dtype", "float32", "--inference.model.device", "cpu"])
    assert (config.trainer.model.path, config.trainer.model.dtype, config.trainer.model.device) == (
        "/tmp/m", "float32", None)
    assert (config.inference.model.dtype, config.inference.model.device) == ("bfloat16", "cpu")
    assert (config.orchestrator.model.dtype, config.orchestrator.model.device) == ("bfloat16", None)


@pytest.mark.parametrize(("args", "message"), [
    (["--model.path", "/a", "--trainer.model.path", "/b"],
     "trainer.model.path = /b conflicts with model.path = /a: under rl it is one value for every process, "
     "set model.path instead"),
    (["--max-steps", "20", "--orchestrator.max-steps", "5"],
     "orchestrator.max_steps = 5 conflicts with max_steps = 20"),
    (["--output-dir", "/tmp/run-a", "--inference.output-dir", "/tmp/run-b"],
     "inference.output_dir = /tmp/run-b conflicts with output_dir = /tmp/run-a"),
    (["--trainer.seed", "4"], "trainer.seed = 4 conflicts with seed = 0"),
    (["--inference.port", "9123", "--orchestrator.inference-url", "http://127.0.0.1:8000"],
     "orchestrator.inference_url = http://127.0.0.1:8000 conflicts with inference.host/port = "
     "http://127.0.0.1:9123"),
    (["--num-train-processes", "2", "--orchestrator.train-world-size", "1"],
     "orchestrator.train_world_size = 1 conflicts with num_train_processes = 2"),
])
def test_a_run_wide_field_set_differently_on_a_process_is_refused_in_one_line(cli_error, args, message):
    err = cli_error(RLConfig, lambda _: pytest.fail("rl must not start"), args)
    assert message in err


def test_a_run_wide_field_equal_to_the_shared_value_is_accepted():
    config = parse_config(RLConfig, ["--model.path", "/m", "--trainer.model.path", "/m", "--trainer.max-steps", "20"])
    assert config.trainer.model.path == "/m" and config.trainer.max_steps == 20


def test_log_set_on_rl_reaches_every_written_process_config(tmp_path):
    config = parse_config(RLConfig, ["--log.level", "debug", "--log.wandb-project", "proj",
                                     "--log.progress-interval-s", "7", "--inference.log.level", "warning"])
    commands(config, tmp_path)
    written = {name: parse_config(cls, ["@", str(tmp_path / f"{name}.toml")]) for name, cls in
               (("inference", InferenceConfig), ("orchestrator", OrchestratorConfig), ("trainer", TrainerConfig))}
    for name, sub in written.items():
        assert sub.log.wandb_project == "proj", name
        assert sub.log.progress_interval_s == 7, name
        assert sub.log.progress is False, name  # rl draws the run's one progress line
    assert written["orchestrator"].log.level == written["trainer"].log.level == "debug"
    assert written["inference"].log.level == "warning"  # set on the process: wins there


def test_log_progress_set_on_a_process_is_kept():
    config = parse_config(RLConfig, ["--trainer.log.progress", "true"])
    assert config.trainer.log.progress and not config.orchestrator.log.progress and config.log.progress
