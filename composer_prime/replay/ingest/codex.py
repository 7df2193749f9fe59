"""OpenAI Codex CLI session logs (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`).

One JSON object per line, `{"timestamp", "type", "payload"}` (Codex CLI 0.4x and later):
- `session_meta`: the session (`id`, `cwd`, `cli_version`, ...); its `id` names the trace;
- `turn_context`: the settings of the turns that follow, `model` among them: each step's `student`;
- `response_item`: what the model's context holds, Responses API items: `message` (role user,
  assistant, developer or system; content parts `input_text` / `output_text` / `input_image`),
  `reasoning` (stripped, as thinking is for Claude Code: encrypted, not replayable), `function_call`
  (`name`, `arguments` JSON string, `call_id`) and `function_call_output` (`call_id`, `output`),
  `custom_tool_call` (freeform input such as apply_patch's, made a call with `{"input": <text>}`
  arguments) and `custom_tool_call_output`, `local_shell_call` (made a `local_shell` call whose
  arguments are its `action`); server-side calls (`web_search_call`) have no result the model saw
  as a tool message: skipped and counted;
- `event_msg`: the UI's copy of the same turns (user_message, agent_message, token_count, ...):
  counted as `meta_event`, never read as turns (they would duplicate the response items);
- `compacted`: the context was replaced: by `replacement_history` when Codex wrote it, else by
  the summary in `message` as a user turn. The state restarts there.
Older files (before the envelope) hold the same items bare, after a first line with the session's
`id` and `timestamp`, with `{"record_type": "state"}` lines between: both shapes are read.

One model response is the run of assistant-side items (message, calls) between two input items
(a user message or a tool output): one action. `developer` messages become `system` messages (the
role OpenAI chat endpoints accept for instructions). Unknown item types are counted as
`unknown_item:<type>`, unknown content parts as `unknown_part:<type>`.
"""

from __future__ import annotations

import json
from pathlib import Path

from composer_prime.chat import ChatMessage, ToolCall, arguments_json
from composer_prime.replay.steps import (
    IngestReport, Step, json_records, steps_from_conversation, text_of,
)

FORMAT = "codex"
_RESPONSE_ITEMS = {"message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
                   "custom_tool_call_output", "local_shell_call", "web_search_call"}
_SERVER_CALLS = {"web_search_call", "image_generation_call", "code_interpreter_call", "file_search_call"}
_ROLES = {"user": "user", "assistant": "assistant", "developer": "system", "system": "system"}


class _Turns:
    """The conversation as it is being read, cut into contexts at each compaction."""

    def __init__(self) -> None:
        self.contexts: list[tuple[list[ChatMessage], list[str]]] = [([], [])]
        self.model = ""

    @property
    def messages(self) -> list[ChatMessage]:
        return self.contexts[-1][0]

    def add(self, message: ChatMessage) -> None:
        messages, models = self.contexts[-1]
        messages.append(message)
        if message.role == "assistant":
            models.append(self.model)

    def add_call(self, call: ToolCall) -> None:
        """A call joins the open assistant turn (the same response) or opens one."""
        last = self.messages[-1] if self.messages else None
        if last is not None and last.role == "assistant":
            self.messages[-1] = last.model_copy(update={"tool_calls": [*(last.tool_calls or []), call]})
        else:
            self.add(ChatMessage(role="assistant", tool_calls=[call]))

    def add_text(self, role: str, text: str) -> None:
        last = self.messages[-1] if self.messages else None
        if role == "assistant" and last is not None and last.role == "assistant":
            self.messages[-1] = last.model_copy(update={"content": "\n".join(filter(None, [last.content, text]))})
        else:
            self.add(ChatMessage(role=role, content=text))

    def restart(self) -> None:
        if self.messages:
            self.contexts.append(([], []))


def _output_text(output, report: IngestReport) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, dict) and "output" in output:  # some versions nest {"output", "metadata"}
        return _output_text(output["output"], report)
    if isinstance(output, list):
        return text_of(output, report) or ""
    return json.dumps(output, ensure_ascii=False)


def _item(turns: _Turns, item: dict, report: IngestReport) -> None:
    kind = item.get("type")
    if kind == "message":
        role = _ROLES.get(item.get("role"))
        if role is None:
            report.skip(f"unknown_role:{item.get('role')}")
            return
        text = text_of(item.get("content"), report)
        if text and text.strip():
            turns.add_text(role, text)
    elif kind == "reasoning":
        return
    elif kind == "function_call" and item.get("name"):
        turns.add_call(ToolCall(id=item.get("call_id"), name=item["name"],
                                arguments=arguments_json(item.get("arguments"))))
    elif kind == "custom_tool_call" and item.get("name"):
        arguments = json.dumps({"input": item.get("input", "")}, ensure_ascii=False)
        turns.add_call(ToolCall(id=item.get("call_id"), name=item["name"], arguments=arguments))
    elif kind == "local_shell_call":
        turns.add_call(ToolCall(id=item.get("call_id") or item.get("id"), name="local_shell",
                                arguments=arguments_json(item.get("action"))))
    elif kind in ("function_call_output", "custom_tool_call_output"):
        turns.add(ChatMessage(role="tool", tool_call_id=item.get("call_id"),
                              content=_output_text(item.get("output"), report)))
    elif kind in _SERVER_CALLS:
        report.skip(f"server_tool_call:{kind}")
    else:
        report.skip(f"unknown_item:{kind}")


def _compacted(turns: _Turns, payload: dict, report: IngestReport) -> None:
    turns.restart()
    report.note("compaction")
    history = payload.get("replacement_history")
    if isinstance(history, list):
        for item in history:
            if isinstance(item, dict):
                _item(turns, item, report)
    elif isinstance(payload.get("message"), str) and payload["message"].strip():
        turns.add(ChatMessage(role="user", content=payload["message"]))


def read(path: Path, report: IngestReport) -> list[Step]:
    turns, session = _Turns(), Path(path).stem
    for number, record in json_records(path, report):
        kind, payload = record.get("type"), record.get("payload")
        if "payload" not in record:  # the bare shape of older files
            if kind in _RESPONSE_ITEMS or (kind and "role" in record):
                kind, payload = "response_item", record
            elif number == 1 and "id" in record and "timestamp" in record:
                kind, payload = "session_meta", record
            elif record.get("record_type") == "state":
                report.skip("meta_event")
                continue
        if not isinstance(payload, dict):
            report.skip("unknown_event" if kind not in ("session_meta", "turn_context", "response_item",
                                                        "compacted", "event_msg") else "malformed_event")
            continue
        if kind == "session_meta":
            session = str(payload.get("id") or session)
        elif kind == "turn_context":
            turns.model = str(payload.get("model") or turns.model)
        elif kind == "response_item":
            _item(turns, payload, report)
        elif kind == "compacted":
            _compacted(turns, payload, report)
        elif kind == "event_msg":
            report.skip("meta_event")
        else:
            report.skip("unknown_event")
    steps: list[Step] = []
    offset = 0
    for messages, models in turns.contexts:
        found = steps_from_conversation(messages, source=str(path), format=FORMAT, trace_id=session, report=report)
        steps.extend(s.model_copy(update={"index": offset + s.index, "student": models[s.index]}) for s in found)
        offset += len(models)
    return steps
