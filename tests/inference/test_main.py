"""The `inference` console script as a real process: startup errors, readiness, metrics, signals."""

from __future__ import annotations

import json
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import torch
from transformers import AutoModelForCausalLM

from composer_prime.utils.metrics import read_metrics
from composer_prime.utils.net import free_port
from composer_prime.weights import publish_weights

INFERENCE = str(Path(sys.executable).with_name("inference"))  # what `uv run inference` runs

pytestmark = pytest.mark.slow




def assert_one_line_error(result: subprocess.CompletedProcess, *needles: str) -> None:
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    for needle in needles:
        assert needle in lines[0], lines[0]


# 400 s to start: under two pytest-xdist workers beside a training run (load 4-8) a start took over 120 s
def run_to_end(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([INFERENCE, *args], capture_output=True, text=True, timeout=400)


def test_port_in_use_is_one_line_naming_the_port(tiny_model_dir):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = run_to_end("--model.path", str(tiny_model_dir), "--port", str(port))
    assert_one_line_error(result, str(port), "in use")


def test_missing_model_dir_is_one_line(tmp_path):
    missing = tmp_path / "no-such-model"
    result = run_to_end("--model.path", str(missing), "--port", str(free_port()))
    assert_one_line_error(result, str(missing))


def test_tokenizer_without_chat_template_is_one_line(tiny_model_dir, tmp_path):
    model = tmp_path / "no-template"
    shutil.copytree(tiny_model_dir, model)
    config = json.loads((model / "tokenizer_config.json").read_text())
    del config["chat_template"]
    (model / "tokenizer_config.json").write_text(json.dumps(config))
    result = run_to_end("--model.path", str(model), "--port", str(free_port()))
    assert_one_line_error(result, "chat template")


def test_bad_config_value_is_one_line(tiny_model_dir):
    result = run_to_end("--model.path", str(tiny_model_dir), "--backend.max-batch-size", "0")
    assert_one_line_error(result, "max-batch-size")


class Server:
    """A server process; `stop` and teardown never leave it running."""

    def __init__(self, argv: list[str], stderr_path: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._stderr = open(stderr_path, "w")
        self.process = subprocess.Popen([*argv, "--port", str(self.port)], stdout=subprocess.PIPE,
                                        stderr=self._stderr, text=True)
        self.stdout: list[str] = []

    def wait_ready(self, timeout: float = 400) -> str:
        selector = selectors.DefaultSelector()
        selector.register(self.process.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.process.poll() is None:
            if selector.select(timeout=0.5):
                line = self.process.stdout.readline()
                self.stdout.append(line)
                if line.startswith("inference ready"):
                    return line.strip()
        raise AssertionError(f"not ready; exit {self.process.poll()}; stdout {self.stdout}")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(30)
        self._stderr.close()


@pytest.fixture
def start_server(tmp_path) -> Iterator:
    servers: list[Server] = []

    def start(*argv: str) -> Server:
        servers.append(Server(list(argv), tmp_path / f"stderr-{len(servers)}.log"))
        return servers[-1]

    try:
        yield start
    finally:
        for server in servers:
            server.close()


def test_serves_logs_metrics_at_weight_updates_and_stops_on_sigterm(start_server, tiny_model_dir, tmp_path):
    out = tmp_path / "run"
    server = start_server(INFERENCE, "--model.path", str(tiny_model_dir), "--output-dir", str(out))
    assert server.wait_ready() == f"inference ready on {server.url}"
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    state = {k: v.clone() + 0.01 * torch.ones_like(v) for k, v in model.state_dict().items()}
    path = publish_weights(out, 1, state, model.config.to_json_string())
    with httpx.Client(base_url=server.url, timeout=60) as http:
        reply = http.post("/generate", json={"prompt_token_ids": [5, 6, 7], "n": 2, "max_tokens": 4})
        generated = sum(len(c["token_ids"]) for c in reply.json()["completions"])
        assert http.post("/update_weights", json={"path": str(path), "version": 1}).status_code == 200
    (record,) = read_metrics(out, "inference")
    assert record["step"] == 1 and record["weight_version"] == 1
    assert record["completion_tokens"] == generated and record["prompt_tokens"] == 3
    assert record["completion_tokens_per_s"] > 0
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(30) == 0


def test_python_module_entry_point_outlasts_a_clients_idle_connection_and_stops_on_sigint(start_server,
                                                                                         tiny_model_dir):
    """A connection idle past httpx's 5 s pool expiry still answers: with uvicorn's 5 s default the server closed
    it as a pooled request went out, and the orchestrator took the ReadError for a lost server."""
    server = start_server(sys.executable, "-m", "composer_prime.inference.main", "--model.path", str(tiny_model_dir))
    server.wait_ready()
    request = f"GET /health HTTP/1.1\r\nHost: {server.url.removeprefix('http://')}\r\n\r\n".encode()
    with socket.create_connection(("127.0.0.1", int(server.url.rsplit(":", 1)[1])), timeout=30) as conn:
        for idle_s in (0, 7):
            time.sleep(idle_s)
            conn.sendall(request)
            head = conn.recv(65536)
            assert head.startswith(b"HTTP/1.1 200"), head
            assert b'"weight_version":0' in head or b'"weight_version":0' in conn.recv(65536)
    server.process.send_signal(signal.SIGINT)
    assert server.process.wait(30) == 0
