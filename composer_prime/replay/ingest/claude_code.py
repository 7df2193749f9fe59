"""Claude Code session logs (`~/.claude/projects/<project>/<session>.jsonl`).

One JSON event per line. Conversation events are `type: "user"` / `"assistant"` with an Anthropic
`message` (`content` a string or a list of blocks); others (`summary`, `system`,
`file-history-snapshot`, ...) carry no turn. Claude Code writes one API response as several
lines, one per content block, all with the same `message.id`: they are merged back into one turn.

Replay rules:
- `isSidechain: true` events (sub-agent conversations) belong to another conversation: skipped.
- `thinking` / `redacted_thinking` blocks are stripped: teachers get the visible turn, as an
  OpenAI-compatible endpoint would (thinking signatures cannot be replayed to another model).
- `tool_use` becomes an OpenAI tool call, `tool_result` a `tool` message right after the turn
  that called it; unpaired ones are counted and dropped (see steps.py).
- Malformed lines and unknown event types are counted and skipped; the rest is kept.
Tool schemas are not in the log, so steps carry none here; replay gives them a tools file's schemas
or infers them from the session's calls (replay/tools.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from composer_prime.messages import ChatMessage, ToolCall
from composer_prime.replay.steps import IngestReport, Step, arguments_json, steps_from_conversation, text_of

FORMAT = "claude-code"
_META_EVENTS = {"summary", "system", "file-history-snapshot", "queue-operation", "progress", "attachment"}


def _tool_result_text(block: dict) -> str:
    text = text_of(block.get("content")) or ""
    return f"Error: {text}" if block.get("is_error") else text


def read(path: Path, report: IngestReport) -> list[Step]:
    conversation: list[ChatMessage] = []
    session, student = Path(path).stem, ""
    open_turn: str | None = None  # message.id of the assistant turn being merged
    for line in Path(path).read_text(errors="replace").splitlines():
        if not line.strip():
            continue
        report.lines += 1
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            report.skip("malformed_line")
            continue
        if not isinstance(event, dict):
            report.skip("malformed_line")
            continue
        kind = event.get("type")
        if kind in _META_EVENTS:
            report.skip("meta_event")
            continue
        if kind not in ("user", "assistant"):
            report.skip("unknown_event")
            continue
        if event.get("isSidechain"):
            report.skip("sidechain")
            continue
        message = event.get("message")
        if not isinstance(message, dict):
            report.skip("malformed_event")
            continue
        session = event.get("sessionId") or session
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            report.skip("malformed_event")
            continue
        if kind == "assistant":
            if event.get("isApiErrorMessage"):
                report.skip("api_error")
                continue
            student = message.get("model") or student
            text, calls = [], []
            for block in blocks:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text":
                    text.append(str(block.get("text", "")))
                elif block.get("type") == "tool_use" and block.get("name"):
                    calls.append(ToolCall(id=block.get("id"), name=block["name"],
                                          arguments=arguments_json(block.get("input"))))
            turn_id = message.get("id")
            if turn_id is not None and turn_id == open_turn and conversation and conversation[-1].role == "assistant":
                previous = conversation[-1]
                merged_text = "".join(filter(None, [previous.content, *text])) or None
                merged_calls = list(previous.tool_calls or []) + calls
                conversation[-1] = previous.model_copy(
                    update={"content": merged_text, "tool_calls": merged_calls or None})
            else:
                conversation.append(ChatMessage(role="assistant", content="".join(text) or None,
                                                tool_calls=calls or None))
            open_turn = turn_id
            continue
        open_turn = None
        user_text = []
        for block in blocks:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_result":
                conversation.append(ChatMessage(role="tool", tool_call_id=block.get("tool_use_id"),
                                                content=_tool_result_text(block)))
            else:
                user_text.append(text_of([block]) or "")
        if "".join(user_text).strip():
            conversation.append(ChatMessage(role="user", content="".join(user_text)))
    # Thinking-only turns left an assistant message with neither text nor calls: not a turn to replay.
    thinking_only = [m for m in conversation if m.role == "assistant" and not m.content and not m.tool_calls]
    report.skip("thinking_only_turn", len(thinking_only))
    conversation = [m for m in conversation if not (m.role == "assistant" and not m.content and not m.tool_calls)]
    return steps_from_conversation(conversation, source=str(path), format=FORMAT, trace_id=session,
                                   report=report, student=student)
