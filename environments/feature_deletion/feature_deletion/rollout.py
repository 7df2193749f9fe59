"""One full rollout of a task against any OpenAI-compatible chat-completions endpoint.

    result = run_rollout(row, tasks_dir, base_url="http://127.0.0.1:8000/v1", model="m")
    result.reward, result.metrics, result.errors, result.messages

Tool calls use the OpenAI format (`tools=[...]`, `message.tool_calls[*].function.{name,arguments}`,
replies as `{"role": "tool", "tool_call_id", "content"}`). The rollout ends at `submit`, at
`max_turns` assistant messages, or when the endpoint fails; then the workspace is graded.
`result.errors` is a list of {"kind", "turn", "message", "tool"} where `turn` is the index of the
erring assistant message in `result.messages`. `ToolSession` is the same workspace, tools and grading
for a loop that drives the conversation itself (the RL orchestrator renders and samples tokens).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from feature_deletion.grading import Grade, safe_grade
from feature_deletion.sandbox import START_S, Limits, check_start
from feature_deletion.scope import Invalid
from feature_deletion.task import TaskRow, runner_for
from feature_deletion.tools import Workspace, error_record
from feature_deletion.toolset import TOOL_SCHEMAS

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


@dataclass
class SessionOutcome:
    """A graded session: the reward, its metrics and every structured error of the rollout."""

    reward: float
    metrics: dict[str, float]
    errors: list[dict[str, Any]]
    grade: dict[str, Any]


def session_outcome(result: Grade, errors: list[dict[str, Any]], tool_calls: int, submitted: bool, last_turn: int,
                    turns: int) -> SessionOutcome:
    """The reward, metrics and errors of a graded rollout: the one scoring of both drivers (ToolSession here,
    the verifiers task's reward and metric under vf-eval)."""
    invalid = [error_record("grading_error" if r["code"] == "grading_error" else "invalid_submission", last_turn,
                            Invalid.model_validate(r).text()) for r in result.invalid]
    errors = [*errors, *invalid]
    metrics = result.metrics() | {
        "turns": float(turns), "tool_calls": float(tool_calls), "tool_errors": float(len(errors)),
        "submitted": float(submitted), "ignored_changes": float(len(result.ignored)),
    }
    return SessionOutcome(reward=result.reward, metrics=metrics, errors=errors, grade=result.to_dict())


class ToolSession:
    """One rollout's workspace and tools, driven turn by turn by a loop outside this package.

    `run_rollout` drives one over an OpenAI-compatible endpoint; an RL orchestrator that renders
    and samples tokens itself drives one directly: `call` each tool call of assistant message
    `turn`, stop when `done` (submitted), then `finish` grades a fresh copy of the agent's changes. A sandbox
    that cannot run the task's python raises SandboxUnavailable here, once, instead of failing every test run.

        with ToolSession(row, tasks_dir) as session:
            text = session.call("read_file", '{"path": "setup.py"}', turn=2)
            outcome = session.finish(last_turn=2, turns=1)
    """

    tools: list[dict[str, Any]] = TOOL_SCHEMAS

    def __init__(self, row: TaskRow, tasks_dir: str | Path, runner: Path | None = None, limits: Limits | None = None,
                 isolation: str = "namespace"):
        self.row, self.tasks_dir, self.isolation = row, Path(tasks_dir), isolation
        self.runner = runner or runner_for(row)
        self.limits = limits or Limits()
        check_start(self.runner, isolation, min(self.limits.wall_s, START_S))  # SandboxUnavailable, before any work
        self.workspace = Workspace(row, self.tasks_dir, self.runner, self.limits, isolation)

    @property
    def done(self) -> bool:
        return self.workspace.submitted

    @property
    def errors(self) -> list[dict[str, Any]]:
        return self.workspace.errors

    def record(self, kind: str, turn: int, message: str, tool: str | None = None) -> None:
        self.workspace.record(kind, turn, message, tool)

    def call(self, name: str, arguments: str | dict | None, turn: int) -> str:
        """Run one tool call of assistant message `turn`; a failure comes back as `error: ...` text and is recorded."""
        return self.workspace.call(name, arguments, turn)

    def finish(self, last_turn: int, turns: int) -> SessionOutcome:
        """Grade the workspace; every reason the submission was invalid is recorded on `last_turn` (the last
        assistant message) as an `invalid_submission` error whose message starts with the reason's code. Grading
        never raises: whatever goes wrong in it is reward 0 with a `grading_error` record."""
        ws = self.workspace
        result = safe_grade(self.row, self.tasks_dir, ws.root, self.runner, self.limits, self.isolation)
        outcome = session_outcome(result, ws.errors, ws.tool_calls, ws.submitted, last_turn, turns)
        ws.errors[:] = outcome.errors
        return outcome

    def close(self) -> None:
        self.workspace.close()

    def __enter__(self) -> ToolSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def run_rollout(row: TaskRow, tasks_dir: str | Path, base_url: str, model: str = "policy", api_key: str = "none",
                max_turns: int = 30, runner: Path | None = None, limits: Limits | None = None,
                isolation: str = "namespace", sampling: dict[str, Any] | None = None,
                client: httpx.Client | None = None, request_timeout: float = 600.0) -> RolloutResult:
    messages = initial_messages(row)
    own_client = client is None
    client = client or httpx.Client(timeout=request_timeout)
    t0 = time.perf_counter()
    stop = "max_turns"
    turns = 0
    with ToolSession(row, tasks_dir, runner, limits, isolation) as session:
        ws = session.workspace
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
                        content = session.call(fn["name"], fn.get("arguments"), turn)
                    messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
                if session.done:
                    stop = "submitted"
                    break
        finally:
            if own_client:
                client.close()
        t_agent = time.perf_counter() - t0
        outcome = session.finish(len(messages) - 1, turns)
        return RolloutResult(
            task_id=row.id, messages=messages, reward=outcome.reward, metrics=outcome.metrics, errors=outcome.errors,
            grade=outcome.grade, stop_reason=stop,
            timings={"agent_s": t_agent, "tool_s": ws.tool_seconds, "test_s": ws.test_seconds,
                     "total_s": time.perf_counter() - t0},
        )
