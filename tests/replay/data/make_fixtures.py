"""Regenerate the real-format fixture files of tests/replay (run: uv run python tests/replay/data/make_fixtures.py).

- claude_code_session.jsonl: a Claude Code session in the shape Claude Code writes it (one event per line,
  one line per content block of an assistant response sharing `message.id`, thinking blocks with
  signatures, tool_use / tool_result pairs, a sidechain, summary and file-history-snapshot events).
- openai_chat_log.jsonl: request/response records as an OpenAI request logger stores them, with tool calls,
  and one fine-tuning-format conversation.
- verifiers_traces.jsonl: written by verifiers' own Episode/Trace models (`write_episode` serialization).
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
SESSION = "5f0c6a3e-8d2b-4f1a-9c7e-2b9d1e4a7c10"


def claude_code() -> list[dict]:
    base = {"cwd": "/home/dev/proj", "sessionId": SESSION, "version": "1.0.98", "gitBranch": "main",
            "userType": "external", "isSidechain": False}
    events: list[dict] = [{"type": "summary", "summary": "Fix failing test in utils", "leafUuid": "u9"}]
    parent = None

    def add(kind, message, uuid, **extra):
        nonlocal parent
        events.append({**base, "parentUuid": parent, "type": kind, "message": message, "uuid": uuid,
                       "timestamp": f"2025-09-01T10:00:{len(events):02d}.000Z", **extra})
        parent = uuid

    def assistant_block(msg_id, block, uuid):
        add("assistant", {"id": msg_id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                          "content": [block], "stop_reason": None,
                          "usage": {"input_tokens": 1200, "output_tokens": 40}}, uuid, requestId=f"req_{msg_id}")

    add("user", {"role": "user", "content": "The test test_slugify fails. Fix it."}, "u1")
    events.append({"type": "file-history-snapshot", "messageId": "u1", "snapshot": {"trackedFileBackups": {}}})
    assistant_block("msg_01", {"type": "thinking", "thinking": "I should read the test first.",
                               "signature": "EqQBCkgIBxABGAIiQ..."}, "a1")
    assistant_block("msg_01", {"type": "text", "text": "Let me look at the test."}, "a2")
    assistant_block("msg_01", {"type": "tool_use", "id": "toolu_01", "name": "Read",
                               "input": {"file_path": "/home/dev/proj/tests/test_utils.py"}}, "a3")
    add("user", {"role": "user", "content": [{"tool_use_id": "toolu_01", "type": "tool_result",
                                              "content": "def test_slugify():\n    assert slugify('A B') == 'a-b'\n"}]},
        "u2", toolUseResult={"type": "text"})
    # A sub-agent (Task tool) conversation: sidechain events, not part of this conversation.
    events.append({**base, "isSidechain": True, "parentUuid": None, "type": "user", "uuid": "s1",
                   "message": {"role": "user", "content": "Search for slugify definitions"}})
    events.append({**base, "isSidechain": True, "parentUuid": "s1", "type": "assistant", "uuid": "s2",
                   "message": {"id": "msg_side", "role": "assistant", "model": "claude-haiku-4-5",
                               "content": [{"type": "text", "text": "Found in utils.py"}]}})
    assistant_block("msg_02", {"type": "tool_use", "id": "toolu_02", "name": "Grep",
                               "input": {"pattern": "def slugify", "path": "/home/dev/proj"}}, "a4")
    add("user", {"role": "user", "content": [{"tool_use_id": "toolu_02", "type": "tool_result",
                                              "content": [{"type": "text", "text": "utils.py:3:def slugify(s):"}]}]},
        "u3")
    assistant_block("msg_03", {"type": "tool_use", "id": "toolu_03", "name": "Edit",
                               "input": {"file_path": "/home/dev/proj/utils.py", "old_string": "s.lower()",
                                         "new_string": "s.lower().replace(' ', '-')"}}, "a5")
    add("user", {"role": "user", "content": [{"tool_use_id": "toolu_03", "type": "tool_result",
                                              "content": "The file has been updated.", "is_error": False}]}, "u4")
    events.append({**base, "type": "system", "subtype": "info", "content": "Auto-compact is off", "uuid": "y1"})
    assistant_block("msg_04", {"type": "thinking", "thinking": "Now run the tests.", "signature": "Eq..."}, "a6")
    assistant_block("msg_04", {"type": "tool_use", "id": "toolu_04", "name": "Bash",
                               "input": {"command": "pytest -q tests/test_utils.py", "description": "Run tests"}}, "a7")
    add("user", {"role": "user", "content": [{"tool_use_id": "toolu_04", "type": "tool_result",
                                              "content": "1 passed in 0.02s"}]}, "u5")
    assistant_block("msg_05", {"type": "text", "text": "Fixed: slugify now replaces spaces with dashes."}, "a8")
    add("user", {"role": "user", "content": "Thanks! Also add a docstring."}, "u6")
    assistant_block("msg_06", {"type": "tool_use", "id": "toolu_06", "name": "Edit",
                               "input": {"file_path": "/home/dev/proj/utils.py", "old_string": "def slugify(s):",
                                         "new_string": "def slugify(s):\n    \"\"\"Lowercase, dashes.\"\"\""}}, "a9")
    add("user", {"role": "user", "content": [{"tool_use_id": "toolu_06", "type": "tool_result",
                                              "content": "The file has been updated."}]}, "u7")
    assistant_block("msg_07", {"type": "text", "text": "Done."}, "a10")
    return events


TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
                   "required": ["city"]}}}]


def openai_chat() -> list[dict]:
    system = {"role": "system", "content": "You are a helpful assistant."}
    user = {"role": "user", "content": "What's the weather in Paris, in celsius?"}
    call = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_abc123", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"unit\": \"celsius\"}"}}]}
    result = {"role": "tool", "tool_call_id": "call_abc123", "content": "{\"temp\": 18, \"sky\": \"cloudy\"}"}

    def record(i, messages, reply, finish):
        return {"timestamp": f"2025-09-02T08:00:0{i}Z",
                "request": {"model": "gpt-4o-mini", "messages": messages, "tools": TOOLS, "temperature": 0.7},
                "response": {"id": f"chatcmpl-{i}", "object": "chat.completion", "created": 1756800000 + i,
                             "model": "gpt-4o-mini-2024-07-18",
                             "choices": [{"index": 0, "message": reply, "finish_reason": finish}],
                             "usage": {"prompt_tokens": 80 + 20 * i, "completion_tokens": 18,
                                       "total_tokens": 98 + 20 * i}}}

    answer = {"role": "assistant", "content": "It is 18 °C and cloudy in Paris."}
    return [
        record(1, [system, user], call, "tool_calls"),
        record(2, [system, user, call, result], answer, "stop"),
        {"id": "ft-1", "messages": [system, {"role": "user", "content": "Say hi"},
                                    {"role": "assistant", "content": "Hi!"},
                                    {"role": "user", "content": "And the weather in Rome?"},
                                    {"role": "assistant", "content": None, "tool_calls": [
                                        {"id": "call_r1", "type": "function",
                                         "function": {"name": "get_weather", "arguments": {"city": "Rome"}}}]},
                                    {"role": "tool", "tool_call_id": "call_r1", "content": "{\"temp\": 25}"},
                                    {"role": "assistant", "content": "25 degrees in Rome."}],
         "tools": TOOLS},
    ]


def verifiers() -> list[str]:
    from verifiers.v1.configs.agent import AgentConfig
    from verifiers.v1.episode import Episode, EnvInfo
    from verifiers.v1.graph import MessageNode
    from verifiers.v1.trace import AgentInfo, ModelCall, Trace, TraceTask
    from verifiers.v1.types import (AssistantMessage, SystemMessage, Tool, ToolCall, ToolMessage,
                                    UserMessage)
    from verifiers.v1.utils.trace_store import type_adapter

    tool = Tool(name="calculator", description="Evaluate an arithmetic expression",
                parameters={"type": "object", "properties": {"expression": {"type": "string"}},
                            "required": ["expression"]})
    lines = []
    for k, (a, b) in enumerate([(17, 25), (6, 7)]):
        nodes = [
            MessageNode(parent=None, tools=[tool], message=SystemMessage(content="Use the calculator.")),
            MessageNode(parent=0, message=UserMessage(content=f"What is {a} * {b}?")),
            MessageNode(parent=1, sampled=True, message=AssistantMessage(
                content="", reasoning_content="multiply", tool_calls=[
                    ToolCall(id=f"call_{k}", name="calculator", arguments=json.dumps({"expression": f"{a}*{b}"}))])),
            MessageNode(parent=2, message=ToolMessage(tool_call_id=f"call_{k}", content=str(a * b))),
            MessageNode(parent=3, sampled=True, message=AssistantMessage(content=f"{a * b}")),
        ]
        trace = Trace(id=f"trace-{k}", task=TraceTask(type="MathTask", data={"id": f"t{k}", "prompt": "x"}),
                      agent=AgentInfo(config=AgentConfig(model="qwen3-0.6b")), tools=[tool], nodes=nodes,
                      calls=[ModelCall(node=2, model="qwen3-0.6b"), ModelCall(node=4, model="qwen3-0.6b")])
        episode = Episode(env=EnvInfo(id="math-tools"), task=trace.task, traces=[trace], ok=True)
        lines.append(type_adapter(type(episode)).dump_json(episode, exclude_none=True).decode())
    return lines


def main() -> None:
    (HERE / "claude_code_session.jsonl").write_text("".join(json.dumps(e) + "\n" for e in claude_code()))
    (HERE / "openai_chat_log.jsonl").write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in openai_chat()))
    (HERE / "verifiers_traces.jsonl").write_text("".join(line + "\n" for line in verifiers()))


if __name__ == "__main__":
    main()
