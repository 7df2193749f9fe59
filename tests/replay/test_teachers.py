"""The teacher pool against a real fault-injecting HTTP teacher: retries, Retry-After, timeouts,
truncated bodies, malformed JSON, non-retryable errors, and the hard budget cap with 16 calls in flight."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from servers import fault_server, reverse_prompts

from composer_prime.configs.replay import ReplayConfig
from composer_prime.pairs import read_pairs
from composer_prime.replay.main import run
from composer_prime.replay.teachers import assemble_stream
from composer_prime.traces import RolloutTrace, write_traces


def wrong_student_trace(root, n: int):
    """n one-step rollouts where the student echoed the prompt instead of reversing it."""
    traces = []
    for i, prompt in enumerate(reverse_prompts(n, seed=7)):
        traces.append(RolloutTrace(
            id=f"step0/{i}/0", env_id="reverse-text", example_id=str(i), step=0, weight_version=0, reward=0.0,
            messages=[{"role": "system", "content": "Reverse the letters."}, {"role": "user", "content": prompt},
                      {"role": "assistant", "content": prompt + " x"}]))
    return write_traces(root, 0, traces)


def config(trace, url, out, **overrides) -> ReplayConfig:
    teacher = {"name": "flaky", "model": "flaky-1", "base_url": url + "/v1", "max_tokens": 16, "concurrency": 4,
               "input_price": 10.0, "output_price": 20.0, **overrides.pop("teacher", {})}
    fields = {"sources": [{"path": str(trace), "format": "composer-prime"}], "teachers": [teacher],
              "output_dir": str(out), "progress": False, "agreement": {"k": 1},
              "retry": {"backoff_s": 0.01, "max_backoff_s": 2.0}, **overrides}
    return ReplayConfig(**fields)


def test_retries_every_fault_then_answers(tmp_path):
    trace = wrong_student_trace(tmp_path, 6)
    server = fault_server(["429", "500", "malformed", "truncated"], retry_after_s=0.3)
    try:
        start = time.monotonic()
        stats = asyncio.run(run(config(trace, server.url, tmp_path / "out")))
        elapsed = time.monotonic() - start
        counts = server.app.counts
    finally:
        server.stop()
    assert len(counts) == 6 and set(counts.values()) == {5}  # 4 faults then the answer, for every state
    flaky = stats.teachers["flaky"]
    assert flaky["answered"] == 6 and flaky["failed"] == 0 and flaky["attempts"] == 30
    assert flaky["retries"] == {"429": 6, "500": 6, "malformed": 6, "transport": 6}
    assert elapsed >= 0.3  # Retry-After was waited out
    pairs = read_pairs(tmp_path / "out" / "pairs.jsonl")
    assert len(pairs) == 6
    for pair in pairs:
        letters = "".join(pair.state[-1].content.split())
        assert pair.chosen.content == " ".join(reversed(letters))
        answer = pair.provenance.teachers[0]
        assert answer.input_tokens > 0 and answer.cost_usd > 0 and answer.latency_s > 0


def test_streamed_answers_retry_every_stream_fault(tmp_path):
    trace = wrong_student_trace(tmp_path, 4)
    server = fault_server(["429", "truncated", "unfinished", "malformed", "error-chunk"], retry_after_s=0.1)
    try:
        stats = asyncio.run(run(config(trace, server.url, tmp_path / "out", teacher={"stream": True})))
        counts = dict(server.app.counts)
    finally:
        server.stop()
    assert len(counts) == 4 and set(counts.values()) == {6}
    flaky = stats.teachers["flaky"]
    assert flaky["answered"] == 4 and flaky["failed"] == 0
    assert flaky["retries"] == {"429": 4, "transport": 4, "incomplete-stream": 8, "malformed": 4}
    for pair in read_pairs(tmp_path / "out" / "pairs.jsonl"):
        letters = "".join(pair.state[-1].content.split())
        assert pair.chosen.content == " ".join(reversed(letters))
        answer = pair.provenance.teachers[0]
        # usage came in the stream's last chunk, so the call is charged what was used, not the worst case
        assert answer.output_tokens == len(letters) + 1 and answer.input_tokens > 0
    assert stats.spent_usd > flaky["cost_usd"] > 0  # incomplete streams and cut ones are charged as billed

    # the cache does not care how an answer travelled: the same run without streaming pays nothing
    server = fault_server([])
    try:
        again = asyncio.run(run(config(trace, server.url, tmp_path / "out")))
        assert server.app.total == 0 and again.teachers["flaky"]["cached"] == 4 and again.pairs_written == 4
    finally:
        server.stop()


def test_assemble_stream_merges_tool_call_deltas():
    def lines(*chunks):
        async def gen():
            yield ": OPENROUTER PROCESSING"
            for chunk in chunks:
                yield chunk if isinstance(chunk, str) else "data: " + json.dumps(chunk)
                yield ""
        return gen()

    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": ""}}
    chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Let me look."}}]},
              {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]},
              {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"path": '}}]}}]},
              {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '"a.py"}'}}]}}]},
              {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
              {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 9}}]
    completion = asyncio.run(assemble_stream(lines(*chunks, "data: [DONE]")))
    message = completion["choices"][0]["message"]
    assert message["content"] == "Let me look." and completion["usage"]["completion_tokens"] == 9
    assert message["tool_calls"] == [{"id": "call_1", "type": "function",
                                      "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}]
    assert completion["choices"][0]["finish_reason"] == "tool_calls"
    with pytest.raises(Exception, match=r"before data: \[DONE\]"):
        asyncio.run(assemble_stream(lines(*chunks)))


def test_timeout_is_retried_and_charged_as_worst_case(tmp_path):
    trace = wrong_student_trace(tmp_path, 3)
    server = fault_server(["slow"], slow_s=3.0)
    try:
        stats = asyncio.run(run(config(trace, server.url, tmp_path / "out", teacher={"timeout_s": 0.5})))
        counts = server.app.counts
    finally:
        server.stop()
    assert set(counts.values()) == {2}
    assert stats.teachers["flaky"]["retries"] == {"timeout": 3} and stats.pairs_written == 3
    # a timed-out call may have been billed: it is charged its reservation, above the answers' own cost
    assert stats.spent_usd > stats.teachers["flaky"]["cost_usd"] > 0


def test_client_errors_are_final_and_failures_are_not_cached(tmp_path):
    trace = wrong_student_trace(tmp_path, 3)
    server = fault_server(["400"])
    try:
        first = asyncio.run(run(config(trace, server.url, tmp_path / "out")))
        assert set(server.app.counts.values()) == {1}  # no retry on 400
        assert first.teachers["flaky"]["failed"] == 3 and first.pairs_written == 0
        second = asyncio.run(run(config(trace, server.url, tmp_path / "out")))  # failures were not cached
        assert set(server.app.counts.values()) == {2} and second.pairs_written == 3
    finally:
        server.stop()


def test_gives_up_after_max_attempts(tmp_path):
    trace = wrong_student_trace(tmp_path, 2)
    server = fault_server(["500"] * 10)
    try:
        stats = asyncio.run(run(config(trace, server.url, tmp_path / "out", retry={"max_attempts": 3, "backoff_s": 0.01})))
        assert set(server.app.counts.values()) == {3}
    finally:
        server.stop()
    assert stats.teachers["flaky"]["failed"] == 2 and stats.pairs_written == 0


@pytest.mark.parametrize("cap", [0.045, 0.06])
def test_budget_cap_holds_with_16_calls_in_flight(tmp_path, cap):
    trace = wrong_student_trace(tmp_path, 60)
    # usage ~ the request's size, so the worst case reserved is close to what is billed: the cap binds
    server = fault_server([], delay_s=0.3, tokens_per_char=1.0)
    prices = {"input_price": 10.0, "output_price": 20.0}
    try:
        stats = asyncio.run(run(config(trace, server.url, tmp_path / "out", budget_usd=cap,
                                       teacher={"concurrency": 16, **prices})))
        app = server.app
        billed = sum(u["prompt_tokens"] * 10.0 + u["completion_tokens"] * 20.0 for u in app.usages) / 1e6
        first_calls = app.total
        assert app.max_in_flight == 16
        assert billed <= cap and stats.spent_usd <= cap
        assert stats.budget_exhausted and 0 < stats.steps_replayed < 60
        assert stats.spent_usd == pytest.approx(billed)
        assert billed > 0.5 * cap  # it stopped at the cap, not long before it
        print(f"budget cap ${cap}: {first_calls} calls, max {app.max_in_flight} in flight, billed ${billed:.6f}, "
              f"accounted ${stats.spent_usd:.6f}, {stats.steps_replayed}/60 steps before the clean stop")
        pairs = read_pairs(tmp_path / "out" / "pairs.jsonl")
        assert len(pairs) == stats.steps_replayed  # a clean stop: what was answered is written
        # a rerun with no cap finishes the trace, paying only for what was not answered yet
        stats2 = asyncio.run(run(config(trace, server.url, tmp_path / "out", teacher={"concurrency": 16, **prices})))
        assert max(app.counts.values()) == 1 and app.total == 60
        assert stats2.teachers["flaky"]["cached"] == first_calls and stats2.pairs_written == 60
    finally:
        server.stop()
