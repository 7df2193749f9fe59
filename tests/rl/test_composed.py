"""All three loss channels in one real RL run (inference + orchestrator + trainer processes): each one is
live on every step where it has inputs, and a channel that silently turns off fails this test."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from composer_prime.pairs import read_pairs
from composer_prime.traces import read_traces, traces_path
from composer_prime.utils.net import free_port

REPO = Path(__file__).resolve().parents[2]
STEPS = 4


@pytest.mark.slow
def test_every_channel_is_live_in_a_real_run(tmp_path):
    """The committed config as a fresh clone runs it (its warm start and mined pairs), only smaller."""
    out = tmp_path / "run"
    command = [
        sys.executable, "-m", "composer_prime.rl.main", "@", str(REPO / "configs/composed/rl.toml"),
        "--output-dir", str(out), "--max-steps", str(STEPS), "--inference.port", str(free_port()),
        "--orchestrator.batch-size", "16", "--orchestrator.group-size", "4", "--orchestrator.eval.num-examples", "8",
        "--orchestrator.hints.max-sites-per-step", "6",
        "--trainer.loss.preference.pairs-per-step", "4", "--trainer.loss.preference.eval-interval", "2",
        "--trainer.loss.hint.weight", "0.5", "--trainer.loss.preference.weight", "0.5",
        "--no-plot", "--no-log.progress",
    ]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    orchestrator = {r["step"]: r for r in records if r["process"] == "orchestrator" and "reward/mean" in r}
    trainer = {r["step"]: r for r in records if r["process"] == "trainer" and "loss" in r}
    assert sorted(trainer) == sorted(orchestrator) == list(range(1, STEPS + 1))

    for step in range(1, STEPS + 1):
        sites = orchestrator[step]["hints/sites"]
        traces = read_traces(traces_path(out, step))
        assert len(traces) == 16
        with_errors = sum(bool(t.errors) for t in traces)
        assert sites == min(6, with_errors)
        assert trainer[step]["loss/pg"] != 0.0
        assert trainer[step]["loss/preference"] > 0.0
        if sites:
            assert trainer[step]["loss/hint"] > 0.0 and trainer[step]["hint/kl"] > 0.0
            assert trainer[step]["hint/sites"] == sites
        else:
            assert "loss/hint" not in trainer[step]
        composed = trainer[step]["loss/pg"] + 0.5 * trainer[step].get("loss/hint", 0.0) \
            + 0.5 * trainer[step]["loss/preference"]
        assert trainer[step]["loss"] == pytest.approx(composed, rel=1e-6)
    assert sum(r["hints/sites"] for r in orchestrator.values()) > 0  # the warm start errs: sites must exist

    evals = [r["step"] for r in records if "preference/eval_accuracy" in r]
    assert evals == [0, 2, 4]
    wrong = [e for t in read_traces(traces_path(out, 1)) for e in t.errors if e.kind == "wrong_answer"]
    assert wrong and all(e.message.startswith("expected '") for e in wrong)  # the env's feedback reached the sites


def test_the_committed_pairs_were_mined_by_replay_against_the_warm_start():
    """pairs/ holds what a real `uv run replay` wrote: k of n teachers agreeing against the student's answer."""
    pairs = read_pairs(REPO / "configs/composed/pairs/pairs.jsonl")
    stats = json.loads((REPO / "configs/composed/pairs/stats.json").read_text())
    assert len(pairs) == stats["pairs_written"] > 100
    for pair in pairs:
        agreeing = [t for t in pair.provenance.teachers if t.agrees]
        assert len(agreeing) >= pair.provenance.k == 2 and pair.provenance.n == 3
        assert all(t.action.content == pair.chosen.content for t in agreeing)
        assert pair.chosen.content != pair.rejected.content
