"""Chat messages in OpenAI's chat-completions shape: the one conversation model every module shares.

Rollout traces (traces.py), preference pairs (pairs.py), the hint channel and the trace-replay
ingesters all speak it. Tool-call arguments stay a JSON *string*, as OpenAI sends them, so a
message round-trips through JSONL and `datasets` without its schema depending on the tool.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str | None = None
    name: str
    arguments: str = "{}"
    """The call's arguments as the model wrote them (a JSON object, as a string; may be malformed)."""

    @classmethod
    def from_openai(cls, call: dict) -> ToolCall:
        """An OpenAI `tool_calls` entry (`{"id", "function": {"name", "arguments"}}`, or the flat form some logs
        keep), arguments given as a string or an object."""
        function = call.get("function") or {}
        return cls(id=call.get("id"), name=function.get("name") or call.get("name"),
                   arguments=arguments_json(function.get("arguments", call.get("arguments"))))


def arguments_json(arguments) -> str:
    """Tool-call arguments as a JSON string (logs and clients give them either way)."""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    """On a tool message: the id of the call it answers."""

    def openai(self) -> dict:
        """The message as an OpenAI chat-completions request expects it."""
        out: dict = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        return out


class Action(BaseModel):
    """What an assistant turn does: its text, its tool calls, or both."""

    model_config = ConfigDict(extra="forbid")

    content: str | None = None
    tool_calls: list[ToolCall] = []

    def message(self) -> ChatMessage:
        return ChatMessage(role="assistant", content=self.content, tool_calls=self.tool_calls or None)


def render_tool_calls(calls: list[ToolCall]) -> str:
    """Tool calls as Hermes-style text, for chat templates that cannot render `tool_calls` themselves."""
    parts = []
    for call in calls:
        try:
            arguments = json.loads(call.arguments)
        except json.JSONDecodeError:
            arguments = call.arguments  # keep a malformed call visible as the model wrote it
        parts.append("<tool_call>" + json.dumps({"name": call.name, "arguments": arguments}) + "</tool_call>")
    return "\n".join(parts)
