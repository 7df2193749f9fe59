"""composer-prime's own rollouts: `<output>/traces/step_<N>.jsonl`, one RolloutTrace per line
(composer_prime/traces.py). Every assistant message of a rollout is a step of that trace.

Fidelity: a rollout is one linear conversation (no branches); a record is validated whole by
RolloutTrace, so a message with an unknown field or role makes its line `invalid_record`; a rollout
written twice (same trace id in one file) gives the same step ids and ingest keeps one
(`duplicate_step`)."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from composer_prime.replay.steps import IngestReport, Step, steps_from_conversation
from composer_prime.traces import RolloutTrace

FORMAT = "composer-prime"


def read(path: Path, report: IngestReport) -> list[Step]:
    steps: list[Step] = []
    for line in Path(path).read_text(errors="replace").splitlines():
        if not line.strip():
            continue
        report.lines += 1
        try:
            trace = RolloutTrace.model_validate_json(line)
        except ValidationError as exc:
            json_broken = any(e["type"] == "json_invalid" for e in exc.errors())
            report.skip("malformed_line" if json_broken else "invalid_record")
            continue
        try:
            json.loads(trace.tools) if trace.tools else None
        except json.JSONDecodeError:
            report.skip("invalid_tools")
            trace = trace.model_copy(update={"tools": None})
        steps.extend(steps_from_conversation(
            trace.messages, source=str(path), format=FORMAT, trace_id=trace.id, report=report, tools=trace.tools,
            student=f"weight_version={trace.weight_version}",
        ))
    return steps
