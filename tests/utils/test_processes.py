"""Children of rl and eval (utils/processes.py): the environment they start with."""

from __future__ import annotations

import sys

from composer_prime.utils.processes import spawn

_PRINT = "import os; print(os.environ.get('OMP_WAIT_POLICY'), os.environ.get('PYTHONUNBUFFERED'))"


def _child_sees(tmp_path, **env) -> str:
    child = spawn("probe", [sys.executable, "-c", _PRINT], tmp_path, env=env or None)
    assert child.process.wait(timeout=60) == 0
    return child.log_tail()


def test_waiting_openmp_threads_sleep_in_a_child(tmp_path, monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    assert _child_sees(tmp_path) == "PASSIVE 1"


def test_the_users_wait_policy_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert _child_sees(tmp_path) == "ACTIVE 1"
    monkeypatch.delenv("OMP_WAIT_POLICY")
    assert _child_sees(tmp_path / "placed", OMP_WAIT_POLICY="ACTIVE") == "ACTIVE 1"
