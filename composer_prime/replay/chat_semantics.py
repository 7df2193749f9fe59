"""What an OpenAI chat-completions endpoint rejects in a conversation, checked before a teacher sees it.

A teacher request is a step's state (plus its tools); an endpoint answers 400 to the whole request
when the tool calls and tool messages in it do not pair up:
- every tool call has a non-empty id, used by no other call in the conversation;
- every call of an assistant turn is answered by exactly one tool message, in the run of tool
  messages right after that turn (before any other message, and before the conversation ends);
- every tool message answers a call of the assistant turn that run follows: none stands alone.
A step's action is checked the same way for ids: its calls are what the pair's chosen or rejected
side will hold, and a trainer template pairs them with results by id.
"""

from __future__ import annotations

from composer_prime.messages import ChatMessage
from composer_prime.replay.steps import Step


def violations(messages: list[ChatMessage]) -> list[str]:
    """Each broken rule as `<kind> at <index>: <detail>`, in order; empty when the conversation is valid."""
    found: list[str] = []
    used: set[str] = set()
    waiting: set[str] = set()  # calls of the last assistant turn not answered yet
    caller: int | None = None  # index of that turn, while its run of tool messages lasts
    for i, message in enumerate(messages):
        if message.role == "tool":
            if caller is None:
                found.append(f"orphan_tool_message at {i}: no assistant tool call right before it")
            elif message.tool_call_id not in waiting:
                kind = "duplicate_tool_message" if message.tool_call_id in used else "orphan_tool_message"
                found.append(f"{kind} at {i}: id {message.tool_call_id!r} is not an open call of turn {caller}")
            else:
                waiting.discard(message.tool_call_id)
            continue
        found.extend(f"unanswered_tool_call at {caller}: id {call_id!r}" for call_id in sorted(waiting))
        waiting, caller = set(), None
        if message.role != "assistant" or not message.tool_calls:
            continue
        caller = i
        for call in message.tool_calls:
            if not call.id:
                found.append(f"tool_call_without_id at {i}: {call.name}")
            elif call.id in used:
                found.append(f"duplicate_tool_call_id at {i}: {call.id!r}")
            else:
                used.add(call.id)
                waiting.add(call.id)
    found.extend(f"unanswered_tool_call at {caller}: id {call_id!r}" for call_id in sorted(waiting))
    return found


def step_violations(step: Step) -> list[str]:
    """The state's violations, and ids of the action's calls that are missing or repeated."""
    found = violations(step.state)
    used = {c.id for m in step.state for c in m.tool_calls or []}
    for call in step.action.tool_calls:
        if not call.id:
            found.append(f"tool_call_without_id in action: {call.name}")
        elif call.id in used:
            found.append(f"duplicate_tool_call_id in action: {call.id!r}")
        used.add(call.id)
    return found
