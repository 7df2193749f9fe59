"""OpenAI chat-completions logs: JSONL, one logged exchange or one conversation per line.

Accepted records (what request loggers, proxies and fine-tuning files write):
- `{"request": {"model", "messages", "tools"?}, "response": {"id"?, "model"?, "choices": [{"message"}]}}`:
  one step, the state is the request's messages and the action the first choice's message;
- `{"messages": [...], "tools"?: [...]}` (the fine-tuning format): one step per assistant message.
Tool-call `arguments` may be a JSON string (as OpenAI sends them) or an object (as some loggers
store them). Malformed lines and records of neither shape are counted and skipped.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from composer_prime.messages import ChatMessage, ToolCall
from composer_prime.replay.steps import IngestReport, Step, arguments_json, steps_from_conversation, text_of

FORMAT = "openai-chat"


def message_from_openai(raw: dict) -> ChatMessage:
    """One OpenAI message dict as a ChatMessage (ValueError / ValidationError when it is not one)."""
    if not isinstance(raw, dict):
        raise ValueError("message is not an object")
    calls = None
    if raw.get("tool_calls"):
        calls = []
        for call in raw["tool_calls"]:
            function = call.get("function") or {}
            calls.append(ToolCall(id=call.get("id"), name=function.get("name") or call.get("name"),
                                  arguments=arguments_json(function.get("arguments", call.get("arguments")))))
    return ChatMessage(role=raw.get("role"), content=text_of(raw.get("content")), tool_calls=calls,
                       tool_call_id=raw.get("tool_call_id"))


def tools_json(tools) -> str | None:
    return json.dumps(tools, ensure_ascii=False) if tools else None


def read(path: Path, report: IngestReport) -> list[Step]:
    steps: list[Step] = []
    for number, line in enumerate(Path(path).read_text(errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        report.lines += 1
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            report.skip("malformed_line")
            continue
        if not isinstance(record, dict):
            report.skip("malformed_line")
            continue
        try:
            if isinstance(record.get("request"), dict) and isinstance(record.get("response"), dict):
                request, response = record["request"], record["response"]
                choice = (response.get("choices") or [None])[0]
                if not isinstance(choice, dict) or not isinstance(choice.get("message"), dict):
                    report.skip("no_choice")
                    continue
                conversation = [message_from_openai(m) for m in request.get("messages") or []]
                conversation.append(message_from_openai({"role": "assistant", **choice["message"]}))
                trace_id = str(response.get("id") or record.get("id") or f"line{number}")
                student = str(response.get("model") or request.get("model") or "")
                found = steps_from_conversation(
                    conversation, source=str(path), format=FORMAT, trace_id=trace_id, report=report,
                    tools=tools_json(request.get("tools")), student=student, actions={len(conversation) - 1},
                )
            elif isinstance(record.get("messages"), list):
                conversation = [message_from_openai(m) for m in record["messages"]]
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
