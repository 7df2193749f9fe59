"""Preference pairs: the trace-replay pipeline writes them, the trainer's preference channel reads them.

One JSON object per line (JSONL), loadable as is with `datasets.load_dataset("json", ...)`:
nested fields have one fixed shape, and free-form parts (tool schemas, tool-call arguments)
are JSON strings. A pair is one step of a trace: the conversation up to that step (`state`),
the action the teachers agreed on (`chosen`) and the student's own action there (`rejected`).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from composer_prime.chat import Action, ChatMessage
from composer_prime.errors import UserError

SCHEMA_VERSION = 1


class TeacherAnswer(BaseModel):
    """One teacher's reply at the step, and what it cost."""

    model_config = ConfigDict(extra="forbid")

    teacher: str
    """Name of the teacher in the replay config."""
    model: str
    action: Action | None = None
    """None when the call failed (see `error`)."""
    canonical: str | None = None
    """The action in canonical form, as compared for agreement."""
    agrees: bool = False
    """Whether this answer is part of the consensus that became `chosen`."""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    error: str | None = None


class Provenance(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str
    """Trace file (or URI) the step came from."""
    format: str
    """Ingester that read it: claude-code, openai-chat, verifiers, composer-prime, ..."""
    trace_id: str
    step: int
    """Index of the student's action among the trace's assistant turns."""
    student: str = ""
    """Model that produced the trace, when known."""
    k: int
    """Teachers that had to agree."""
    n: int
    """Teachers asked."""
    teachers: list[TeacherAnswer] = []
    student_entropy: float | None = None
    """Mean token entropy of the student at this step, when value-of-information gating measured it."""


class PreferencePair(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    id: str
    """Stable id, e.g. a hash of (source, trace_id, step)."""
    state: list[ChatMessage]
    """The conversation before the action: system prompt, user turns, earlier actions and tool results."""
    tools: str | None = None
    """Tool schemas available at this step (OpenAI `tools` list, JSON-encoded), if any."""
    chosen: Action
    rejected: Action
    provenance: Provenance


def write_pairs(path: Path, pairs: list[PreferencePair]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        for pair in pairs:
            f.write(pair.model_dump_json() + "\n")


def read_pairs(path: Path) -> list[PreferencePair]:
    """All pairs of a JSONL file; UserError naming the line on the first bad one."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"pairs file {path} does not exist")
    pairs = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            pair = PreferencePair.model_validate_json(line)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(map(str, first["loc"]))
            raise UserError(f"{path}:{number}: not a preference pair ({where}: {first['msg']})") from None
        if pair.schema_version != SCHEMA_VERSION:
            raise UserError(f"{path}:{number}: pair schema v{pair.schema_version}, this reader reads v{SCHEMA_VERSION}")
        pairs.append(pair)
    return pairs
