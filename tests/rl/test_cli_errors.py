"""Bad input to `rl`: one line naming the problem, a non-zero exit, and no process left behind."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WARMSTART = REPO / "configs" / "quickstart" / "warmstart"
QUICKSTART = REPO / "configs" / "quickstart" / "rl.toml"


def run_rl(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    # 400 s: a run that starts its inference server took 5 min on 2 cores at load 13 (seconds when quiet)
    return subprocess.run([sys.executable, "-m", "composer_prime.rl.main", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=400)


def processes_mentioning(marker: str) -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append(cmdline)
    return found


def assert_one_line_error(result: subprocess.CompletedProcess, *needles: str) -> str:
    assert result.returncode != 0, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line, got:\n{result.stderr}"
    assert lines[0].startswith("error: ")
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def out(tmp_path):
    yield tmp_path / "run"
    assert not processes_mentioning(str(tmp_path)), "a process outlived the failed run"


def test_malformed_toml(tmp_path, out):
    bad = tmp_path / "bad.toml"
    bad.write_text("[trainer\nmax_steps = 3\n")
    assert_one_line_error(run_rl("@", str(bad), "--output-dir", str(out)), "Invalid TOML", str(bad))


def test_unknown_key(out):
    assert_one_line_error(run_rl("@", str(QUICKSTART), "--trainer.optim.learning-rate", "1",
                                 "--output-dir", str(out)), "learning")


def test_bad_value(out):
    assert_one_line_error(run_rl("@", str(QUICKSTART), "--trainer.optim.lr", "fast", "--output-dir", str(out)),
                          "lr")


def test_missing_model_dir(tmp_path, out):
    missing = tmp_path / "no-such-model"
    assert_one_line_error(run_rl("@", str(QUICKSTART), "--model.path", str(missing), "--output-dir", str(out)),
                          "model directory not found", str(missing))


def test_tokenizer_without_chat_template(tmp_path, out):
    model = tmp_path / "no-template"
    shutil.copytree(WARMSTART, model)
    (model / "chat_template.jinja").unlink(missing_ok=True)
    config_path = model / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config.pop("chat_template", None)
    config_path.write_text(json.dumps(config))
    assert_one_line_error(run_rl("@", str(QUICKSTART), "--model.path", str(model), "--output-dir", str(out)),
                          "chat template")


def test_unknown_environment(out):
    assert_one_line_error(run_rl("@", str(QUICKSTART), "--orchestrator.env.id", "no-such-env",
                                 "--output-dir", str(out)), "no-such-env")


def test_port_in_use(out):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert_one_line_error(run_rl("@", str(QUICKSTART), "--inference.port", str(port), "--output-dir", str(out)),
                              f"port {port}")


def test_inference_that_cannot_start_stops_the_run_before_the_trainer_starts(out):
    """Inference starts alone and must answer before the others start (on a shared GPU vLLM measures its memory
    before the trainer holds any): here vLLM is not installed, and no trainer or orchestrator ever ran."""
    result = run_rl("@", str(REPO / "configs/quickstart/gpu.toml"), "--model.dtype", "float32",
                    "--output-dir", str(out))
    assert_one_line_error(result, "inference exited with code 2", "vllm backend needs vLLM")
    assert (out / "logs/inference.log").is_file()
    assert not (out / "logs/trainer.log").exists() and not (out / "logs/orchestrator.log").exists()


def test_missing_inference_python(tmp_path, out):
    missing = tmp_path / "no-venv/bin/python"
    assert_one_line_error(run_rl("@", str(QUICKSTART), "--inference-python", str(missing), "--output-dir", str(out)),
                          "inference_python not found", str(missing))



@pytest.mark.parametrize(("served", "version", "needle"), [
    ("other-model", 0, "serves other-model, not model.path"),
    (str(WARMSTART), 3, "serves weight version 3"),  # another run's weights: every rollout off-policy
    (None, 0, "no inference server answers"),
    (str(WARMSTART), 0, None),  # the run's model at its base weights: used
])
def test_a_running_inference_server_must_serve_the_runs_base_weights(served, version, needle):
    """start_inference = false uses a server already up (vLLM's engine is slow to start): rl's preflight refuses
    one that is not there, serves another model or holds weights no step of this run made."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from composer_prime.errors import UserError
    from composer_prime.rl.config import RLConfig
    from composer_prime.rl.main import check_running_inference

    health = json.dumps({"weight_version": version, "backend": "vllm", "model": served}).encode()

    class Health(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(health)

        def log_message(self, *args):
            pass

    with ThreadingHTTPServer(("127.0.0.1", 0), Health) as server:
        port = server.server_address[1]
        if served is not None:
            threading.Thread(target=server.serve_forever, daemon=True).start()
        else:
            server.server_close()  # nothing listens on the port
        config = RLConfig(start_inference=False, model={"path": str(WARMSTART)},
                          inference={"port": port})
        try:
            if needle is None:
                check_running_inference(config)
            else:
                with pytest.raises(UserError, match=needle):
                    check_running_inference(config)
        finally:
            if served is not None:
                server.shutdown()
