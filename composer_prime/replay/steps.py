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
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from composer_prime.chat import Action, ChatMessage


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
    """Per-file counts: steps kept, parts skipped by reason (`malformed_line`, `unknown_event`, ...),
    and parts kept in another shape than the log's (`branch_trace`: a branch read as its own trace)."""

    steps: int = 0
    lines: int = 0
    skipped: Counter = field(default_factory=Counter)
    noted: Counter = field(default_factory=Counter)

    def skip(self, reason: str, count: int = 1) -> None:
        if count:
            self.skipped[reason] += count

    def note(self, what: str, count: int = 1) -> None:
        if count:
            self.noted[what] += count

    def merge(self, other: IngestReport) -> None:
        self.steps += other.steps
        self.lines += other.lines
        self.skipped.update(other.skipped)
        self.noted.update(other.noted)

    def as_dict(self) -> dict:
        return {"steps": self.steps, "lines": self.lines, "skipped": dict(sorted(self.skipped.items())),
                "noted": dict(sorted(self.noted.items()))}


def json_records(path: Path, report: IngestReport) -> Iterator[tuple[int, dict]]:
    """(1-based line number, object) for each JSONL line holding a JSON object; every non-blank line
    is counted in `report.lines`, the others as `malformed_line`."""
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
        yield number, record


PART_SEPARATOR = "\n"
"""Between the parts of one message once flattened to text: the model saw separate blocks, and
gluing them ("[image]Do you think...") would give teachers words that were never written."""

TEXT_PARTS = ("text", "input_text", "output_text")
IMAGE_PARTS = ("image", "image_url", "input_image")


def text_of(content, report: IngestReport | None = None) -> str | None:
    """OpenAI / Anthropic content (a string or a list of parts) as plain text; None stays None.
    Parts of another type are dropped and counted in `report` as `unknown_part:<type>`."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("type") in TEXT_PARTS:
                parts.append(str(part.get("text", "")))
            elif isinstance(part, dict) and part.get("type") in IMAGE_PARTS:
                parts.append("[image]")  # teachers here are text-only; keep a marker so the turn is not silently empty
            elif report is not None:
                report.skip(f"unknown_part:{part.get('type') if isinstance(part, dict) else type(part).__name__}")
        return PART_SEPARATOR.join(p for p in parts if p)
    return str(content)


def action_of(message: ChatMessage) -> Action | None:
    """The message as an action; None when it does nothing (empty text, no calls)."""
    content = message.content if message.content and message.content.strip() else None
    if content is None and not message.tool_calls:
        return None
    calls, ids = [], set()
    for call in message.tool_calls or []:
        if call.id is None or call.id not in ids:  # one call logged twice is one call
            calls.append(call)
            ids.add(call.id)
    return Action(content=content, tool_calls=calls)


def _paired(conversation: list[ChatMessage], report: IngestReport, count_from: int) -> list[ChatMessage | None]:
    """The conversation as an OpenAI endpoint accepts it (None where a message is dropped): each call
    id used once, each call answered by exactly one tool message in the run of tool messages right
    after its assistant turn. A result anywhere else answers nothing the model could have paired it
    with: it is an orphan. A trace may end on an unanswered call (the last message), nothing else may."""
    cleaned: list[ChatMessage | None] = list(conversation)
    last, used_ids = len(conversation) - 1, set()

    def skip(i: int, reason: str, count: int = 1) -> None:
        if i >= count_from:
            report.skip(reason, count)

    for i, message in enumerate(conversation):
        if message.role == "tool":
            follows_calls = i > 0 and (conversation[i - 1].role == "tool" or conversation[i - 1].tool_calls)
            if not follows_calls:  # results inside a block are handled with their assistant turn below
                skip(i, "orphan_tool_result")
                cleaned[i] = None
            continue
        if message.role != "assistant" or not message.tool_calls:
            continue
        calls = []
        for call in message.tool_calls:
            if call.id is not None and call.id in used_ids:
                skip(i, "duplicate_tool_call")
                continue
            used_ids.add(call.id)
            calls.append(call)
        ids, answered = {c.id for c in calls}, set()
        j = i + 1
        while j < len(conversation) and conversation[j].role == "tool":
            result_id = conversation[j].tool_call_id
            if result_id in answered and result_id is not None:
                skip(j, "duplicate_tool_result")
                cleaned[j] = None
            elif result_id in ids:
                answered.add(result_id)
            else:
                skip(j, "orphan_tool_result")
                cleaned[j] = None
            j += 1
        kept = [c for c in calls if c.id is None or c.id in answered]
        if len(kept) < len(calls) and i != last:
            skip(i, "missing_tool_result", len(calls) - len(kept))
        if i == last:
            kept = calls
        content = message.content if message.content and message.content.strip() else None
        cleaned[i] = message.model_copy(update={"tool_calls": kept or None}) if kept or content else None
    return cleaned


def steps_from_conversation(
    conversation: list[ChatMessage], *, source: str, format: str, trace_id: str, report: IngestReport,
    tools: str | None = None, student: str = "", actions: set[int] | None = None, count_from: int = 0,
) -> list[Step]:
    """Cut a conversation into steps, one per assistant message (or per index in `actions`:
    formats that mark which assistant messages the student sampled, or whose steps another branch
    already gave). Messages before `count_from` were already read on another branch of the same
    tree: their defects were counted there and are not counted again."""
    cleaned = _paired(conversation, report, count_from)
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
