from composer_prime.configs.orchestrator import OrchestratorConfig
from composer_prime.orchestrator.main import main
from composer_prime.utils.net import free_port


def test_batch_size_not_a_multiple_of_group_size_is_one_line(cli_error):
    assert "multiple of group_size" in cli_error(OrchestratorConfig, main, ["--batch-size", "10", "--group-size", "4"])


def test_greedy_training_is_one_line(cli_error):
    # SamplingConfig allows 0 (greedy held-out eval); training divides logits by the temperature.
    assert "temperature must be > 0" in cli_error(OrchestratorConfig, main, ["--sampling.temperature", "0"])


def test_missing_model_directory_is_one_line(cli_error, tmp_path):
    args = ["--model.path", str(tmp_path / "nope"), "--output-dir", str(tmp_path / "run")]
    err = cli_error(OrchestratorConfig, main, args)
    assert "model directory not found" in err


def test_unreachable_inference_server_is_one_line(cli_error, tmp_path, tiny_model):
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    err = cli_error(OrchestratorConfig, main, ["--model.path", str(tiny_model), "--output-dir", str(tmp_path / "run"),
                               "--inference-url", url, "--inference-timeout-s", "1", "--no-log.progress"])
    assert url in err and "did not become ready" in err
