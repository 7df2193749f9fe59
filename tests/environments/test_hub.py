"""Both environment packages are ready for the verifiers Environments Hub: the metadata `prime env push` sends
(description, tags, license, a verifiers range whose floor marks a v1 package), a README with a baseline
table, and `prime env push` itself getting through every local check (pyproject, package, wheel build) and
stopping only where it needs an account and the network."""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ENVIRONMENTS = Path(__file__).parents[2] / "environments"
PACKAGES = ["feature_deletion", "reverse_text"]


@pytest.mark.parametrize("package", PACKAGES)
def test_hub_metadata_and_readme(package):
    project = tomllib.loads((ENVIRONMENTS / package / "pyproject.toml").read_text())["project"]
    assert project["description"] and project["license"] == "Apache-2.0" and len(project["tags"]) >= 3
    (verifiers,) = [Requirement(d) for d in project["dependencies"] if Requirement(d).name == "verifiers"]
    floors = [Version(s.version) for s in verifiers.specifier if s.operator == ">="]
    ceilings = [s for s in verifiers.specifier if s.operator == "<"]
    # The Hub labels a package v1 when its verifiers floor is 0.2.0 or newer; a range, not an exact pin.
    assert floors and min(floors) >= Version("0.2.0") and ceilings and "==" not in str(verifiers.specifier)
    readme = (ENVIRONMENTS / package / "README.md").read_text()
    assert "## Baselines" in readme and "| scripted gold |" in readme and "prime env push" in readme


def _prime_cli() -> str | None:
    return os.environ.get("PRIME_CLI") or shutil.which("prime")


@pytest.mark.slow
@pytest.mark.skipif(_prime_cli() is None, reason=(
    "the `prime` CLI (PyPI `prime`) is not installed: `uv venv /tmp/prime && "
    "uv pip install --python /tmp/prime/bin/python prime`, then PRIME_CLI=/tmp/prime/bin/prime"))
@pytest.mark.parametrize("package", PACKAGES)
def test_prime_env_push_passes_its_local_checks_and_stops_at_login(package, tmp_path):
    copy = shutil.copytree(ENVIRONMENTS / package, tmp_path / package,
                           ignore=shutil.ignore_patterns("dist", "__pycache__"))
    # A fresh HOME: no saved login, so the CLI stops before its first request; uv builds from its cache, offline.
    (tmp_path / "home").mkdir()
    cache = subprocess.run(["uv", "cache", "dir"], capture_output=True, text=True, check=True).stdout.strip()
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "home"), "UV_CACHE_DIR": cache, "UV_OFFLINE": "1"}
    done = subprocess.run([_prime_cli(), "env", "push", "--plain"], cwd=copy, env=env, capture_output=True, text=True,
                          timeout=600)
    out = done.stdout + done.stderr
    assert done.returncode == 1
    assert f"Environment name: {package.replace('_', '-')}" in out and "✓ Built" in out, out
    assert "No API key configured. Use command 'prime login'" in out, out
    assert len(list((copy / "dist").glob("*.whl"))) == 1
