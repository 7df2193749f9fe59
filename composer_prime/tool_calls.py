"""Tool calls written as Hermes-style text: how the tools are described to a model, and how its turn is read back.

A model behind our token-in/token-out /generate route has no tool-calling API: it writes
`<tool_call>{"name": ..., "arguments": {...}}</tool_call>` blocks in its text, as Qwen/Hermes
templates teach, and `messages.render_tool_calls` writes. Each block of a turn becomes one
`ParsedCall`, in order; a block that cannot run (not closed, not JSON, no name, arguments not
an object, a tool the environment does not have) keeps its problem instead of being dropped, so
the rollout can answer it with an error and record a `malformed_tool_call`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from transformers import PreTrainedTokenizerBase

from composer_prime.chat import ToolCall

_BLOCK = re.compile(r"<tool_call>(.*?)(</tool_call>|$)", re.DOTALL)
# The same wording as replay/render.py, so replayed and trained conversations describe tools alike.
TOOLS_PROMPT = ("You can call these tools:\n<tools>\n{tools}\n</tools>\nTo call one, reply with "
                '<tool_call>{{"name": <tool name>, "arguments": <JSON object>}}</tool_call>.')


@dataclass(frozen=True)
class ParsedCall:
    call: ToolCall | None
    """The call as written (None when the block did not even name a tool)."""
    problem: str | None = None
    """Why it cannot run; None for a call to hand to the environment."""


@dataclass(frozen=True)
class ParsedTurn:
    content: str | None
    """The turn's text without its well-formed blocks (a malformed block stays, as the model wrote it)."""
    calls: list[ParsedCall]


def tools_prompt(tools: list[dict]) -> str:
    return TOOLS_PROMPT.format(tools="\n".join(json.dumps(t) for t in tools))


def native_tool_support(tokenizer: PreTrainedTokenizerBase) -> bool:
    template = tokenizer.chat_template
    return isinstance(template, str) and "tools" in template


def with_tools(messages: list[dict], tools: list[dict] | None, native: bool) -> tuple[list[dict], list[dict] | None]:
    """(messages, tools for the template): for a template without tool support, the tools go in the system prompt."""
    if not tools or native:
        return [dict(m) for m in messages], tools or None
    described = tools_prompt(tools)
    messages = [dict(m) for m in messages]
    if messages and messages[0]["role"] == "system":
        messages[0]["content"] = f"{messages[0]['content']}\n\n{described}"
    else:
        messages.insert(0, {"role": "system", "content": described})
    return messages, None


def tool_names(tools: list[dict]) -> set[str]:
    """Names from OpenAI-style (`{"type": "function", "function": {...}}`) or flat `{name, ...}` schemas."""
    return {(t.get("function") or t).get("name") for t in tools} - {None}


def _parse_block(body: str, closed: bool, known: set[str] | None, call_id: str) -> ParsedCall:
    if not closed:
        return ParsedCall(None, "a <tool_call> block is not closed with </tool_call>")
    try:
        parsed = json.loads(body)
    except json.JSONDecodeError as exc:
        return ParsedCall(None, f"a <tool_call> block is not valid JSON ({exc.msg} at char {exc.pos})")
    if not isinstance(parsed, dict) or not isinstance(parsed.get("name"), str):
        return ParsedCall(None, 'a <tool_call> block needs {"name": <tool name>, "arguments": {...}}')
    name, arguments = parsed["name"], parsed.get("arguments", {})
    if isinstance(arguments, str):  # some models double-encode the arguments
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            pass
    call = ToolCall(id=call_id, name=name, arguments=json.dumps(arguments))
    if not isinstance(arguments, dict):
        return ParsedCall(call, f"the arguments of {name!r} must be a JSON object")
    if known is not None and name not in known:
        return ParsedCall(call, f"unknown tool {name!r}; tools: {', '.join(sorted(known))}")
    return ParsedCall(call)


def parse_turn(text: str, known: set[str] | None = None, id_prefix: str = "call") -> ParsedTurn:
    """Every `<tool_call>` block of `text`, in order; `known`: the tool names that exist (None: any)."""
    calls, kept, last = [], [], 0
    for i, match in enumerate(_BLOCK.finditer(text)):
        parsed = _parse_block(match.group(1).strip(), bool(match.group(2)), known, f"{id_prefix}_{i}")
        calls.append(parsed)
        kept.append(text[last : match.start()])
        if parsed.problem is not None and parsed.call is None:
            kept.append(match.group(0))  # unreadable: keep the model's text so the trace shows it
        last = match.end()
    kept.append(text[last:])
    content = "".join(kept).strip()
    return ParsedTurn(content=content or None, calls=calls)
