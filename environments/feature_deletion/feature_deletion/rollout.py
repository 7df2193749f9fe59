"""One full rollout of a task against any OpenAI-compatible chat-completions endpoint.

    result = run_rollout(row, tasks_dir, base_url="http://127.0.0.1:8000/v1", model="m")
    result.reward, result.metrics, result.errors, result.messages

Tool calls use the OpenAI format (`tools=[...]`, `message.tool_calls[*].function.{name,arguments}`,
replies as `{"role": "tool", "tool_call_id", "content"}`). The rollout ends at `submit`, at
`max_turns` assistant messages, or when the endpoint fails; then the workspace is graded.
`result.errors` is a list of {"kind", "turn", "message", "tool"} where `turn` is the index of the
erring assistant message in `result.messages`.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from feature_deletion.grading import Grade, grade
from feature_deletion.sandbox import Limits, ensure_runner
from feature_deletion.task import TaskRow
from feature_deletion.tools import TOOL_SCHEMAS, Workspace

SYSTEM_PROMPT = (
    "You are a software engineer working in a Python repository through tools. Inspect the code, rebuild the "
    "deleted feature, run the tests, and call submit when you are done. Reply with tool calls only."
)
NUDGE = "Please continue by calling one of the tools (list_dir, read_file, search, edit_file, write_file, run_tests, submit)."


@dataclass
class RolloutResult:
    task_id: str
    messages: list[dict[str, Any]]
    reward: float
    metrics: dict[str, float]
    errors: list[dict[str, Any]]
    grade: dict[str, Any]
    stop_reason: str
    timings: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def initial_messages(row: TaskRow) -> list[dict[str, Any]]:
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": f"Task id: {row.id}\n\n{row.prompt}"}]


def run_rollout(row: TaskRow, tasks_dir: str | Path, base_url: str, model: str = "policy", api_key: str = "none",
                max_turns: int = 30, runner: Path | None = None, limits: Limits | None = None,
                isolation: str = "namespace", sampling: dict[str, Any] | None = None,
                client: httpx.Client | None = None, request_timeout: float = 600.0) -> RolloutResult:
    runner = runner or ensure_runner()
    limits = limits or Limits()
    messages = initial_messages(row)
    own_client = client is None
    client = client or httpx.Client(timeout=request_timeout)
    t0 = time.perf_counter()
    stop = "max_turns"
    turns = 0
    with Workspace(row, Path(tasks_dir), runner, limits, isolation) as ws:
        try:
            while turns < max_turns:
                try:
                    resp = client.post(f"{base_url.rstrip('/')}/chat/completions",
                                       headers={"Authorization": f"Bearer {api_key}"},
                                       json={"model": model, "messages": messages, "tools": TOOL_SCHEMAS,
                                             **(sampling or {})})
                    resp.raise_for_status()
                    message = resp.json()["choices"][0]["message"]
                except (httpx.HTTPError, KeyError, IndexError, ValueError) as exc:
                    ws.record("endpoint_error", len(messages), f"{type(exc).__name__}: {exc}")
                    stop = "endpoint_error"
                    break
                turn = len(messages)
                turns += 1
                assistant = {"role": "assistant", "content": message.get("content") or ""}
                calls = message.get("tool_calls") or []
                if calls:
                    assistant["tool_calls"] = calls
                messages.append(assistant)
                if not calls:
                    ws.record("format_violation", turn, "assistant message without a tool call")
                    messages.append({"role": "user", "content": NUDGE})
                    continue
                for i, call in enumerate(calls):
                    fn = call.get("function") or {}
                    call_id = call.get("id") or f"call_{turn}_{i}"
                    if not isinstance(fn, dict) or "name" not in fn:
                        ws.record("malformed_tool_call", turn, f"tool call without a function name: {str(call)[:200]}")
                        content = "error: tool call without a function name"
                    else:
                        content = ws.call(fn["name"], fn.get("arguments"), turn)
                    messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
                if ws.submitted:
                    stop = "submitted"
                    break
        finally:
            if own_client:
                client.close()
        t_agent = time.perf_counter() - t0
        result: Grade = grade(row, Path(tasks_dir), ws.root, runner, limits, isolation)
        for s in result.suspicious:
            ws.record("suspicious_patch", len(messages) - 1, s)
        metrics = result.metrics() | {
            "turns": float(turns), "tool_calls": float(ws.tool_calls), "tool_errors": float(len(ws.errors)),
            "submitted": float(ws.submitted), "ignored_changes": float(len(result.ignored)),
        }
        return RolloutResult(
            task_id=row.id, messages=messages, reward=result.reward, metrics=metrics, errors=list(ws.errors),
            grade=result.to_dict(), stop_reason=stop,
            timings={"agent_s": t_agent, "tool_s": ws.tool_seconds, "test_s": ws.test_seconds,
                     "total_s": time.perf_counter() - t0},
        )
