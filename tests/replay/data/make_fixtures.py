"""Regenerate the real-format fixture files of tests/replay (run: uv run python tests/replay/data/make_fixtures.py).

- claude_code_session.jsonl: a Claude Code session in the shape Claude Code writes it (one event per line,
  one line per content block of an assistant response sharing `message.id`, thinking blocks with
  signatures, tool_use / tool_result pairs, a sidechain, summary and file-history-snapshot events).
- openai_chat_log.jsonl: request/response records as an OpenAI request logger stores them, with tool calls,
  and one fine-tuning-format conversation.
- verifiers_traces.jsonl: written by verifiers' own Episode/Trace models (`write_episode` serialization).
- codex/rollout-*.jsonl: Codex CLI sessions as ~/.codex/sessions holds them: one in the envelope shape of
  Codex CLI 0.4x+ ({"timestamp", "type", "payload"}: session_meta, turn_context, response_item, event_msg,
  compacted), one in the older bare shape (first line the session, then bare response items and
  {"record_type": "state"} lines).
- claude_code/<case>.jsonl: one minimal session per ingester defect of issue 21, each line in the shape
  Claude Code 1.0.x-2.0.x writes (uuid/parentUuid chain, one line per content block of a response,
  compact_boundary system events, `<synthetic>` turns, `isMeta` caveats, sidechains with `agentId`).
"""

from __future__ import annotations

import json
import uuid as uuidlib
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


class Session:
    """Builds Claude Code lines: each event's parentUuid is the previous one unless `parent` says otherwise."""

    def __init__(self, name: str, version: str = "1.0.98"):
        self.id = str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"composer-prime/{name}"))
        self.base = {"cwd": "/home/dev/proj", "sessionId": self.id, "version": version, "gitBranch": "main",
                     "userType": "external", "isSidechain": False}
        self.events: list[dict] = []
        self.last: str | None = None

    def uuid(self, name: str) -> str:
        return str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"{self.id}/{name}"))

    def add(self, kind: str, name: str, parent: str | None | bool = True, **fields) -> str:
        uuid = self.uuid(name)
        parent_uuid = self.last if parent is True else (self.uuid(parent) if isinstance(parent, str) else None)
        self.events.append({"parentUuid": parent_uuid, **self.base, "type": kind, **fields, "uuid": uuid,
                            "timestamp": f"2025-10-01T09:{len(self.events) // 60:02d}:{len(self.events) % 60:02d}.000Z"})
        self.last = uuid
        return uuid

    def user(self, name: str, content, parent: str | None | bool = True, **fields) -> str:
        return self.add("user", name, parent, message={"role": "user", "content": content}, **fields)

    def result(self, name: str, call_id: str, content, is_error: bool | None = None, parent=True) -> str:
        block = {"tool_use_id": call_id, "type": "tool_result", "content": content}
        if is_error is not None:
            block["is_error"] = is_error
        return self.user(name, [block], parent, toolUseResult={"stdout": content if isinstance(content, str) else ""})

    def assistant(self, name: str, msg_id: str, block, model: str = "claude-sonnet-4-5-20250929",
                  parent: str | None | bool = True, **fields) -> str:
        message = {"id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [block],
                   "stop_reason": "tool_use" if isinstance(block, dict) and block.get("type") == "tool_use" else None,
                   "stop_sequence": None, "usage": {"input_tokens": 4, "cache_read_input_tokens": 14000,
                                                    "output_tokens": 60, "service_tier": "standard"}}
        return self.add("assistant", name, parent, message=message, requestId=f"req_{msg_id[4:]}", **fields)

    def text(self, name: str, msg_id: str, text: str, **kw) -> str:
        return self.assistant(name, msg_id, {"type": "text", "text": text}, **kw)

    def call(self, name: str, msg_id: str, call_id: str, tool: str, arguments: dict, **kw) -> str:
        return self.assistant(name, msg_id, {"type": "tool_use", "id": call_id, "name": tool, "input": arguments}, **kw)


def case_models() -> Session:
    """An opus turn, `/model` to sonnet, a sonnet turn: each step carries the model of its own turn."""
    s = Session("models")
    s.user("u1", "Rename foo to bar in utils.py")
    s.call("a1", "msg_01Opus", "toolu_01Op", "Edit", {"file_path": "utils.py", "old_string": "foo",
                                                         "new_string": "bar"}, model="claude-opus-4-1-20250805")
    s.result("r1", "toolu_01Op", "The file utils.py has been updated.")
    s.text("a2", "msg_02Opus", "Renamed.", model="claude-opus-4-1-20250805")
    s.user("m1", "<command-name>/model</command-name>\n<command-message>model</command-message>\n"
                 "<command-args>sonnet</command-args>")
    s.user("m2", "<local-command-stdout>Set model to sonnet (claude-sonnet-4-5-20250929)</local-command-stdout>")
    s.user("u2", "Now run the tests")
    s.call("a3", "msg_03Sonn", "toolu_03So", "Bash", {"command": "pytest -q", "description": "Run tests"})
    s.result("r3", "toolu_03So", "3 passed in 0.05s")
    s.text("a4", "msg_04Sonn", "All 3 tests pass.")
    return s


def case_synthetic_meta() -> Session:
    """A caveat (`isMeta`) before a local command, and a `<synthetic>` "No response requested." turn
    after an interrupted one: neither is the model's, both are skipped and counted."""
    s = Session("synthetic-meta")
    s.user("c1", "Caveat: The messages below were generated by the user while running local commands. DO NOT "
                 "respond to these messages or otherwise consider them in your response unless the user "
                 "explicitly asks you to.", isMeta=True)
    s.user("u1", "What does slugify do?")
    s.text("a1", "msg_01Real", "It lowercases a string and joins words with dashes.", model="claude-opus-4-1-20250805")
    s.user("u2", "[Request interrupted by user]")
    s.add("assistant", "a2", message={
        "id": "6a1f1b0e-synthetic", "model": "<synthetic>", "role": "assistant", "stop_reason": "stop_sequence",
        "stop_sequence": "", "type": "message", "usage": {"input_tokens": 0, "output_tokens": 0},
        "content": [{"type": "text", "text": "No response requested."}]})
    s.user("u3", "And unslugify?")
    s.text("a3", "msg_03Real", "There is no unslugify in this project.", model="claude-opus-4-1-20250805")
    return s


def case_interleaved() -> Session:
    """Two parallel calls of one response (same message.id) written as: text, call 1, result 1, call 2,
    result 2 (the order Claude Code logs them, each line the child of the one before)."""
    s = Session("interleaved")
    s.user("u1", "Show me setup.cfg and pyproject.toml")
    s.text("a1", "msg_01Para", "Reading both files.")
    s.call("a2", "msg_01Para", "toolu_01A", "Read", {"file_path": "/home/dev/proj/setup.cfg"})
    s.result("r1", "toolu_01A", "[metadata]\nname = proj")
    s.call("a3", "msg_01Para", "toolu_01B", "Read", {"file_path": "/home/dev/proj/pyproject.toml"})
    s.result("r2", "toolu_01B", "[project]\nname = \"proj\"")
    s.text("a4", "msg_02Done", "Both name the package proj.")
    return s


def case_parallel_fork() -> Session:
    """Two parallel calls of one response where each result is written as the child of its own call's
    line: the second call and its result end a side branch, the conversation goes on from the first
    call's result. A trailing system event with no parent is the newest line."""
    s = Session("parallel-fork", version="2.0.49")
    s.user("u1", "Which tests and which fixtures are there?")
    s.call("a1", "msg_01Fork", "toolu_01G", "Glob", {"pattern": "tests/**/*.py"})
    s.call("a2", "msg_01Fork", "toolu_01R", "Read", {"file_path": "/home/dev/proj/tests/conftest.py"})
    s.result("r2", "toolu_01R", "import pytest\n\n@pytest.fixture\ndef app(): ...")
    s.result("r1", "toolu_01G", "tests/conftest.py\ntests/test_app.py", parent="a1")
    s.text("a3", "msg_02Fork", "Two test files; conftest.py defines the app fixture.")
    s.add("system", "t1", parent=None, subtype="turn_duration", content="", durationMs=5120)
    return s


def case_duplicate_line() -> Session:
    """The same assistant line written twice (same uuid), as Claude Code does when a session is resumed."""
    s = Session("duplicate-line")
    s.user("u1", "List the tests")
    s.call("a1", "msg_01Dupl", "toolu_01D", "Glob", {"pattern": "tests/**/*.py"})
    s.events.append(dict(s.events[-1]))
    s.result("r1", "toolu_01D", "tests/test_utils.py")
    s.text("a2", "msg_02Dupl", "One test file: tests/test_utils.py.")
    return s


def case_rewind() -> Session:
    """A rewind: the user went back to the first answer and asked again; the old reply and what followed
    it are a branch (two children of one parent), the new one the branch Claude Code resumes."""
    s = Session("rewind")
    s.user("u1", "Add a --verbose flag to cli.py")
    s.text("a1", "msg_01Rewi", "Which argument parser does cli.py use?")
    s.user("u2", "click")
    s.call("a2", "msg_02Old", "toolu_02Old", "Edit", {"file_path": "cli.py", "old_string": "@click.command()",
                                                       "new_string": "@click.command()\n@click.option('-v')"})
    s.result("r2", "toolu_02Old", "The file cli.py has been updated.")
    s.text("a3", "msg_03Old", "Added -v.")
    s.user("u3", "argparse, sorry", parent="a1")
    s.call("a4", "msg_04New", "toolu_04New", "Edit", {"file_path": "cli.py", "old_string": "parser = argparse.ArgumentParser()",
                                                       "new_string": "parser = argparse.ArgumentParser()\n"
                                                                     "parser.add_argument('--verbose', action='store_true')"})
    s.result("r4", "toolu_04New", "The file cli.py has been updated.")
    s.text("a5", "msg_05New", "Added --verbose.")
    return s


def case_compaction() -> Session:
    """An automatic compaction: a compact_boundary with no parent (logicalParentUuid names the last turn)
    and the summary as a user turn; the model after it saw only the summary."""
    s = Session("compaction")
    s.user("u1", "Port the parser to the new API")
    s.call("a1", "msg_01Comp", "toolu_01C", "Read", {"file_path": "parser.py"})
    s.result("r1", "toolu_01C", "def parse(text): ...")
    s.text("a2", "msg_02Comp", "The parser uses the old tokenize() call in three places.")
    boundary_parent = s.last
    s.add("system", "b1", parent=None, subtype="compact_boundary", content="Conversation compacted", isMeta=False,
          level="info", logicalParentUuid=boundary_parent, compactMetadata={"trigger": "auto", "preTokens": 155321})
    s.user("sum", "This session is being continued from a previous conversation that ran out of context. The "
                  "conversation is summarized below:\nThe user asked to port parser.py to the new API; it calls "
                  "tokenize() in three places.", isVisibleInTranscriptOnly=True, isCompactSummary=True)
    s.call("a3", "msg_03Comp", "toolu_03C", "Edit", {"file_path": "parser.py", "old_string": "tokenize(",
                                                      "new_string": "lex(", "replace_all": True})
    s.result("r3", "toolu_03C", "The file parser.py has been updated. All occurrences were replaced.")
    s.text("a4", "msg_04Comp", "Ported: tokenize() is now lex().")
    return s


def case_sidechain() -> Session:
    """A Task call whose sub-agent conversation is logged in the same file (isSidechain, agentId)."""
    s = Session("sidechain", version="2.0.49")
    s.user("u1", "Find where slugify is defined")
    s.call("a1", "msg_01Task", "toolu_01T", "Task", {"description": "Find slugify", "prompt": "Search for slugify",
                                                     "subagent_type": "general-purpose"})
    main = s.last
    s.base = {**s.base, "isSidechain": True, "agentId": "6e067db7"}
    s.user("s1", "Search for slugify", parent=None)
    s.call("s2", "msg_01Side", "toolu_01S", "Grep", {"pattern": "def slugify"}, model="claude-haiku-4-5-20251001")
    s.result("s3", "toolu_01S", "utils.py:3:def slugify(s):")
    s.text("s4", "msg_02Side", "slugify is defined in utils.py line 3.", model="claude-haiku-4-5-20251001")
    s.base = {k: v for k, v in s.base.items() if k != "agentId"} | {"isSidechain": False}
    s.last = main
    s.result("r1", "toolu_01T", [{"type": "text", "text": "slugify is defined in utils.py line 3."}])
    s.text("a2", "msg_02Task", "It is in utils.py, line 3.")
    return s


def case_unknown_blocks() -> Session:
    """Blocks the ingester has no use for: a server-side web search (server_tool_use and its
    web_search_tool_result), a document block, and a bare string inside a block list."""
    s = Session("unknown-blocks")
    s.user("u1", [{"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "v2 notes"}},
                  "What changed in click 8.2?"])
    s.assistant("a1", "msg_01Unkn", {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search",
                                     "input": {"query": "click 8.2 changelog"}})
    s.assistant("a2", "msg_01Unkn", {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01",
                                     "content": [{"type": "web_search_result", "title": "Changes",
                                                  "url": "https://click.palletsprojects.com/changes/"}]})
    s.text("a3", "msg_01Unkn", "Click 8.2 dropped Python 3.7 support.")
    return s


def case_separators_errors() -> Session:
    """An image and text in one user turn, a text response in two blocks, and error results that
    already say so (Claude Code's <tool_use_error> and a plain "Error: ...")."""
    s = Session("separators-errors")
    s.user("u1", [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
                  {"type": "text", "text": "Do you think this layout works?"}])
    s.text("a1", "msg_01Sepa", "The sidebar overlaps the header.")
    s.text("a2", "msg_01Sepa", "I will read the CSS.")
    s.call("a3", "msg_01Sepa", "toolu_01E", "Read", {"file_path": "/home/dev/proj/style.css"})
    s.result("r1", "toolu_01E", "<tool_use_error>File does not exist.</tool_use_error>", is_error=True)
    s.call("a4", "msg_02Sepa", "toolu_02E", "Bash", {"command": "ls static"})
    s.result("r2", "toolu_02E", "Error: ls: cannot access 'static': No such file or directory", is_error=True)
    s.call("a5", "msg_03Sepa", "toolu_03E", "Bash", {"command": "cat app.css"})
    s.result("r3", "toolu_03E", "cat: app.css: No such file or directory", is_error=True)
    s.text("a6", "msg_04Sepa", "There is no stylesheet in the project yet.")
    return s


CLAUDE_CODE_CASES = {"models": case_models, "synthetic_meta": case_synthetic_meta, "interleaved": case_interleaved,
                     "parallel_fork": case_parallel_fork, "duplicate_line": case_duplicate_line, "rewind": case_rewind, "compaction": case_compaction,
                     "sidechain": case_sidechain, "unknown_blocks": case_unknown_blocks,
                     "separators_errors": case_separators_errors}


CODEX_SESSION = "0199f3a2-7c41-7d20-b8e5-4f2a9c1d6e31"


def codex_envelope() -> list[dict]:
    """Two turns of gpt-5-codex (a shell call, an apply_patch, a parallel pair of calls), a web search,
    `/model` to gpt-5, an automatic compaction, then one more turn."""
    lines: list[dict] = []

    def line(kind, payload):
        lines.append({"timestamp": f"2025-10-20T09:15:{len(lines):02d}.120Z", "type": kind, "payload": payload})

    def item(payload):
        line("response_item", payload)

    def user(text):
        item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
        line("event_msg", {"type": "user_message", "message": text, "images": []})

    def assistant(text):
        item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})
        line("event_msg", {"type": "agent_message", "message": text})

    def shell(call_id, command, output):
        item({"type": "function_call", "name": "shell", "call_id": call_id,
              "arguments": json.dumps({"command": ["bash", "-lc", command], "workdir": "/home/dev/proj",
                                       "timeout_ms": 120000})})
        item({"type": "function_call_output", "call_id": call_id,
              "output": json.dumps({"output": output, "metadata": {"exit_code": 0, "duration_seconds": 0.1}})})

    def reasoning(summary):
        item({"type": "reasoning", "summary": [{"type": "summary_text", "text": summary}], "content": None,
              "encrypted_content": "gAAAAABo9f1x-encrypted"})

    def context(model):
        line("turn_context", {"cwd": "/home/dev/proj", "approval_policy": "on-request",
                              "sandbox_policy": {"mode": "workspace-write", "network_access": False},
                              "model": model, "effort": "medium", "summary": "auto"})

    line("session_meta", {"id": CODEX_SESSION, "timestamp": "2025-10-20T09:15:00.000Z", "cwd": "/home/dev/proj",
                          "originator": "codex_cli_rs", "cli_version": "0.46.0", "instructions": None,
                          "source": "cli", "model_provider": "openai",
                          "git": {"commit_hash": "3f2c1ab", "branch": "main"}})
    item({"type": "message", "role": "developer", "content": [
        {"type": "input_text", "text": "<permissions instructions>Approval policy: on-request.</permissions instructions>"}]})
    user("<environment_context>\n  <cwd>/home/dev/proj</cwd>\n  <shell>bash</shell>\n</environment_context>")
    user("The test test_slugify fails. Fix it.")
    context("gpt-5-codex")
    reasoning("**Reading the failing test**")
    shell("call_q1", "pytest -q tests/test_utils.py", "F\nE   assert 'a b' == 'a-b'\n1 failed")
    line("event_msg", {"type": "token_count", "info": {"total_token_usage": {"input_tokens": 5210,
                                                                             "output_tokens": 180}}})
    reasoning("**Patching slugify**")
    item({"type": "custom_tool_call", "status": "completed", "call_id": "call_p2", "name": "apply_patch",
          "input": "*** Begin Patch\n*** Update File: utils.py\n@@\n-    return s.lower()\n"
                   "+    return s.lower().replace(' ', '-')\n*** End Patch\n"})
    item({"type": "custom_tool_call_output", "call_id": "call_p2",
          "output": json.dumps({"output": "Success. Updated the following files:\nM utils.py\n",
                                "metadata": {"exit_code": 0, "duration_seconds": 0.0}})})
    assistant("I'll check both test files.")
    item({"type": "function_call", "name": "shell", "call_id": "call_r3",
          "arguments": json.dumps({"command": ["bash", "-lc", "pytest -q tests/test_utils.py"]})})
    item({"type": "function_call", "name": "shell", "call_id": "call_r4",
          "arguments": json.dumps({"command": ["bash", "-lc", "pytest -q tests/test_cli.py"]})})
    item({"type": "function_call_output", "call_id": "call_r3", "output": "1 passed in 0.02s"})
    item({"type": "function_call_output", "call_id": "call_r4", "output": "4 passed in 0.05s"})
    assistant("Fixed: slugify now joins words with dashes; both test files pass.")
    user("Is there a newer python-slugify release?")
    line("event_msg", {"type": "user_message", "message": "/model gpt-5", "images": []})
    context("gpt-5")
    reasoning("**Searching**")
    item({"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "python-slugify release"}})
    assistant("python-slugify 8.0.4 is the latest release.")
    line("compacted", {"message": "Summary: fixed slugify in utils.py (dashes), tests pass; user asked about "
                                  "python-slugify releases (8.0.4 is the latest)."})
    user("Pin it in requirements.txt")
    shell("call_w5", "echo 'python-slugify==8.0.4' >> requirements.txt", "")
    assistant("Pinned python-slugify==8.0.4.")
    return lines


def codex_bare() -> list[dict]:
    """The older shape: the session on the first line, response items bare, state records between."""
    return [
        {"id": "5b7d0c2e-1f3a-4c8e-9d21-6a0b4e7f3c19", "timestamp": "2025-06-02T14:03:11.402Z",
         "instructions": "Prefer small commits."},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "How many files are in src?"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAAABoPQ-enc"},
        {"type": "local_shell_call", "id": "lsh_1", "call_id": "call_ls1", "status": "completed",
         "action": {"type": "exec", "command": ["bash", "-lc", "ls src | wc -l"], "timeout_ms": 10000}},
        {"record_type": "state"},
        {"type": "function_call_output", "call_id": "call_ls1",
         "output": json.dumps({"output": "12\n", "metadata": {"exit_code": 0, "duration_seconds": 0.0}})},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "There are 12 files in src."}]},
        {"record_type": "state"},
    ]


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
    (HERE / "codex").mkdir(exist_ok=True)
    for name, lines in (("rollout-2025-10-20T09-15-00-" + CODEX_SESSION, codex_envelope()),
                        ("rollout-2025-06-02T14-03-11-5b7d0c2e-1f3a-4c8e-9d21-6a0b4e7f3c19", codex_bare())):
        (HERE / "codex" / f"{name}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
    (HERE / "claude_code").mkdir(exist_ok=True)
    for name, case in CLAUDE_CODE_CASES.items():
        (HERE / "claude_code" / f"{name}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in case().events))


if __name__ == "__main__":
    main()
