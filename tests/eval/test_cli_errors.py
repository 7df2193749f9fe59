import pytest

from composer_prime.cli import run_cli
from composer_prime.eval.config import EvalCommandConfig
from composer_prime.eval.main import main


def _error_line(capsys, args) -> str:
    with pytest.raises(SystemExit) as exit_:
        run_cli(EvalCommandConfig, main, args=args)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err, err
    return err


def test_k_larger_than_the_samples_is_one_line(capsys):
    assert "must be >= k" in _error_line(capsys, ["--k", "4", "--samples-per-prompt", "2"])


def test_missing_model_directory_is_one_line_and_starts_no_server(capsys, tmp_path):
    err = _error_line(capsys, ["--model.path", str(tmp_path / "nope"), "--output-dir", str(tmp_path / "out")])
    assert "model directory not found" in err
    assert not (tmp_path / "out" / "logs").exists(), "a server was started for a model that does not exist"


def test_unknown_environment_is_one_line(capsys, tiny_model):
    err = _error_line(capsys, ["--model.path", str(tiny_model), "--env.id", "no-such-env"])
    assert "no-such-env" in err
