"""The Codex CLI ingester on rollout files in both shapes Codex has written (tests/replay/data/codex/,
built by make_fixtures.py from the documented format), then on the envelope file damaged."""

from __future__ import annotations

import json
from pathlib import Path

from composer_prime.replay.ingest import ingest

CODEX = Path(__file__).parent / "data" / "codex"
ENVELOPE = next(CODEX.glob("rollout-2025-10-20*.jsonl"))
BARE = next(CODEX.glob("rollout-2025-06-02*.jsonl"))


def test_envelope_rollout():
    steps, report = ingest(ENVELOPE, "codex")
    assert {s.trace_id for s in steps} == {"0199f3a2-7c41-7d20-b8e5-4f2a9c1d6e31"}
    assert [s.index for s in steps] == list(range(7))
    # event_msg lines are the UI's copy of the turns: counted, never read (the user turns appear once).
    assert report.skipped == {"meta_event": 10, "server_tool_call:web_search_call": 1}
    assert report.noted == {"compaction": 1}
    assert [s.student for s in steps] == ["gpt-5-codex"] * 4 + ["gpt-5"] * 3
    first = steps[0]
    assert [m.role for m in first.state] == ["system", "user", "user"]  # developer -> system
    assert first.state[-1].content == "The test test_slugify fails. Fix it."
    call = first.action.tool_calls[0]
    assert (call.id, call.name, json.loads(call.arguments)["command"]) == (
        "call_q1", "shell", ["bash", "-lc", "pytest -q tests/test_utils.py"])
    patch = steps[1].action.tool_calls[0]
    assert patch.name == "apply_patch" and json.loads(patch.arguments)["input"].startswith("*** Begin Patch")
    # One response: its text and both parallel calls are one action; both results follow it.
    both = steps[2]
    assert both.action.content == "I'll check both test files."
    assert [c.id for c in both.action.tool_calls] == ["call_r3", "call_r4"]
    assert [(m.role, m.tool_call_id) for m in steps[3].state[-3:]] == [
        ("assistant", None), ("tool", "call_r3"), ("tool", "call_r4")]
    assert steps[4].state[-1].content == "Is there a newer python-slugify release?"
    # After the compaction the state restarts at the summary.
    assert [m.content.split(":")[0] for m in steps[5].state] == ["Summary", "Pin it in requirements.txt"]
    assert steps[6].action.content == "Pinned python-slugify==8.0.4."
    text = json.dumps([m.model_dump() for s in steps for m in s.state])
    assert "encrypted" not in text and "Reading the failing test" not in text  # reasoning stripped


def test_bare_rollout():
    steps, report = ingest(BARE, "codex")
    assert report.skipped == {"meta_event": 3}
    assert [s.trace_id for s in steps] == ["5b7d0c2e-1f3a-4c8e-9d21-6a0b4e7f3c19"] * 2
    call = steps[0].action.tool_calls[0]
    assert (call.id, call.name, json.loads(call.arguments)["command"]) == (
        "call_ls1", "local_shell", ["bash", "-lc", "ls src | wc -l"])
    assert [m.role for m in steps[1].state] == ["user", "assistant", "tool"]
    assert steps[1].action.content == "There are 12 files in src."


def test_damaged_rollout(tmp_path):
    lines = ENVELOPE.read_text().splitlines()
    kept = []
    for line in lines:
        payload = json.loads(line)["payload"]
        if payload.get("type") == "function_call_output" and payload.get("call_id") == "call_r4":
            continue  # one of the two parallel results is lost
        if payload.get("type") == "custom_tool_call":
            kept.append(line[: len(line) // 2])  # truncated
            continue
        kept.append(line)
    kept.insert(5, json.dumps({"timestamp": "2025-10-20T09:15:05Z", "type": "telemetry", "payload": {}}))
    kept.insert(6, json.dumps({"timestamp": "2025-10-20T09:15:05Z", "type": "response_item",
                               "payload": {"type": "mcp_approval_request", "id": "x"}}))
    path = tmp_path / "rollout-damaged.jsonl"
    path.write_text("\n".join(kept) + "\n")
    steps, report = ingest(path, "codex")
    assert report.skipped["malformed_line"] == 1 and report.skipped["unknown_event"] == 1
    assert report.skipped["unknown_item:mcp_approval_request"] == 1
    assert report.skipped["orphan_tool_result"] == 1  # the patch's output, its call lost with the line
    assert report.skipped["missing_tool_result"] == 1
    assert len(steps) == 6  # the patch's step is gone, every other action is a step
    later = steps[3].state
    assert [c.id for m in later if m.tool_calls for c in m.tool_calls] == ["call_q1", "call_r3"]
