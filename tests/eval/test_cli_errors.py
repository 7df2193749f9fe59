from composer_prime.configs.eval import EvalCommandConfig
from composer_prime.eval.main import main


def test_k_larger_than_the_samples_is_one_line(cli_error):
    assert "must be >= k" in cli_error(EvalCommandConfig, main, ["--k", "4", "--samples-per-prompt", "2"])


def test_missing_model_directory_is_one_line_and_starts_no_server(cli_error, tmp_path):
    args = ["--model.path", str(tmp_path / "nope"), "--output-dir", str(tmp_path / "out")]
    err = cli_error(EvalCommandConfig, main, args)
    assert "model directory not found" in err
    assert not (tmp_path / "out" / "logs").exists(), "a server was started for a model that does not exist"


def test_unknown_environment_is_one_line(cli_error, tiny_model):
    err = cli_error(EvalCommandConfig, main, ["--model.path", str(tiny_model), "--env.id", "no-such-env"])
    assert "no-such-env" in err
