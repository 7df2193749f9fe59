"""kill -9 a process mid-run, rerun the same command: the run resumes and completes, with no
optimizer step or batch lost or repeated and no incomplete weight version ever visible."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from composer_prime.utils.net import free_port
from composer_prime.weights import STABLE, broadcast_root

REPO = Path(__file__).resolve().parents[2]
MAX_STEPS = 7  # the trainer is killed after step 2, the orchestrator after step 4: steps are left to both reruns


def rl_command(out: Path, port: int) -> list[str]:
    return [sys.executable, "-m", "composer_prime.rl.main", "@", str(REPO / "configs/quickstart/rl.toml"),
            "--output-dir", str(out), "--max-steps", str(MAX_STEPS), "--inference.port", str(port),
            "--orchestrator.batch-size", "16", "--orchestrator.group-size", "4",
            "--orchestrator.eval.num-examples", "8", "--trainer.ckpt.interval", "1", "--no-plot", "--no-log.progress"]


def metrics(out: Path) -> list[dict]:
    path = out / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def steps_of(out: Path, process: str, key: str) -> list[int]:
    return [r["step"] for r in metrics(out) if r["process"] == process and key in r]


def pids_of(module: str, marker: str) -> list[int]:
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if module in cmdline and marker in cmdline:
            pids.append(int(pid))
    return pids


def killed(command: list[str], out: Path, victim: str, trained: int) -> None:
    """Start the run, kill -9 its `victim` once the trainer has logged `trained` steps in all: the run fails, naming
    the victim, and leaves no process behind."""
    run = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while len(steps_of(out, "trainer", "loss")) < trained:
            assert run.poll() is None, run.communicate()
            assert time.monotonic() < deadline, "run made no progress"
            time.sleep(0.2)
        victims = pids_of(f"composer_prime.{victim}.main", str(out))
        assert victims, f"no {victim} process found"
        for pid in victims:
            os.kill(pid, signal.SIGKILL)
        _, stderr = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode != 0
    assert victim in stderr
    assert not pids_of("composer_prime.", str(out)), "processes outlived the failed run"


@pytest.mark.slow
def test_kill9_then_rerun_resumes_without_loss_or_repeat(tmp_path):
    """The trainer killed, the command run again; then the orchestrator killed, the command run again (one run
    directory: each rerun resumes from what the previous attempts left)."""
    out = tmp_path / "run"
    command = rl_command(out, free_port())
    killed(command, out, "trainer", 2)
    killed(command, out, "orchestrator", 4)

    last = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert last.returncode == 0, last.stderr[-3000:]
    assert not pids_of("composer_prime.", str(out))

    expected = list(range(1, MAX_STEPS + 1))
    trained = Counter(steps_of(out, "trainer", "loss"))
    produced = Counter(steps_of(out, "orchestrator", "reward/mean"))
    assert sorted(trained) == expected and set(trained.values()) == {1}, trained
    assert sorted(produced) == expected and set(produced.values()) == {1}, produced
    for version_dir in broadcast_root(out).iterdir():
        assert version_dir.name.startswith("step_") and (version_dir / STABLE).is_file(), version_dir
    assert any(r.get("eval/delta") is not None for r in metrics(out) if r["process"] == "orchestrator")
