"""Rollout traces: what the orchestrator keeps of every rollout, one JSON line each.

`<output>/traces/step_<N>.jsonl` holds the rollouts trained on at step N, written with the step
(atomically, so a file that exists is complete). They feed the hint channel (error sites are
read from `errors` and from the messages), the trace-replay pipeline (ingested as
"composer-prime" traces) and humans reading what the policy did.

An `ErrorRecord` is one thing that went wrong in a turn, as the environment or the error
detector (hints/detect.py) saw it. `turn` indexes `messages`: the assistant message that
erred. Known kinds:
- `tool_error`: a tool call ran and failed (exception, non-zero exit);
- `malformed_tool_call`: a call the environment could not run (bad JSON, unknown tool, bad arguments);
- `test_failure`: a test run reported failures;
- `format_violation`: the answer breaks the required format (missing tags, cut off at max_tokens);
- `wrong_answer`: the verifier rejected the final answer.
Environments may add their own kinds; hint templates fall back to a generic one.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from composer_prime.chat import ChatMessage
from composer_prime.utils.fs import atomic_write_bytes

SCHEMA_VERSION = 1


class ErrorRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str
    turn: int
    """Index in the trace's messages of the assistant message that erred."""
    message: str
    """What went wrong, as the environment or tool reported it (shown to the hint writer)."""


class RolloutTrace(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    id: str
    """`step<N>/<slot>/<i>`: unique within a run."""
    env_id: str
    example_id: str
    step: int
    weight_version: int
    """Policy version that sampled the completion."""
    messages: list[ChatMessage]
    """The prompt, then every turn of the rollout."""
    tools: str | None = None
    """Tool schemas offered to the model (OpenAI `tools` list, JSON-encoded), if any."""
    reward: float
    metrics: dict[str, float] = {}
    errors: list[ErrorRecord] = []
    truncated: bool = False
    """The last turn hit max_tokens."""


def traces_path(output_dir: Path, step: int) -> Path:
    return Path(output_dir) / "traces" / f"step_{step}.jsonl"


def write_traces(output_dir: Path, step: int, traces: list[RolloutTrace]) -> Path:
    path = traces_path(output_dir, step)
    atomic_write_bytes(path, "".join(t.model_dump_json() + "\n" for t in traces).encode())
    return path


def read_traces(path: Path) -> list[RolloutTrace]:
    return [RolloutTrace.model_validate_json(line) for line in Path(path).read_text().splitlines() if line.strip()]
