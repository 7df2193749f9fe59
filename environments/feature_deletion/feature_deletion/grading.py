"""Running tests in the sandbox and grading a rollout.

Grading never trusts the agent's workspace: it materializes a fresh copy of the task, copies
over only the agent's changes to source files (`src_paths`, never test files, conftest.py or
config), runs the task's F2P + P2P tests there in a new sandbox and reads per-test outcomes
from a report written by a grader-owned plugin.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from feature_deletion.sandbox import Limits, RunResult, Sandbox
from feature_deletion.task import TaskRow, apply_files, is_stripped, materialize

TEST_FILE = re.compile(r"(^|/)(conftest\.py|test_[^/]*\.py|[^/]*_test\.py|pytest\.ini|tox\.ini|setup\.cfg|pyproject\.toml)$")
# Tokens that let code under test tamper with the test run; flagged when the agent adds them.
SUSPICIOUS = ("_pytest", "pytest", "fd_report", "FD_REPORT", "/fdout", "os._exit", "atexit", "sys.settrace",
              "sys.setprofile", "faulthandler", "signal.", "os.kill", "sys.exit")
MAX_FILE_BYTES = 1 << 20


def pytest_argv(sb: Sandbox, tests: list[str] | None) -> list[str]:
    return [sb.python, "-m", "pytest", "-q", "-rfE", "--tb=short", "-p", "no:cacheprovider", "-p", "fd_report",
            "-o", "addopts=", "-o", "python_files=test_*.py *_test.py tests.py test.py", "--rootdir", sb.workspace,
            *(tests or [])]


def run_pytest(sb: Sandbox, row_import_root: str, tests: list[str] | None, coverage_source: list[str] | None = None,
               wall_s: float | None = None) -> tuple[RunResult, dict[str, str]]:
    """Run pytest in the sandbox; the command's result and {nodeid: outcome} (empty if no report)."""
    own_out = sb.outdir is None
    if own_out:
        sb.outdir = tempfile.mkdtemp(prefix="fd-out.")
    try:
        out = Path(sb.outdir)
        report = out / "report.json"
        report.unlink(missing_ok=True)
        pythonpath = f"{sb.helpers}:{sb.workspace}" + (f"/{row_import_root}" if row_import_root else "")
        env = {"PYTHONPATH": pythonpath, "FD_REPORT": f"{sb.out}/report.json"}
        if coverage_source is not None:
            env |= {"FD_COVERAGE": f"{sb.out}/coverage.db",
                    "FD_COVERAGE_SOURCE": ":".join(f"{sb.workspace}/{s}" for s in coverage_source)}
        result = sb.run(pytest_argv(sb, tests), env=env, wall_s=wall_s)
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
    suspicious: list[str] = field(default_factory=list)
    failing: list[str] = field(default_factory=list)  # tests that did not pass
    timed_out: bool = False
    output_tail: str = ""

    def metrics(self) -> dict[str, float]:
        return {"f2p_passed": self.f2p_passed, "f2p_total": self.f2p_total, "p2p_passed": self.p2p_passed,
                "p2p_total": self.p2p_total, "f2p_fraction": self.f2p_passed / max(1, self.f2p_total),
                "p2p_broken": self.p2p_total - self.p2p_passed, "suspicious_patch": float(bool(self.suspicious)),
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


def suspicious_additions(row: TaskRow, changes: dict[str, bytes | None]) -> list[str]:
    flagged = []
    for rel, content in changes.items():
        if content is None:
            continue
        text = content.decode("utf-8", "replace")
        original = row.gold_files.get(rel, "")
        for token in SUSPICIOUS:
            if token in text and token not in original:
                flagged.append(f"{rel}: adds {token!r}")
    return flagged


def grade(row: TaskRow, tasks_dir: Path, agent_dir: Path | None, runner: Path | None,
          limits: Limits | None = None, isolation: str = "namespace", changes: dict[str, bytes | None] | None = None) -> Grade:
    """Grade the agent's workspace `agent_dir` (None: the untouched task; `changes`: explicit files)."""
    limits = limits or Limits()
    with tempfile.TemporaryDirectory(prefix="fd-grade.") as tmp:
        fresh = materialize(row, tasks_dir, Path(tmp) / "repo", git=False)
        ignored: list[str] = []
        if changes is None:
            if agent_dir is None:
                changes = {}
            else:
                changes, ignored = agent_changes(row, fresh, Path(agent_dir))
        suspicious = suspicious_additions(row, changes)
        apply_files(fresh, changes)
        sb = Sandbox(fresh, runner=runner, limits=limits, isolation=isolation)  # type: ignore[arg-type]
        result, outcomes = run_pytest(sb, row.import_root, row.tests)
    f2p = sum(outcomes.get(t) == "passed" for t in row.f2p)
    p2p = sum(outcomes.get(t) == "passed" for t in row.p2p)
    reward = 0.0 if suspicious else reward_of(f2p, len(row.f2p), p2p, len(row.p2p))
    return Grade(reward=reward, f2p_passed=f2p, f2p_total=len(row.f2p), p2p_passed=p2p, p2p_total=len(row.p2p),
                 applied=sorted(changes), ignored=ignored, suspicious=suspicious,
                 failing=[t for t in row.tests if outcomes.get(t) != "passed"], timed_out=result.timed_out,
                 output_tail=result.output[-2000:])
