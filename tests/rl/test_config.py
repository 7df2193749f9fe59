from pathlib import Path

from composer_prime.cli import parse_config
from composer_prime.config import write_config
from composer_prime.rl.config import RLConfig

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
