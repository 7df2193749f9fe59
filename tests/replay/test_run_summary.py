"""The run summary against real endpoints: calls counted by outcome (answered, cached, failed, refused by
the budget), spend only where a call could be billed, and a run whose every teacher failed (ports on
127.0.0.1 that refuse connections) exits non-zero with one line saying so."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from contextlib import contextmanager

import pytest
from servers import fault_server
from test_teachers import config, wrong_student_trace

from composer_prime.replay.main import run


@contextmanager
def closed_port():
    """A port bound and never listened on: connecting is refused, and no other process can take it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def test_every_teacher_failing_exits_nonzero_with_one_line(tmp_path):
    trace = wrong_student_trace(tmp_path, 3)
    with closed_port() as a, closed_port() as b:
        teachers = "".join(f'''
[[teachers]]
name = "{name}"
model = "m"
base_url = "http://127.0.0.1:{port}/v1"
input_price = 10.0
output_price = 20.0
''' for name, port in (("a", a), ("b", b)))
        (tmp_path / "replay.toml").write_text(f'''
output_dir = "{tmp_path / 'out'}"
budget_usd = 1.0
progress = false
retry = {{ max_attempts = 2, backoff_s = 0.01 }}
[[sources]]
path = "{trace}"
format = "composer-prime"
{teachers}''')
        done = subprocess.run([sys.executable, "-m", "composer_prime.replay.main", "@", str(tmp_path / "replay.toml")],
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: every teacher call failed (6 calls, 2 of 2 teachers, none answered); a: gave up "
                           "after 2 attempts: connect: ConnectError")
    assert f"127.0.0.1:{a}" in line
    assert "0 replayed, 3 unanswered (every teacher failed), 0 incomplete" in done.stdout
    assert "teacher calls: 0 answered, 0 cached, 6 failed, 0 refused by the budget" in done.stdout
    assert ("spent $0.000000 of $1.0000: $0.000000 on answered calls, $0.000000 on calls that may have been billed"
            in done.stdout)  # nothing connected, nothing could be billed
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert stats["calls"] == {"answered": 0, "cached": 0, "failed": 6, "refused": 0} and stats["spent_usd"] == 0
    a_stats = stats["teachers"]["a"]
    assert a_stats["attempts"] == 6 and a_stats["retries"] == {"connect": 6}  # 3 steps x 2 attempts, all refused


def test_outcomes_and_spend_with_one_teacher_down(tmp_path):
    trace = wrong_student_trace(tmp_path, 3)
    server = fault_server([])
    try:
        with closed_port() as port:
            def replay():
                cfg = config(trace, server.url, tmp_path / "out", budget_usd=1.0, retry={"max_attempts": 2,
                                                                                         "backoff_s": 0.01})
                down = cfg.teachers[0].model_copy(update={"name": "down", "base_url": f"http://127.0.0.1:{port}/v1"})
                return asyncio.run(run(cfg.model_copy(update={"teachers": [*cfg.teachers, down]})))

            first, second = replay(), replay()
    finally:
        server.stop()
    assert (first.answered, first.cached, first.failed, first.refused) == (3, 0, 3, 0)
    assert first.spent_usd == pytest.approx(first.teachers["flaky"]["cost_usd"]) and first.spent_usd > 0
    assert first.teachers["down"]["cost_usd"] == first.teachers["down"]["unknown_cost_usd"] == 0
    assert first.failure() is None and first.pairs_written == 3
    assert (first.steps_replayed, first.steps_unanswered) == (3, 0)  # one answer is enough to replay a step
    assert "teacher calls: 3 answered, 0 cached, 3 failed, 0 refused by the budget" in first.summary()
    # The rerun pays nothing for what is cached; the teacher that is down fails again and costs nothing.
    assert (second.answered, second.cached, second.failed, second.refused) == (0, 3, 3, 0)
    assert second.spent_usd == 0 and second.failure() is None


def test_calls_refused_by_the_budget_are_counted_apart(tmp_path):
    trace = wrong_student_trace(tmp_path, 3)
    server = fault_server([])
    try:
        stats = asyncio.run(run(config(trace, server.url, tmp_path / "out", budget_usd=1e-9)))
        sent = server.app.total
    finally:
        server.stop()
    assert sent == 0 and stats.budget_exhausted
    assert stats.answered == stats.failed == stats.cached == 0 and stats.refused >= 1
    assert stats.spent_usd == 0 and stats.failure() is None  # refused is not failed: the cap did its job
    assert f"0 failed, {stats.refused} refused by the budget" in stats.summary()
