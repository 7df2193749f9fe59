"""Replay end to end with real local teachers (our inference server over different tiny models)."""

from __future__ import annotations

import asyncio
import json

import pytest
import torch
from servers import WARMSTART, student_trace, teacher
from transformers import AutoModelForCausalLM, AutoTokenizer

from composer_prime.configs.replay import ReplayConfig
from composer_prime.pairs import read_pairs
from composer_prime.replay.main import run


def replay(trace, out, teachers, **fields):
    config = ReplayConfig(sources=[{"path": str(trace), "format": "composer-prime"}], teachers=teachers,
                          output_dir=str(out), progress=False, **fields)
    return asyncio.run(run(config))


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    """One answer cache for the tests that do not count calls from scratch (greedy answers are reproducible)."""
    return str(tmp_path_factory.mktemp("cache") / "cache.sqlite")


@pytest.fixture(scope="module")
def three(teacher_servers):
    return [teacher(n, teacher_servers[n].url) for n in ("alpha", "beta", "gamma")]


def _reset(servers):
    for server in servers.values():
        server.app.counts.clear()


def test_fifty_steps_three_teachers(teacher_servers, sampled_trace, three, tmp_path):
    _reset(teacher_servers)
    stats = replay(sampled_trace, tmp_path / "out", three)
    counts = {n: teacher_servers[n].app.counts for n in ("alpha", "beta", "gamma")}
    assert stats.steps_ingested == 50
    # at most one call per (teacher, step): <= 150 in all
    assert all(len(c) == 50 and max(c.values()) == 1 for c in counts.values())
    assert sum(c.total() for c in counts.values()) == stats.calls == 150
    pairs = read_pairs(tmp_path / "out" / "pairs.jsonl")
    assert 0 < len(pairs) == stats.pairs_written
    for pair in pairs:
        p = pair.provenance
        assert p.format == "composer-prime" and p.n == 3 and p.k == 2 and len(p.teachers) == 3
        consensus = [a for a in p.teachers if a.agrees]
        assert len(consensus) >= 2 and len({a.canonical for a in consensus}) == 1
        assert consensus[0].action == pair.chosen and pair.chosen.content != pair.rejected.content
        assert all(a.input_tokens > 0 and a.output_tokens > 0 and a.latency_s > 0 for a in p.teachers)
    # the same command again pays for nothing and writes the same pairs
    first = (tmp_path / "out" / "pairs.jsonl").read_text()
    stats2 = replay(sampled_trace, tmp_path / "out", three)
    assert stats2.calls == 0 and stats2.cached == 150
    assert all(max(c.values()) == 1 for c in counts.values())
    assert (tmp_path / "out" / "pairs.jsonl").read_text() == first
    stats_file = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert stats_file["pairs_written"] == len(pairs) and stats_file["cached_answers"] == 150


def test_pairs_feed_the_preference_channel_and_datasets(teacher_servers, sampled_trace, three, tmp_path, shared_cache):
    from composer_prime.configs.trainer import PreferenceLossConfig
    from composer_prime.trainer.preference import PreferenceChannel

    replay(sampled_trace, tmp_path / "out", three, cache_path=shared_cache)
    path = tmp_path / "out" / "pairs.jsonl"
    channel = PreferenceChannel(PreferenceLossConfig(pairs=path, weight=1.0, eval_fraction=0.0),
                                AutoTokenizer.from_pretrained(WARMSTART), tmp_path / "run", seed=0)
    assert len(channel.train) == len(read_pairs(path))
    model = AutoModelForCausalLM.from_pretrained(WARMSTART, dtype=torch.float32)
    channel.prepare_reference(model, torch.device("cpu"), write=False)
    assert set(channel.reference) == {p.id for p in channel.train}
    datasets = pytest.importorskip("datasets")
    rows = datasets.load_dataset("json", data_files=str(path), split="train")
    assert len(rows) == len(channel.train) and rows[0]["provenance"]["teachers"][0]["teacher"] == "alpha"


def test_streamed_teachers_write_the_same_pairs(teacher_servers, sampled_trace, three, tmp_path, shared_cache):
    plain = replay(sampled_trace, tmp_path / "plain", three, cache_path=shared_cache)
    streamed = replay(sampled_trace, tmp_path / "streamed", [{**t, "stream": True} for t in three],
                      cache_path=str(tmp_path / "fresh.sqlite"))
    assert streamed.calls == 150 and streamed.pairs_written == plain.pairs_written > 0

    def answers(name):
        return [[(a.teacher, a.canonical, a.input_tokens, a.output_tokens) for a in p.provenance.teachers]
                for p in read_pairs(tmp_path / name / "pairs.jsonl")]

    assert answers("streamed") == answers("plain")  # same actions, and usage read from the stream's last chunk


def test_k_of_n_with_a_dissenting_teacher(teacher_servers, sampled_trace, tmp_path, shared_cache):
    pool = [teacher(n, teacher_servers[n].url) for n in ("alpha", "beta", "noisy")]
    two = replay(sampled_trace, tmp_path / "k2", pool, agreement={"k": 2}, cache_path=shared_cache)
    three = replay(sampled_trace, tmp_path / "k3", pool, agreement={"k": 3}, cache_path=shared_cache)
    pairs2 = read_pairs(tmp_path / "k2" / "pairs.jsonl")
    assert three.calls == 0  # same states, same teachers: all from the cache
    assert len(pairs2) == two.pairs_written > three.pairs_written
    noisy_in_consensus = sum(a.agrees for p in pairs2 for a in p.provenance.teachers if a.teacher == "noisy")
    assert noisy_in_consensus < len(pairs2) / 2  # the perturbed model rarely agrees with the others


def test_tiers_escalate_only_on_disagreement(teacher_servers, tmp_path):
    # a student that answers exactly as alpha does (greedy warm start): the cheap tier always agrees with it
    greedy = student_trace(teacher_servers["alpha"].url, tmp_path / "greedy", n=20, seed=3, temperature=0.0)
    sampled = student_trace(teacher_servers["alpha"].url, tmp_path / "sampled", n=20, seed=3, temperature=1.0)
    pool = [teacher("alpha", teacher_servers["alpha"].url, tier=0, input_price=0.1, output_price=0.1),
            teacher("beta", teacher_servers["beta"].url, tier=1, input_price=5.0, output_price=15.0),
            teacher("gamma", teacher_servers["gamma"].url, tier=1, input_price=5.0, output_price=15.0)]
    _reset(teacher_servers)
    calm = replay(greedy, tmp_path / "calm", pool)
    assert teacher_servers["alpha"].app.counts.total() == 20
    assert teacher_servers["beta"].app.counts.total() == 0 and calm.pairs_written == 0
    busy = replay(sampled, tmp_path / "busy", pool)
    pairs = read_pairs(tmp_path / "busy" / "pairs.jsonl")
    escalated = teacher_servers["beta"].app.counts.total()
    assert 0 < escalated <= 20 and teacher_servers["gamma"].app.counts.total() == escalated
    assert busy.calls == 20 + 2 * escalated and len(pairs) == busy.pairs_written > 0
    assert all(p.provenance.n == 3 for p in pairs)


def test_voi_gating_asks_only_uncertain_steps(teacher_servers, sampled_trace, three, tmp_path, shared_cache):
    ungated = replay(sampled_trace, tmp_path / "all", three, cache_path=shared_cache)
    _reset(teacher_servers)
    gated = replay(sampled_trace, tmp_path / "voi", three, cache_path=shared_cache,
                   voi={"enabled": True, "student_url": teacher_servers["alpha"].url})
    calls = sum(teacher_servers[n].app.counts.total() for n in ("alpha", "beta", "gamma"))
    assert gated.steps_gated_out == 30 and gated.steps_replayed == 20  # default top_fraction 0.4
    assert calls == 0  # every answer it needed was cached by the ungated run
    assert gated.cached == 60 and ungated.calls + ungated.cached == 150
    all_pairs = {p.id: p for p in read_pairs(tmp_path / "all" / "pairs.jsonl")}
    voi_pairs = read_pairs(tmp_path / "voi" / "pairs.jsonl")
    assert {p.id for p in voi_pairs} <= set(all_pairs)
    assert all(p.provenance.student_entropy >= gated.voi["replayed_min_entropy"] for p in voi_pairs)


@pytest.mark.slow
def test_killed_mid_run_resumes_without_paying_twice(teacher_servers, sampled_trace, three, tmp_path):
    import sqlite3
    import subprocess
    import sys
    import time

    import tomli_w

    out = tmp_path / "out"
    pool = [{**t, "concurrency": 2} for t in three]
    config = {"sources": [{"path": str(sampled_trace), "format": "composer-prime"}], "teachers": pool,
              "output_dir": str(out), "progress": False, "max_concurrent_steps": 2}
    path = tmp_path / "replay.toml"
    path.write_text(tomli_w.dumps(config))
    command = [sys.executable, "-m", "composer_prime.replay.main", "@", str(path)]
    _reset(teacher_servers)
    apps = [teacher_servers[n].app for n in ("alpha", "beta", "gamma")]
    for app in apps:
        app.delay_s = 0.15  # slow teachers, so that the kill lands mid-run
    try:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while sum(a.counts.total() for a in apps) < 45 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        process.kill()  # SIGKILL: no cleanup of any kind
        process.wait()
        assert process.returncode == -9
        with sqlite3.connect(out / "cache.sqlite") as db:
            cached_at_kill = db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
        # A request the killed process sent just before dying may reach a server's counter a moment later
        # (the servers run in their own threads): count the first run's calls once the counts stop moving.
        first_calls, settle_deadline = -1, time.monotonic() + 5
        while first_calls != sum(a.counts.total() for a in apps) and time.monotonic() < settle_deadline:
            first_calls = sum(a.counts.total() for a in apps)
            time.sleep(0.3)
        assert 0 < cached_at_kill < 150
        before = [a.counts.copy() for a in apps]
        rerun = subprocess.run(command, capture_output=True, text=True, timeout=300)
    finally:
        for app in apps:
            app.delay_s = 0.0
    assert rerun.returncode == 0, rerun.stderr
    second_calls = sum(a.counts.total() for a in apps) - first_calls
    assert second_calls == 150 - cached_at_kill  # nothing already paid for was asked again
    # Each state the rerun asks, it asks once; the states the first run had asked too are only those in
    # flight at the kill (2 per teacher). Counted by state, not by calls: a call the first run retried (a
    # slow answer on a loaded machine) is counted twice by the server and cached once.
    again = [a.counts - b for a, b in zip(apps, before)]
    assert all(set(r.values()) == {1} for r in again)
    assert all(len(set(r) & set(b)) <= 2 for r, b in zip(again, before))
    assert all(len(a.counts) == 50 for a in apps)
    stats = json.loads((out / "stats.json").read_text())
    assert stats["cached_answers"] == cached_at_kill and stats["steps_replayed"] == 50
    print(f"kill/restart: {first_calls} calls before SIGKILL, {cached_at_kill} cached, {second_calls} after restart, "
          f"{sum(len(set(r) & set(b)) for r, b in zip(again, before))} asked again (in flight at the kill)")


@pytest.mark.slow
def test_cli_reports_bad_config_in_one_line(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "bad.toml"
    path.write_text('teachers = []\n[[sources]]\npath = "x.jsonl"\nformat = "har"\n')
    result = subprocess.run([sys.executable, "-m", "composer_prime.replay.main", "@", str(path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: config:") and "Traceback" not in result.stderr
