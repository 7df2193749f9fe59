"""Grading layer 4: behaviour checked by a trusted process.

When a task is validated with the gold code, the fail-to-pass tests run with a recorder
(`_sandbox_files/fd_calls.py`) that keeps every call of the deleted functions whose arguments
and result (or raised exception type) serialise faithfully, with exact types; calls that a replay
of the gold code does not reproduce (randomness, state left by other tests) are dropped. The calls
are stored in the task row (`calls`, `calls_status`), which never enters the sandbox.

At grading, a fresh sandboxed process imports the agent's code and runs the deleted functions on
the recorded arguments only; the grader compares the encoded results in its own process. An
always-equal object, a stub left in place behind a forged test run, or a result of another type
gives a different encoding.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from feature_deletion.sandbox import Limits, Sandbox
from feature_deletion.scope import Invalid
from feature_deletion.task import TaskRow

MARKER = "fd-calls-results:"  # what _sandbox_files/fd_calls.py prints before its results


def module_of(row: TaskRow, rel: str) -> str:
    """The dotted module name of a repository file, as the tests import it."""
    path = Path(rel).relative_to(row.import_root) if row.import_root else Path(rel)
    parts = list(path.with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def targets_of(row: TaskRow) -> list[list[str]] | None:
    """[module, function] of every deleted function; None when a target is a method or a class,
    whose calls need an instance that does not serialise."""
    if any(t.kind != "function" or "." in t.qualname for t in row.deletion.targets):
        return None
    return [[module_of(row, t.file), t.qualname] for t in row.deletion.targets]


def replay(sb: Sandbox, row: TaskRow, calls: list[dict]) -> list | None:
    """Encoded outcomes of the recorded calls on the code in `sb`'s workdir (None: no result came back)."""
    with tempfile.TemporaryDirectory(prefix="fd-replay.") as out:
        sb.outdir = out
        try:
            inputs = [{"target": c["target"], "args": c["args"], "kwargs": c["kwargs"]} for c in calls]
            (Path(out) / "calls.json").write_text(json.dumps(inputs))
            result = sb.run([sb.python, f"{sb.helpers}/fd_calls.py", f"{sb.out}/calls.json"],
                            env={"PYTHONPATH": sb.pythonpath(row.import_root)})
        finally:
            sb.outdir = None
    lines = [ln for ln in result.stdout.splitlines() if ln.startswith(MARKER)]
    try:
        outcomes = json.loads(lines[-1][len(MARKER):]) if lines else None
    except json.JSONDecodeError:
        return None
    return outcomes if isinstance(outcomes, list) and len(outcomes) == len(calls) else None


def check_behaviour(row: TaskRow, workdir: Path, runner: Path | None, limits: Limits,
                    isolation: str = "namespace") -> list[Invalid]:
    if not row.calls:
        return []
    sb = Sandbox(workdir, runner=runner, limits=limits, isolation=isolation)  # type: ignore[arg-type]
    outcomes = replay(sb, row, row.calls)
    if outcomes is None:
        return [Invalid(code="behaviour", message="replaying the recorded calls of the deleted functions gave no result")]
    wrong = [c for c, got in zip(row.calls, outcomes) if got != c["result"]]
    if not wrong:
        return []
    first = wrong[0]
    return [Invalid(code="behaviour", message=(
        f"{len(wrong)} of {len(row.calls)} recorded calls of the deleted functions give a different result than the "
        f"original (exact types compared), e.g. {'.'.join(first['target'])} with arguments "
        f"{json.dumps(first['args'])[:200]}"))]
