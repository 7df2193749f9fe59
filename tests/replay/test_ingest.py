"""Each ingester on a real-format file, then on the same file damaged (truncated line, unknown event
type, a missing tool result): damaged parts are counted and skipped, everything else is kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from composer_prime.errors import UserError
from composer_prime.replay.ingest import ingest
from composer_prime.traces import RolloutTrace, write_traces

DATA = Path(__file__).parent / "data"


def _paired(state) -> bool:
    """Every tool call in the state has its result and every result its call."""
    calls = {c.id for m in state if m.role == "assistant" for c in m.tool_calls or []}
    results = {m.tool_call_id for m in state if m.role == "tool"}
    return calls == results


# --- Claude Code -------------------------------------------------------------------------------------

def test_claude_code_session():
    steps, report = ingest(DATA / "claude_code_session.jsonl", "claude-code")
    # 7 API responses in the main chain (msg_01..msg_07); the sidechain's one is a trace of its own.
    side = [s for s in steps if "/sidechain-" in s.trace_id]
    steps = [s for s in steps if s not in side]
    assert [s.index for s in steps] == list(range(7))
    assert [(s.action.content, s.student, [m.content for m in s.state]) for s in side] == [
        ("Found in utils.py", "claude-haiku-4-5", ["Search for slugify definitions"])]
    assert report.skipped == {"meta_event": 3}
    first = steps[0]
    assert first.state[-1].content == "The test test_slugify fails. Fix it."
    # The three lines of msg_01 are one action: text + Read call, thinking stripped.
    assert first.action.content == "Let me look at the test."
    assert [(c.name, json.loads(c.arguments)) for c in first.action.tool_calls] == [
        ("Read", {"file_path": "/home/dev/proj/tests/test_utils.py"})]
    assert first.student == "claude-sonnet-4-5" and first.trace_id.startswith("5f0c6a3e")
    last = steps[-1]
    assert last.action.content == "Done."
    assert all(_paired(s.state) for s in steps)
    assert [m.role for m in steps[1].state] == ["user", "assistant", "tool"]
    assert steps[1].state[2].tool_call_id == "toolu_01" and "slugify('A B')" in steps[1].state[2].content
    text = json.dumps([m.model_dump() for s in steps for m in s.state])
    assert "I should read the test first" not in text and "Found in utils.py" not in text


def damaged_claude_code(tmp_path: Path) -> Path:
    lines = (DATA / "claude_code_session.jsonl").read_text().splitlines()
    broken = []
    for line in lines:
        event = json.loads(line)
        content = (event.get("message") or {}).get("content")
        if isinstance(content, list) and content and content[0].get("tool_use_id") == "toolu_02":
            continue  # the Grep result is lost
        if event.get("uuid") == "u6":
            broken.append(line[: len(line) // 2])  # truncated mid-line
            continue
        broken.append(line)
    broken.insert(3, json.dumps({"type": "telemetry-v9", "payload": {}}))
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(broken) + "\n")
    return path


def test_claude_code_damaged(tmp_path):
    steps, report = ingest(damaged_claude_code(tmp_path), "claude-code")
    assert report.skipped["malformed_line"] == 1
    assert report.skipped["unknown_event"] == 1
    assert report.skipped["missing_tool_result"] == 1
    # The lines after the lost result and after the truncated line name a parent that is gone: each is
    # linked to the line before it instead.
    assert report.skipped["broken_parent_link"] == 2
    assert len(steps) == 8  # every action is still a step (7 + the sidechain's)
    assert all(_paired(s.state) for s in steps)
    # The unanswered Grep call is gone from later states, the rest of the conversation is there.
    later = steps[3].state
    assert not any(c.name == "Grep" for m in later if m.tool_calls for c in m.tool_calls)
    assert any(m.tool_calls and m.tool_calls[0].name == "Edit" for m in later)
    # The truncated user turn ("Also add a docstring") is lost, the actions after it are not.
    assert all("docstring" not in (m.content or "") for m in steps[-1].state)


# --- OpenAI chat logs -----------------------------------------------------------------------------

def test_openai_chat_log():
    steps, report = ingest(DATA / "openai_chat_log.jsonl", "openai-chat")
    assert len(steps) == 5 and not report.skipped
    call = steps[0]
    assert call.action.tool_calls[0].name == "get_weather"
    assert json.loads(call.action.tool_calls[0].arguments) == {"city": "Paris", "unit": "celsius"}
    assert json.loads(call.tools)[0]["function"]["name"] == "get_weather"
    assert call.student == "gpt-4o-mini-2024-07-18"
    assert steps[1].state[-1].role == "tool" and steps[1].action.content.startswith("It is 18")
    ft = [s for s in steps if s.trace_id == "ft-1"]
    assert [s.index for s in ft] == [0, 1, 2]
    assert json.loads(ft[1].action.tool_calls[0].arguments) == {"city": "Rome"}  # object arguments -> JSON string
    assert all(_paired(s.state) for s in steps)


def damaged_openai_chat(tmp_path: Path) -> Path:
    records = [json.loads(line) for line in (DATA / "openai_chat_log.jsonl").read_text().splitlines()]
    del records[1]["request"]["messages"][3]  # the tool result of call_abc123
    lines = [json.dumps(r) for r in records]
    lines.insert(1, json.dumps({"event": "heartbeat", "ts": 1}))
    lines.append(lines[0][:-40])  # truncated
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_openai_chat_damaged(tmp_path):
    steps, report = ingest(damaged_openai_chat(tmp_path), "openai-chat")
    assert report.skipped == {"malformed_line": 1, "unknown_event": 1, "missing_tool_result": 1}
    assert len(steps) == 5
    assert all(_paired(s.state) for s in steps)
    assert [m.role for m in steps[1].state] == ["system", "user"]  # the unanswered call was dropped


# --- verifiers ------------------------------------------------------------------------------------

def test_verifiers_traces():
    steps, report = ingest(DATA / "verifiers_traces.jsonl", "verifiers")
    assert len(steps) == 4 and not report.skipped
    first = steps[0]
    assert [m.role for m in first.state] == ["system", "user"]
    assert first.action.tool_calls[0].name == "calculator"
    assert json.loads(first.tools)[0]["function"]["parameters"]["required"] == ["expression"]
    assert first.student == "qwen3-0.6b"
    assert steps[1].index == 1 and steps[1].action.content == str(17 * 25)
    assert all(_paired(s.state) for s in steps)


def damaged_verifiers(tmp_path: Path) -> Path:
    episodes = [json.loads(line) for line in (DATA / "verifiers_traces.jsonl").read_text().splitlines()]
    nodes = episodes[0]["traces"][0]["nodes"]
    nodes[3]["message"] = {"role": "developer_note", "content": "?"}  # unknown role where the tool result was
    lines = [json.dumps(e) for e in episodes]
    lines.append(lines[1][: len(lines[1]) // 3])  # truncated
    lines.append(json.dumps({"kind": "run-summary"}))
    path = tmp_path / "traces.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_verifiers_damaged(tmp_path):
    steps, report = ingest(damaged_verifiers(tmp_path), "verifiers")
    assert report.skipped["malformed_line"] == 1
    assert report.skipped["unknown_event"] == 2  # the unknown node and the unknown record
    assert report.skipped["broken_branch"] == 1  # the final answer of trace 0 hangs below the lost node
    assert len(steps) == 3
    assert all(_paired(s.state) for s in steps)


# --- composer-prime rollouts --------------------------------------------------------------------------

def rollouts(n: int) -> list[RolloutTrace]:
    return [RolloutTrace(id=f"step0/{i}/0", env_id="reverse-text", example_id=f"train-{i}", step=0,
                         weight_version=0, reward=0.5,
                         messages=[{"role": "system", "content": "Reverse the letters."},
                                   {"role": "user", "content": "a b c"},
                                   {"role": "assistant", "content": "c b a"}])
            for i in range(n)]


def test_composer_prime_traces(tmp_path):
    path = write_traces(tmp_path, 0, rollouts(3))
    steps, report = ingest(path.parent, "composer-prime")
    assert len(steps) == 3 and not report.skipped
    assert steps[0].action.content == "c b a" and [m.role for m in steps[0].state] == ["system", "user"]


def damaged_composer_prime(tmp_path: Path) -> Path:
    path = write_traces(tmp_path, 0, rollouts(3))
    lines = path.read_text().splitlines()
    tool_trace = json.loads(lines[0])
    tool_trace["id"] = "step0/9/0"
    tool_trace["messages"][2] = {"role": "assistant", "content": None,
                                 "tool_calls": [{"id": "c1", "name": "lookup", "arguments": "{}"}]}
    tool_trace["messages"].append({"role": "assistant", "content": "c b a"})  # no tool result in between
    lines += [json.dumps(tool_trace), lines[1][:30], json.dumps({"type": "metrics", "step": 0})]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_composer_prime_damaged(tmp_path):
    steps, report = ingest(damaged_composer_prime(tmp_path), "composer-prime")
    assert report.skipped == {"missing_tool_result": 1, "malformed_line": 1, "invalid_record": 1}
    assert len(steps) == 5
    assert all(_paired(s.state) for s in steps)


def test_unknown_format_and_missing_path(tmp_path):
    with pytest.raises(UserError, match="unknown trace format"):
        ingest(DATA / "openai_chat_log.jsonl", "har")
    with pytest.raises(UserError, match="does not exist"):
        ingest(tmp_path / "nope.jsonl", "openai-chat")


# --- fidelity: branches, duplicates, unknown parts (issue 21, item 2) ------------------------------------

def test_openai_chat_roles_parts_choices_and_repeats(tmp_path):
    first = json.loads((DATA / "openai_chat_log.jsonl").read_text().splitlines()[0])
    first["request"]["messages"][0]["role"] = "developer"  # o1-era name of the system message
    first["request"]["messages"][1]["content"] = [
        {"type": "text", "text": "What's the weather in Paris?"},
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
        {"type": "text", "text": "In celsius."}]
    first["response"]["choices"].append({"index": 1, "message": {"role": "assistant", "content": "Sunny?"},
                                         "finish_reason": "stop"})
    path = tmp_path / "log.jsonl"
    path.write_text(json.dumps(first) + "\n" + json.dumps(first) + "\n")  # the same exchange logged twice
    steps, report = ingest(path, "openai-chat")
    assert report.skipped == {"unknown_part:input_audio": 2, "extra_choice": 2, "duplicate_step": 1}
    assert len(steps) == 1 and report.steps == 1
    assert [(m.role, m.content) for m in steps[0].state] == [
        ("system", "You are a helpful assistant."), ("user", "What's the weather in Paris?\nIn celsius.")]


def _verifiers_branching() -> dict:
    """Episode 0 with a retry: a second sampled answer to the same tool result (a sibling of node 4),
    and the tool result of node 2 replaced by a node with an unknown role (so the call is unanswered
    on the prefix both answers share)."""
    episode = json.loads((DATA / "verifiers_traces.jsonl").read_text().splitlines()[0])
    nodes = episode["traces"][0]["nodes"]
    retry = json.loads(json.dumps(nodes[4]))
    retry["message"]["content"] = "I think it is 400."
    nodes.append(retry)  # parent 3, like node 4
    return episode


def test_verifiers_branches_and_repeats(tmp_path):
    episode = _verifiers_branching()
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps(episode) + "\n" + json.dumps(episode) + "\n")
    steps, report = ingest(path, "verifiers")
    assert report.skipped == {"duplicate_step": 3}
    assert [s.action.content for s in steps] == [None, "425", "I think it is 400."]
    # Siblings: neither answer is in the other's state.
    assert steps[1].state == steps[2].state and all(m.role != "assistant" or m.tool_calls for m in steps[2].state)


def test_verifiers_defect_on_a_shared_prefix_is_counted_once(tmp_path):
    episode = _verifiers_branching()
    nodes = episode["traces"][0]["nodes"]
    # The call's result answers another id: an orphan on the path of both answers.
    nodes[3]["message"]["tool_call_id"] = "call_other"
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps(episode) + "\n")
    steps, report = ingest(path, "verifiers")
    assert report.skipped == {"orphan_tool_result": 1, "missing_tool_result": 1}
    assert len(steps) == 3


def test_composer_prime_rollout_written_twice(tmp_path):
    path = write_traces(tmp_path, 0, rollouts(2) + rollouts(1))
    steps, report = ingest(path, "composer-prime")
    assert len(steps) == 2 and report.skipped == {"duplicate_step": 1}
