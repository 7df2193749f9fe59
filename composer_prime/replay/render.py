"""A step's state as the messages an endpoint receives.

`native`: OpenAI messages with structured `tool_calls` and a `tools` list: hosted routers, vLLM.
`text`: for endpoints and chat templates without tool support (our inference server; tiny local
models): earlier calls are rendered into the assistant text as Hermes `<tool_call>` blocks
(`render_tool_calls`), and the tool schemas, when there are any, are described in the system
prompt. Text answers are parsed back with `agreement.parse_text_action`.
"""

from __future__ import annotations

import json
from typing import Literal

from composer_prime.chat import Action, ChatMessage, render_tool_calls

ToolFormat = Literal["native", "text"]

_TOOLS_PROMPT = ("You can call these tools:\n<tools>\n{tools}\n</tools>\nTo call one, reply with "
                 '<tool_call>{{"name": <tool name>, "arguments": <JSON object>}}</tool_call>.')


def action_text(action: Action) -> str:
    """The action as a text-only model would write it."""
    parts = [action.content] if action.content else []
    if action.tool_calls:
        parts.append(render_tool_calls(action.tool_calls))
    return "\n".join(parts)


def _text_message(message: ChatMessage) -> dict:
    if message.role == "assistant":
        return {"role": "assistant", "content": action_text(Action(content=message.content,
                                                                   tool_calls=message.tool_calls or []))}
    return {"role": message.role, "content": message.content or ""}


def request_messages(state: list[ChatMessage], tools: str | None, mode: ToolFormat) -> tuple[list[dict], list | None]:
    """(messages, tools) for a chat-completions request."""
    if mode == "native":
        return [m.openai() for m in state], (json.loads(tools) if tools else None)
    messages = [_text_message(m) for m in state]
    if tools:
        described = _TOOLS_PROMPT.format(tools=tools)
        if messages and messages[0]["role"] == "system":
            messages[0] = {"role": "system", "content": messages[0]["content"] + "\n\n" + described}
        else:
            messages.insert(0, {"role": "system", "content": described})
    return messages, None
