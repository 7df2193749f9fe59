"""The one step model every trace format is read into, and the bookkeeping of what was skipped.

A `Step` is one assistant turn of a trace: the conversation before it (`state`), the tool schemas
offered then, and the action the student took. Ingesters build a whole conversation first and cut
it into steps with `steps_from_conversation`, which also enforces the invariant OpenAI-compatible
endpoints check: every tool call in a state is answered by a tool message and every tool message
answers a call. Calls without a result and results without a call are counted and dropped from the
states (the step whose action *is* such a call is kept: its action needs no result).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from composer_prime.messages import Action, ChatMessage


class Step(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str
    """File the step was read from."""
    format: str
    trace_id: str
    index: int
    """Index of the action among the trace's assistant turns."""
    state: list[ChatMessage]
    tools: str | None = None
    """OpenAI `tools` list, JSON-encoded."""
    action: Action
    student: str = ""

    @property
    def id(self) -> str:
        return digest([self.source, self.trace_id, self.index])[:24]

    def state_payload(self) -> dict:
        """What a teacher sees: the part of the step that keys caches (the student's action is not in it)."""
        return {"messages": [m.model_dump(exclude_none=True) for m in self.state], "tools": self.tools}


def digest(value) -> str:
    """sha256 of canonical JSON: stable across runs, processes and dict orderings."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@dataclass
class IngestReport:
    """Per-file counts: steps kept and parts skipped, by reason (`malformed_line`, `unknown_event`, ...)."""

    steps: int = 0
    lines: int = 0
    skipped: Counter = field(default_factory=Counter)

    def skip(self, reason: str, count: int = 1) -> None:
        if count:
            self.skipped[reason] += count

    def merge(self, other: IngestReport) -> None:
        self.steps += other.steps
        self.lines += other.lines
        self.skipped.update(other.skipped)

    def as_dict(self) -> dict:
        return {"steps": self.steps, "lines": self.lines, "skipped": dict(sorted(self.skipped.items()))}


def text_of(content) -> str | None:
    """OpenAI / Anthropic content (a string or a list of parts) as plain text; None stays None."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("type") in ("text", "input_text", "output_text"):
                parts.append(str(part.get("text", "")))
            elif isinstance(part, dict) and part.get("type") in ("image", "image_url", "input_image"):
                parts.append("[image]")  # teachers here are text-only; keep a marker so the turn is not silently empty
        return "".join(parts)
    return str(content)


def arguments_json(arguments) -> str:
    """Tool-call arguments as a JSON string (logs store them either way)."""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)


def action_of(message: ChatMessage) -> Action | None:
    """The message as an action; None when it does nothing (empty text, no calls)."""
    content = message.content if message.content and message.content.strip() else None
    if content is None and not message.tool_calls:
        return None
    return Action(content=content, tool_calls=list(message.tool_calls or []))


def steps_from_conversation(
    conversation: list[ChatMessage], *, source: str, format: str, trace_id: str, report: IngestReport,
    tools: str | None = None, student: str = "", actions: set[int] | None = None,
) -> list[Step]:
    """Cut a conversation into steps, one per assistant message (or per index in `actions`:
    formats that mark which assistant messages the student sampled)."""
    answered = {m.tool_call_id for m in conversation if m.role == "tool"}
    called = {c.id for m in conversation if m.role == "assistant" for c in m.tool_calls or []}
    last = len(conversation) - 1
    cleaned: list[ChatMessage | None] = []
    for i, message in enumerate(conversation):
        if message.role == "assistant" and message.tool_calls:
            kept = [c for c in message.tool_calls if c.id is None or c.id in answered]
            if len(kept) < len(message.tool_calls) and i != last:  # a trace may end on an unanswered call
                report.skip("missing_tool_result", len(message.tool_calls) - len(kept))
            message = message.model_copy(update={"tool_calls": kept or None})
            if not kept and not (message.content and message.content.strip()):
                message = None
        elif message.role == "tool" and message.tool_call_id is not None and message.tool_call_id not in called:
            report.skip("orphan_tool_result")
            message = None
        cleaned.append(message)
    steps = []
    turn = 0
    for i, message in enumerate(conversation):
        if message.role != "assistant":
            continue
        index, turn = turn, turn + 1
        if actions is not None and i not in actions:
            continue
        action = action_of(message)
        if action is None:
            report.skip("empty_action")
            continue
        state = [m for m in cleaned[:i] if m is not None]
        if not state:
            report.skip("no_state")
            continue
        steps.append(Step(source=source, format=format, trace_id=trace_id, index=index, state=state,
                          tools=tools, action=action, student=student))
    report.steps += len(steps)
    return steps
