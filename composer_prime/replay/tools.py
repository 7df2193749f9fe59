"""Tool schemas for steps whose traces carry none (Claude Code logs record calls, never the schemas).

A teacher that replays a tool-using state needs the tools described: without them it cannot call
one natively, and some APIs refuse a conversation holding tool calls but no `tools` (Anthropic's
"requests which include tool_use or tool_result blocks must define tools"). Two sources, in order:
- `tools_file`: the schemas themselves, an OpenAI `tools` list in JSON (best: exact descriptions);
- inferred from the calls in the same trace: one function per tool name the trace calls, with the
  argument names its calls used, each typed by the JSON type of its values when they all share one,
  and required when every call passed it. The teacher learns which tools exist and how they were
  called, not what they do, so a tools file is better where one can be had.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from composer_prime.errors import UserError
from composer_prime.replay.steps import Step

_JSON_TYPES = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (list, "array"),
               (dict, "object"), (type(None), "null"))


def read_tools_file(path: Path) -> str:
    """The file's OpenAI tools list as canonical JSON; a clear error for anything else."""
    try:
        tools = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"tools file {path}: {exc}") from None
    if isinstance(tools, dict) and "tools" in tools:
        tools = tools["tools"]
    if not isinstance(tools, list) or not all(
            isinstance(t, dict) and isinstance(t.get("function"), dict) and t["function"].get("name") for t in tools):
        raise UserError(f"tools file {path}: expected a JSON list of {{\"type\": \"function\", \"function\": "
                        f"{{\"name\": ...}}}} objects (OpenAI `tools`)")
    return json.dumps(tools, ensure_ascii=False)


def _json_type(value) -> str:
    return next(name for kind, name in _JSON_TYPES if isinstance(value, kind))


def infer_tools(steps: list[Step]) -> str | None:
    """An OpenAI tools list describing every tool called in these steps (states and actions), or None."""
    # A trace's steps share its prefix, so the same call appears in many states: count each once.
    unique = {(c.id, c.name, c.arguments): c for step in steps for m in [*step.state, step.action]
              for c in m.tool_calls or []}
    calls: dict[str, list[dict]] = defaultdict(list)
    for call in unique.values():
        try:
            arguments = json.loads(call.arguments)
        except json.JSONDecodeError:
            arguments = None
        calls[call.name].append(arguments if isinstance(arguments, dict) else {})
    if not calls:
        return None
    tools = []
    for name in sorted(calls):
        seen: dict[str, set[str]] = defaultdict(set)
        for arguments in calls[name]:
            for key, value in arguments.items():
                seen[key].add(_json_type(value))
        properties = {key: ({"type": types.pop()} if len(types) == 1 else {}) for key, types in sorted(seen.items())}
        required = [key for key in sorted(seen) if all(key in arguments for arguments in calls[name])]
        tools.append({"type": "function", "function": {
            "name": name, "description": f"Inferred from {len(calls[name])} call(s) in the trace; no schema was logged.",
            "parameters": {"type": "object", "properties": properties, "required": required}}})
    return json.dumps(tools, ensure_ascii=False)


def with_tools(steps: list[Step], tools_file: Path | None, infer: bool) -> list[Step]:
    """Give schemaless steps the tools file's schemas, or those inferred from their own trace."""
    if all(step.tools for step in steps):
        return steps
    given = read_tools_file(tools_file) if tools_file is not None else None
    by_trace: dict[tuple[str, str], list[Step]] = defaultdict(list)
    for step in steps:
        by_trace[(step.source, step.trace_id)].append(step)
    inferred = {key: infer_tools(group) for key, group in by_trace.items()} if infer and given is None else {}
    return [step if step.tools else step.model_copy(update={"tools": given or inferred.get((step.source, step.trace_id))})
            for step in steps]
