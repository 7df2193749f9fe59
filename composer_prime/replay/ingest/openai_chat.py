"""OpenAI chat-completions logs: JSONL, one logged exchange or one conversation per line.

Accepted records (what request loggers, proxies and fine-tuning files write):
- `{"request": {"model", "messages", "tools"?}, "response": {"id"?, "model"?, "choices": [{"message"}]}}`:
  one step, the state is the request's messages and the action the first choice's message;
- `{"messages": [...], "tools"?: [...]}` (the fine-tuning format): one step per assistant message.
Tool-call `arguments` may be a JSON string (as OpenAI sends them) or an object (as some loggers
store them). Malformed lines and records of neither shape are counted and skipped.

Fidelity: a record is one conversation, so there are no branches to follow; a request retried with
other responses is several steps with one state (real samples, all kept), while the same exchange
logged twice (same response id) is one step (ingest drops the repeat as `duplicate_step`). Choices
after the first are other samples of the same request, counted as `extra_choice`. Content parts
other than text and images (audio, files, refusals) are counted as `unknown_part:<type>`; a
message with a role outside system/developer/user/assistant/tool makes its record `malformed_record`.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from composer_prime.chat import ChatMessage, ToolCall
from composer_prime.replay.steps import (
    IngestReport, Step, json_records, steps_from_conversation, text_of,
)

FORMAT = "openai-chat"


ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant", "tool": "tool"}
"""OpenAI's chat roles as ours: `developer` is what o1 and later models call the system message."""


def message_from_openai(raw: dict, report: IngestReport | None = None) -> ChatMessage:
    """One OpenAI message dict as a ChatMessage (ValueError / ValidationError when it is not one);
    content parts other than text and images are dropped and counted in `report`."""
    if not isinstance(raw, dict):
        raise ValueError("message is not an object")
    if raw.get("role") not in ROLES:
        raise ValueError(f"role {raw.get('role')!r}")
    calls = None
    if raw.get("tool_calls"):
        calls = [ToolCall.from_openai(call) for call in raw["tool_calls"]]
    return ChatMessage(role=ROLES[raw["role"]], content=text_of(raw.get("content"), report), tool_calls=calls,
                       tool_call_id=raw.get("tool_call_id"))


def tools_json(tools) -> str | None:
    return json.dumps(tools, ensure_ascii=False) if tools else None


def read(path: Path, report: IngestReport) -> list[Step]:
    steps: list[Step] = []
    for number, record in json_records(path, report):
        try:
            if isinstance(record.get("request"), dict) and isinstance(record.get("response"), dict):
                request, response = record["request"], record["response"]
                choice = (response.get("choices") or [None])[0]
                if not isinstance(choice, dict) or not isinstance(choice.get("message"), dict):
                    report.skip("no_choice")
                    continue
                report.skip("extra_choice", len(response["choices"]) - 1)
                conversation = [message_from_openai(m, report) for m in request.get("messages") or []]
                conversation.append(message_from_openai({"role": "assistant", **choice["message"]}, report))
                trace_id = str(response.get("id") or record.get("id") or f"line{number}")
                student = str(response.get("model") or request.get("model") or "")
                found = steps_from_conversation(
                    conversation, source=str(path), format=FORMAT, trace_id=trace_id, report=report,
                    tools=tools_json(request.get("tools")), student=student, actions={len(conversation) - 1},
                )
            elif isinstance(record.get("messages"), list):
                conversation = [message_from_openai(m, report) for m in record["messages"]]
                found = steps_from_conversation(
                    conversation, source=str(path), format=FORMAT, trace_id=str(record.get("id") or f"line{number}"),
                    report=report, tools=tools_json(record.get("tools")), student=str(record.get("model") or ""),
                )
            else:
                report.skip("unknown_event")
                continue
        except (ValueError, ValidationError, AttributeError, TypeError):
            report.skip("malformed_record")
            continue
        steps.extend(found)
    return steps
