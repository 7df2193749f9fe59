"""Tool schemas for schemaless traces: inferred from the trace's own calls, or read from a tools file,
and what that changes for a teacher that, like Anthropic's API, refuses tool calls without tools."""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from pathlib import Path

import pytest
from servers import fault_server

from composer_prime.configs.replay import ReplayConfig
from composer_prime.errors import UserError
from composer_prime.replay.ingest import ingest
from composer_prime.replay.main import run
from composer_prime.replay.tools import with_tools

SESSION = Path(__file__).parent / "data" / "claude_code_session.jsonl"


def main_chain_calls() -> dict[str, list[dict]]:
    """tool_use inputs by tool name, read straight from the log (main chain only)."""
    calls = defaultdict(list)
    for line in SESSION.read_text().splitlines():
        event = json.loads(line)
        content = (event.get("message") or {}).get("content")
        if event.get("isSidechain") or not isinstance(content, list):
            continue
        for block in content:
            if block.get("type") == "tool_use":
                calls[block["name"]].append(block["input"])
    return calls


def test_inferred_from_the_traces_own_calls():
    steps, _ = ingest(SESSION, "claude-code")
    assert all(step.tools is None for step in steps)  # Claude Code logs no schemas
    steps = [s for s in with_tools(steps, None, infer=True) if "/sidechain-" not in s.trace_id]
    assert len({step.tools for step in steps}) == 1
    tools = {t["function"]["name"]: t["function"] for t in json.loads(steps[0].tools)}
    calls = main_chain_calls()
    assert set(tools) == set(calls)
    for name, inputs in calls.items():
        assert tools[name]["description"].startswith(f"Inferred from {len(inputs)} call(s)")  # each call once
        parameters = tools[name]["parameters"]
        assert set(parameters["properties"]) == set().union(*inputs)
        assert set(parameters["required"]) == set.intersection(*(set(i) for i in inputs))
        for key, schema in parameters["properties"].items():
            assert schema == {"type": "string"} if all(isinstance(i.get(key, ""), str) for i in inputs) else {}


def test_tools_file_wins_and_bad_files_are_one_line_errors(tmp_path):
    steps, _ = ingest(SESSION, "claude-code")
    schemas = [{"type": "function", "function": {"name": "Read", "description": "Read a file.",
                                                 "parameters": {"type": "object", "properties": {}}}}]
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"tools": schemas}))
    assert {json.dumps(json.loads(s.tools)) for s in with_tools(steps, path, infer=True)} == {json.dumps(schemas)}
    assert all(s.tools is None for s in with_tools(steps, None, infer=False))
    path.write_text('[{"type": "function"}]')
    with pytest.raises(UserError, match="expected a JSON list"):
        with_tools(steps, path, infer=True)


@pytest.mark.parametrize("infer", [False, True])
def test_a_strict_teacher_answers_only_with_tools(tmp_path, infer):
    server = fault_server([], strict_tools=True)
    try:
        config = ReplayConfig(
            sources=[{"path": str(SESSION), "format": "claude-code", "infer_tools": infer}],
            teachers=[{"name": "strict", "model": "m", "base_url": server.url + "/v1", "max_tokens": 16}],
            output_dir=str(tmp_path / "out"), progress=False, agreement={"k": 1}, retry={"max_attempts": 1})
        stats = asyncio.run(run(config))
    finally:
        server.stop()
    strict = stats.teachers["strict"]
    # step 0's state has no tool call yet, nor has the sidechain's one step; every later state does
    assert (strict["answered"], strict["failed"]) == ((8, 0) if infer else (2, 6))
