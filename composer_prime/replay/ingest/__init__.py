"""Trace formats, each read into `Step`s with an `IngestReport` of what was skipped and why."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from composer_prime.errors import UserError
from composer_prime.replay.chat_semantics import StepChecker
from composer_prime.replay.ingest import claude_code, codex, composer_prime, openai_chat, verifiers_trace
from composer_prime.replay.steps import IngestReport, Step

READERS: dict[str, Callable[[Path, IngestReport], list[Step]]] = {
    claude_code.FORMAT: claude_code.read,
    codex.FORMAT: codex.read,
    openai_chat.FORMAT: openai_chat.read,
    verifiers_trace.FORMAT: verifiers_trace.read,
    composer_prime.FORMAT: composer_prime.read,
}


def files_of(path: Path) -> list[Path]:
    """A file, or every `*.jsonl` under a directory (sorted, so step order is stable)."""
    path = Path(path)
    if path.is_dir():
        return sorted(p for p in path.rglob("*.jsonl") if p.is_file())
    if path.is_file():
        return [path]
    raise UserError(f"trace source {path} does not exist")


def ingest(path: Path, format: str) -> tuple[list[Step], IngestReport]:
    if format not in READERS:
        raise UserError(f"unknown trace format {format!r}; known: {', '.join(sorted(READERS))}")
    report, steps = IngestReport(), []
    for file in files_of(path):
        steps.extend(READERS[format](file, report))
    return _valid(steps, report), report


def _valid(steps: list[Step], report: IngestReport) -> list[Step]:
    """Each step once, and only steps an OpenAI endpoint accepts. An ingester pairs calls and results itself (steps.py), so a
    step dropped here is an ingester bug: it is counted as `invalid_state:<rule>` rather than sent
    to teachers that would each answer it with a 400."""
    kept, seen, checker = [], set(), StepChecker()
    for step in steps:
        if step.id in seen:  # the same record logged twice (same source, trace and turn)
            report.skip("duplicate_step")
            report.steps -= 1
            continue
        seen.add(step.id)
        found = checker.violations(step)
        if found:
            report.skip(f"invalid_state:{found[0].split(' ', 1)[0]}")
            report.steps -= 1
            continue
        kept.append(step)
    return kept
