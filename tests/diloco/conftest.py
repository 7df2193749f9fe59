"""Helpers to run toy DiLoCo sites as real processes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import tomli_w

from composer_prime.utils.processes import Child, spawn


@pytest.fixture
def run_site(tmp_path):
    """`run_site(name, config, env=None) -> Child`: `python -m composer_prime.diloco.toy @ <name>.toml`, stopped by the
    test; `env` adds to its environment (a store role's credentials)."""

    def start(name: str, config: dict, env: dict[str, str] | None = None) -> Child:
        path = tmp_path / f"{name}.toml"
        path.write_text(tomli_w.dumps(config))
        return spawn(name, [sys.executable, "-m", "composer_prime.diloco.toy", "@", str(path)], tmp_path / "logs",
                     env={"GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1", **(env or {})})

    return start


def result(out: Path) -> dict:
    return json.loads((out / "result.json").read_text())
