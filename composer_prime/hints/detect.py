"""Error sites in a rollout: which assistant turns went wrong, and how.

verifiers reports a failed tool call only as text in the tool message ("Error executing tool
<name>: ...", "error: ...", a traceback), with no structured flag (REFERENCE.md), so besides
the structured errors an environment may record, the conversation itself is read:
- a tool message that reads as a failure -> `tool_error` on the assistant turn that called it;
- a tool message with a pytest-style summary reporting failures -> `test_failure`;
- an assistant tool call whose arguments are not a JSON object, or a `<tool_call>` block in
  the text that a rollout could not run (tool_calls.parse_turn) -> `malformed_tool_call`;
- a last turn cut off at max_tokens -> `format_violation`;
- a final answer the verifier scored below the threshold -> `wrong_answer` (with the
  environment's feedback as the message when it gives one).
One turn can carry several records; an environment's own record wins over a detected one of
the same kind on the same turn.
"""

from __future__ import annotations

import json
import re

from composer_prime.chat import ChatMessage
from composer_prime.tool_calls import parse_turn
from composer_prime.traces import ErrorRecord

_TOOL_ERROR = re.compile(
    r"^\s*(error\b|error executing tool|exception\b|traceback \(most recent call last\))"
    r"|\b(command failed|non-zero exit|exit code [1-9]\d*|exited with [1-9]\d*)\b",
    re.IGNORECASE | re.MULTILINE,
)
_TEST_SUMMARY = re.compile(r"\b(\d+) (failed|errors?)\b", re.IGNORECASE)
_MAX_MESSAGE = 500  # characters of a tool's output kept in a record: enough for a hint, bounded in size


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 3] + "..."


def _caller(messages: list[ChatMessage], index: int) -> int | None:
    """The assistant turn a tool message answers: the closest assistant message before it."""
    for i in range(index - 1, -1, -1):
        if messages[i].role == "assistant":
            return i
    return None


def _malformed_calls(message: ChatMessage) -> list[str]:
    problems = []
    for call in message.tool_calls or []:
        try:
            arguments = json.loads(call.arguments)
        except json.JSONDecodeError as exc:
            problems.append(f"tool call {call.name!r}: arguments are not valid JSON ({exc.msg})")
            continue
        if not isinstance(arguments, dict):
            problems.append(f"tool call {call.name!r}: arguments must be a JSON object")
    return problems + [p.problem for p in parse_turn(message.content or "").calls if p.problem is not None]


def detect_errors(messages: list[ChatMessage], *, env_errors: list[ErrorRecord] = (), truncated: bool = False,
                  reward: float | None = None, wrong_answer_below: float | None = None, feedback: str | None = None
                  ) -> list[ErrorRecord]:
    """Every error site of a rollout, in turn order.

    Args:
        messages: the whole conversation, prompt included.
        env_errors: structured records the environment made itself.
        truncated: the last assistant turn hit max_tokens.
        reward: the rollout's reward; with `wrong_answer_below`, a reward under it marks the
            last assistant turn `wrong_answer`.
        feedback: the environment's explanation of the reward (e.g. a failing check), used as
            the `wrong_answer` message.
    """
    found: list[ErrorRecord] = list(env_errors)
    # The error reply to a malformed call is that call's failure, not a second one.
    malformed = {e.turn for e in env_errors if e.kind == "malformed_tool_call"}
    for i, message in enumerate(messages):
        if message.role == "assistant":
            problems = _malformed_calls(message)
            found += [ErrorRecord(kind="malformed_tool_call", turn=i, message=p) for p in problems]
            if problems:
                malformed.add(i)
        elif message.role == "tool" and message.content and (turn := _caller(messages, i)) is not None:
            if turn in malformed:
                continue
            if (summary := _TEST_SUMMARY.search(message.content)) and int(summary.group(1)) > 0:
                found.append(ErrorRecord(kind="test_failure", turn=turn, message=_clip(message.content)))
            elif _TOOL_ERROR.search(message.content):
                found.append(ErrorRecord(kind="tool_error", turn=turn, message=_clip(message.content)))
    last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=None)
    if last is not None and truncated:
        found.append(ErrorRecord(kind="format_violation", turn=last,
                                 message="the answer was cut off at the token limit before it ended"))
    if last is not None and reward is not None and wrong_answer_below is not None and reward < wrong_answer_below:
        message = feedback or f"the verifier scored the answer {reward:.2f}"
        found.append(ErrorRecord(kind="wrong_answer", turn=last, message=_clip(message)))

    unique: dict[tuple[int, str], ErrorRecord] = {}
    for record in found:  # environment records come first, so they win
        unique.setdefault((record.turn, record.kind), record)
    return sorted(unique.values(), key=lambda r: r.turn)
