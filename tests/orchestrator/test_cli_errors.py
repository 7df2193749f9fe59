import pytest

from composer_prime.cli import run_cli
from composer_prime.orchestrator.config import OrchestratorConfig
from composer_prime.orchestrator.main import main
from composer_prime.utils.net import free_port


def _error_line(capsys, args) -> str:
    with pytest.raises(SystemExit) as exit_:
        run_cli(OrchestratorConfig, main, args=args)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err, err
    return err


def test_batch_size_not_a_multiple_of_group_size_is_one_line(capsys):
    assert "multiple of group_size" in _error_line(capsys, ["--batch-size", "10", "--group-size", "4"])


def test_missing_model_directory_is_one_line(capsys, tmp_path):
    err = _error_line(capsys, ["--model.path", str(tmp_path / "nope"), "--output-dir", str(tmp_path / "run")])
    assert "model directory not found" in err


def test_unreachable_inference_server_is_one_line(capsys, tmp_path, tiny_model):
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    err = _error_line(capsys, ["--model.path", str(tiny_model), "--output-dir", str(tmp_path / "run"),
                               "--inference-url", url, "--inference-timeout-s", "1", "--no-log.progress"])
    assert url in err and "did not become ready" in err
