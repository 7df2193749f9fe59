"""A private inference server subprocess: started for one command (eval, benchmarks, tests), always stopped."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from composer_prime.configs.inference import InferenceConfig
from composer_prime.configs.shared import write_config
from composer_prime.errors import UserError
from composer_prime.inference.client import InferenceClient
from composer_prime.inference.protocol import HealthResponse
from composer_prime.utils.processes import Child, spawn, stop


@contextmanager
def inference_server(config: InferenceConfig, work_dir: Path) -> Iterator[Child]:
    """Run `python -m composer_prime.inference.main` with `config` (its TOML and log go to `work_dir`)."""
    config_path = write_config(config, Path(work_dir) / "inference.toml")
    child = spawn("inference", [sys.executable, "-m", "composer_prime.inference.main", "@", str(config_path)],
                  Path(work_dir))
    try:
        yield child
    finally:
        stop([child])


async def wait_ready(client: InferenceClient, child: Child, timeout_s: float) -> HealthResponse:
    """Wait for /health, failing at once with the server's own error line if the process exits."""
    deadline = time.monotonic() + timeout_s
    while True:
        if child.poll() is not None:
            raise UserError(f"inference server exited with code {child.poll()}: {child.error_line()} "
                            f"(log: {child.log_path})")
        try:
            return await client.wait_until_ready(timeout_s=1.0, poll_s=0.2)
        except UserError:
            if time.monotonic() > deadline:
                raise
