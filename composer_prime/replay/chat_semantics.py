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

import operator

from composer_prime.chat import ChatMessage
from composer_prime.replay.steps import Step


class _Pairing:
    """The rules above checked one message at a time, so a state that extends another is checked
    from where the other ended (a trace's states are prefixes of each other: checking each whole
    made ingest quadratic, 3 s for a 3,200-line session)."""

    def __init__(self) -> None:
        self.found: list[str] = []
        self.used: set[str] = set()
        self.waiting: set[str] = set()  # calls of the last assistant turn not answered yet
        self.caller: int | None = None  # index of that turn, while its run of tool messages lasts
        self.length = 0

    def copy(self) -> _Pairing:
        other = _Pairing()
        other.found, other.used, other.waiting = list(self.found), set(self.used), set(self.waiting)
        other.caller, other.length = self.caller, self.length
        return other

    def _unanswered(self) -> list[str]:
        return [f"unanswered_tool_call at {self.caller}: id {call_id!r}" for call_id in sorted(self.waiting)]

    def feed(self, message: ChatMessage) -> None:
        i, self.length = self.length, self.length + 1
        if message.role == "tool":
            if self.caller is None:
                self.found.append(f"orphan_tool_message at {i}: no assistant tool call right before it")
            elif message.tool_call_id not in self.waiting:
                kind = "duplicate_tool_message" if message.tool_call_id in self.used else "orphan_tool_message"
                self.found.append(f"{kind} at {i}: id {message.tool_call_id!r} is not an open call of turn "
                                  f"{self.caller}")
            else:
                self.waiting.discard(message.tool_call_id)
            return
        if self.waiting:
            self.found.extend(self._unanswered())
        self.waiting, self.caller = set(), None
        if message.role != "assistant" or not message.tool_calls:
            return
        self.caller = i
        for call in message.tool_calls:
            if not call.id:
                self.found.append(f"tool_call_without_id at {i}: {call.name}")
            elif call.id in self.used:
                self.found.append(f"duplicate_tool_call_id at {i}: {call.id!r}")
            else:
                self.used.add(call.id)
                self.waiting.add(call.id)

    def close(self) -> list[str]:
        """Everything found, with the calls still open when the conversation ends."""
        return self.found + self._unanswered()


def violations(messages: list[ChatMessage]) -> list[str]:
    """Each broken rule as `<kind> at <index>: <detail>`, in order; empty when the conversation is valid."""
    pairing = _Pairing()
    for message in messages:
        pairing.feed(message)
    return pairing.close()


def _action_violations(step: Step, used: set[str]) -> list[str]:
    found, used = [], set(used)
    for call in step.action.tool_calls:
        if not call.id:
            found.append(f"tool_call_without_id in action: {call.name}")
        elif call.id in used:
            found.append(f"duplicate_tool_call_id in action: {call.id!r}")
        used.add(call.id)
    return found


def step_violations(step: Step) -> list[str]:
    """The state's violations, and ids of the action's calls that are missing or repeated."""
    return violations(step.state) + _action_violations(step, {c.id for m in step.state for c in m.tool_calls or []})


class StepChecker:
    """`step_violations` for a stream of steps, checking only what a state adds to the previous state
    of its trace when it extends it (the same message objects in the same order)."""

    def __init__(self) -> None:
        self._last: dict[str, tuple[list[ChatMessage], _Pairing]] = {}

    def violations(self, step: Step) -> list[str]:
        state, last = step.state, self._last.get(step.trace_id)
        if last is not None and len(state) >= len(last[0]) and all(map(operator.is_, last[0], state)):
            pairing = last[1].copy()
            rest = state[len(last[0]):]
        else:
            pairing, rest = _Pairing(), state
        for message in rest:
            pairing.feed(message)
        self._last[step.trace_id] = (state, pairing.copy())
        return pairing.close() + _action_violations(step, pairing.used)
