"""Running tests in the sandbox and grading a rollout.

Grading never trusts the agent's workspace: it materializes a fresh copy of the task, copies
over only the agent's changes to source files (`src_paths`, never test files, conftest.py or
config), runs the task's F2P + P2P tests there in a new sandbox and reads per-test outcomes
from a report written by a grader-owned plugin. That plugin runs in the same process as the
agent's code, so the report alone proves nothing; a positive reward also needs every other layer
to agree (see the README's "Grading" section):

1. the patch stays in scope (`feature_deletion.scope`, checked before any of its code runs);
2. canaries, test functions with fresh random names appended to a test file, some that must pass
   and some that must fail, are reported as they must be;
3. the report agrees, test by test, with pytest's own terminal summary and with its exit status,
   both read from the parent process;
4. the deleted functions, run by a fresh process on the arguments recorded with the gold code,
   give the recorded results (`feature_deletion.behaviour`), compared in the grader's process.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import tempfile
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from feature_deletion.behaviour import check_behaviour
from feature_deletion.sandbox import Limits, RunResult, Sandbox
from feature_deletion.scope import Invalid, check_scope
from feature_deletion.task import TaskRow, apply_files, is_stripped, materialize

TEST_FILE = re.compile(r"(^|/)(conftest\.py|test_[^/]*\.py|[^/]*_test\.py|pytest\.ini|tox\.ini|setup\.cfg|pyproject\.toml)$")
MAX_FILE_BYTES = 1 << 20
# Grading reads pytest's whole summary (one line per test) from the output's tail.
GRADING_OUTPUT_KB = 16 * 1024
# Summary flags: one line with the node id for every passed, failed, erroring, xfailed and xpassed test.
SUMMARY_FLAGS = "-rfEpxX"
LAYERS = frozenset({"scope", "canaries", "report", "behaviour"})
SUMMARY_WORDS = {"PASSED": "passed", "FAILED": "failed", "ERROR": "error", "XFAIL": "skipped", "XPASS": "skipped"}


def pytest_argv(sb: Sandbox, tests: list[str] | None, summary: bool = False, record: bool = False) -> list[str]:
    flags = [SUMMARY_FLAGS, "--continue-on-collection-errors"] if summary else ["-rfE"]
    flags += ["-p", "fd_calls"] if record else []
    return [sb.python, "-m", "pytest", "-q", *flags, "--tb=short", "-p", "no:cacheprovider", "-p", "fd_report",
            "-o", "addopts=", "-o", "python_files=test_*.py *_test.py tests.py test.py", "--rootdir", sb.workspace,
            *(tests or [])]


def run_pytest(sb: Sandbox, row_import_root: str, tests: list[str] | None, coverage_source: list[str] | None = None,
               wall_s: float | None = None, summary: bool = False,
               record_targets: list[list[str]] | None = None) -> tuple[RunResult, dict[str, str]]:
    """Run pytest in the sandbox; the command's result and {nodeid: outcome} (empty if no report).

    `record_targets` ([module, function] pairs) records their calls into `calls.json` of the outdir."""
    own_out = sb.outdir is None
    if own_out:
        sb.outdir = tempfile.mkdtemp(prefix="fd-out.")
    try:
        out = Path(sb.outdir)
        report = out / "report.json"
        report.unlink(missing_ok=True)
        env = {"PYTHONPATH": sb.pythonpath(row_import_root), "FD_REPORT": f"{sb.out}/report.json"}
        if coverage_source is not None:
            env |= {"FD_COVERAGE": f"{sb.out}/coverage.db",
                    "FD_COVERAGE_SOURCE": ":".join(f"{sb.workspace}/{s}" for s in coverage_source)}
        if record_targets is not None:
            env |= {"FD_CALLS_TARGETS": json.dumps(record_targets), "FD_CALLS_OUT": f"{sb.out}/calls.json"}
        result = sb.run(pytest_argv(sb, tests, summary, record_targets is not None), env=env, wall_s=wall_s)
        outcomes = {}
        if report.is_file():
            try:
                outcomes = json.loads(report.read_text())
            except (json.JSONDecodeError, UnicodeDecodeError):
                outcomes = {}
        return result, outcomes
    finally:
        if own_out:
            shutil.rmtree(sb.outdir, ignore_errors=True)
            sb.outdir = None


@dataclass
class Grade:
    reward: float
    f2p_passed: int
    f2p_total: int
    p2p_passed: int
    p2p_total: int
    applied: list[str] = field(default_factory=list)  # agent changes copied into the grading copy
    ignored: list[str] = field(default_factory=list)  # agent changes dropped (tests, config, outside src)
    invalid: list[dict] = field(default_factory=list)  # Invalid records of every layer that rejected the submission
    failing: list[str] = field(default_factory=list)  # tests that did not pass
    timed_out: bool = False
    output_tail: str = ""

    def metrics(self) -> dict[str, float]:
        return {"f2p_passed": self.f2p_passed, "f2p_total": self.f2p_total, "p2p_passed": self.p2p_passed,
                "p2p_total": self.p2p_total, "f2p_fraction": self.f2p_passed / max(1, self.f2p_total),
                "p2p_broken": self.p2p_total - self.p2p_passed, "resolved": float(self.reward == 1.0),
                "invalid_submission": float(bool(self.invalid)),
                "grading_timed_out": float(self.timed_out)}

    def to_dict(self) -> dict:
        return asdict(self)


def reward_of(f2p_passed: int, f2p_total: int, p2p_passed: int, p2p_total: int) -> float:
    """1.0 when every test passes; all P2P passing: the F2P fraction; any P2P broken: 0."""
    if p2p_passed < p2p_total:
        return 0.0
    return f2p_passed / f2p_total if f2p_total else 0.0


def in_src(row: TaskRow, rel: str) -> bool:
    return any(rel == p or rel.startswith(p.rstrip("/") + "/") for p in row.src_paths)


def _files(root: Path) -> dict[str, Path]:
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not is_stripped(d)]
        for name in filenames:
            path = Path(dirpath) / name
            found[str(path.relative_to(root))] = path
    return found


def agent_changes(row: TaskRow, reference: Path, agent_dir: Path) -> tuple[dict[str, bytes | None], list[str]]:
    """Changed/new/removed files of the agent's workspace relative to the task's start state,
    split into what grading applies (source files) and what it ignores."""
    ref, new = _files(reference), _files(agent_dir)
    keep: dict[str, bytes | None] = {}
    ignored: list[str] = []
    for rel in sorted(set(ref) | set(new)):
        if rel.startswith(".git/"):
            continue
        a, b = ref.get(rel), new.get(rel)
        if b is not None and (b.is_symlink() or not b.is_file()):
            ignored.append(rel)
            continue
        if a is not None and b is not None and a.read_bytes() == b.read_bytes():
            continue
        if b is not None and b.stat().st_size > MAX_FILE_BYTES:
            ignored.append(rel)
            continue
        if not in_src(row, rel) or TEST_FILE.search(rel) or not (rel.endswith(".py") or b is None):
            ignored.append(rel)
            continue
        keep[rel] = None if b is None else b.read_bytes()
    return keep, ignored


def plant_canaries(root: Path, row: TaskRow) -> dict[str, str]:
    """Append grader-owned tests with fresh random names to the first F2P test file of the grading
    copy: {node id: the outcome it must have}. Their names and count change at every grading."""
    rel = row.f2p[0].split("::", 1)[0]
    expected: dict[str, str] = {}
    lines = ["", ""]
    for _ in range(2 + secrets.randbelow(3)):
        name = f"test_{secrets.token_hex(6)}"
        a, b = secrets.randbelow(10**6), 10**6 + secrets.randbelow(10**6)
        kind = secrets.randbelow(4)
        if kind == 0:
            lines += [f"def {name}():", f"    assert {a} + {b} == {a + b}", ""]
        elif kind == 1:
            lines += [f"def {name}():", f"    assert sorted([{b}, {a}]) == [{a}, {b}]", ""]
        elif kind == 2:
            lines += [f"def {name}():", f"    assert {a} == {b}", ""]
        else:
            lines += [f"def {name}():", f"    raise ValueError({a})", ""]
        expected[f"{rel}::{name}"] = "passed" if kind < 2 else "failed"
    if set(expected.values()) != {"passed", "failed"}:
        return plant_canaries(root, row)
    path = root / rel
    path.write_text(path.read_text() + "\n".join(lines))
    return expected


def summary_outcomes(output: str, nodeids: list[str]) -> dict[str, str]:
    """{node id: outcome} from pytest's short test summary (ERROR wins over FAILED for one test).

    The summary is one block of entries after its header; an entry's message may go on over indented
    or empty lines (pytest prints whole multi-line messages when it thinks it runs in CI). The block
    ends at its first other line (pytest's final counts), so lines printed after it (by a finaliser,
    say) are not read; a second header means something printed a summary of its own, and nothing is
    read at all."""
    lines = output.splitlines()
    headers = [i for i, line in enumerate(lines) if re.match(r"=+ short test summary info =+$", line)]
    if len(headers) != 1:
        return {}
    known = sorted(nodeids, key=len, reverse=True)
    found: dict[str, str] = {}
    for line in lines[headers[0] + 1:]:
        if not line.strip() or line[0].isspace():
            continue
        word, _, rest = line.partition(" ")
        if word not in SUMMARY_WORDS:
            break
        node = rest if rest in found or rest in nodeids else next(
            (k for k in known if rest.startswith(k + " - ")), None)
        if node is not None and found.get(node) != "error":
            found[node] = SUMMARY_WORDS[word]
    return found


def check_canaries(canaries: dict[str, str], outcomes: dict[str, str]) -> list[Invalid]:
    wrong = [n for n, want in canaries.items() if outcomes.get(n) != want]
    return [Invalid(code="canary", message=(
        f"{len(wrong)} of {len(canaries)} grader canaries were reported wrongly: the test run was tampered with"))
    ] if wrong else []


def check_report(row: TaskRow, canaries: dict[str, str], result: RunResult, outcomes: dict[str, str]) -> list[Invalid]:
    """The report equal, test by test, to pytest's own summary, and pytest's exit status as it must be."""
    errors = []
    nodeids = row.tests + list(canaries)
    summary = summary_outcomes(result.stdout, nodeids)
    for n in nodeids:
        reported, printed = outcomes.get(n), summary.get(n)
        if (reported == "passed") != (printed == "passed") or \
                (reported in ("failed", "error")) != (printed in ("failed", "error")):
            errors.append(Invalid(code="report_mismatch", message=(
                f"the report says {reported} and pytest's own summary says {printed} for {n}")))
            break
    want = 1 if "failed" in canaries.values() else 0
    if result.returncode != want:
        errors.append(Invalid(code="exit_status", message=(
            f"pytest exited with status {result.returncode}; with these outcomes it must be {want}")))
    return errors


def grade(row: TaskRow, tasks_dir: Path, agent_dir: Path | None, runner: Path | None,
          limits: Limits | None = None, isolation: str = "namespace", changes: dict[str, bytes | None] | None = None,
          layers: frozenset[str] = LAYERS) -> Grade:
    """Grade the agent's workspace `agent_dir` (None: the untouched task; `changes`: explicit files).

    `layers` leaves checks out only to measure them: their cost, and what the report alone would pay."""
    limits = replace(limits or Limits(), output_kb=max((limits or Limits()).output_kb, GRADING_OUTPUT_KB))
    with tempfile.TemporaryDirectory(prefix="fd-grade.") as tmp:
        fresh = materialize(row, tasks_dir, Path(tmp) / "repo", git=False)
        ignored: list[str] = []
        if changes is None:
            if agent_dir is None:
                changes = {}
            else:
                changes, ignored = agent_changes(row, fresh, Path(agent_dir))
        base = Grade(reward=0.0, f2p_passed=0, f2p_total=len(row.f2p), p2p_passed=0, p2p_total=len(row.p2p),
                     applied=sorted(changes), ignored=ignored, failing=row.tests)
        invalid = check_scope(row, changes) if "scope" in layers else []
        if invalid:
            return replace(base, invalid=[i.model_dump() for i in invalid])
        apply_files(fresh, changes)
        canaries = plant_canaries(fresh, row) if "canaries" in layers else {}
        sb = Sandbox(fresh, runner=runner, limits=limits, isolation=isolation)  # type: ignore[arg-type]
        result, outcomes = run_pytest(sb, row.import_root, row.tests + sorted(canaries), summary=True)
        f2p = sum(outcomes.get(t) == "passed" for t in row.f2p)
        p2p = sum(outcomes.get(t) == "passed" for t in row.p2p)
        reward = reward_of(f2p, len(row.f2p), p2p, len(row.p2p))
        # An honest failure needs no proof; a claimed success must survive every layer.
        if reward > 0:
            invalid = check_canaries(canaries, outcomes) + (
                check_report(row, canaries, result, outcomes) if "report" in layers else []) + (
                check_behaviour(row, fresh, runner, limits, isolation) if "behaviour" in layers else [])
    return replace(base, reward=0.0 if invalid else reward, f2p_passed=f2p, p2p_passed=p2p,
                   invalid=[i.model_dump() for i in invalid], failing=[t for t in row.tests if outcomes.get(t) != "passed"],
                   timed_out=result.timed_out, output_tail=result.output[-2000:])
