"""Running tests in the sandbox and grading a rollout.

Grading never trusts the agent's workspace: it materializes a fresh copy of the task and copies over
only the agent's changes to source files (`src_paths`, never test files, conftest.py or config). The
verdict is decided in this process, on values that no process running agent code decides:

1. the patch stays in scope (`feature_deletion.scope`, an allow-list checked before any of its code runs);
2. the task's F2P + P2P tests run in a sandbox, under the grader's audit hook (`_sandbox_files/fd_guard.py`)
   on the lines the agent wrote, with canaries among them; their report is a *necessary* condition only:
   it must agree with the canaries, pytest's own summary and its exit status;
3. the verdict: the task's checks, programs recorded on the gold code plus held-out variants whose
   answers never enter a sandbox, replayed (beside the test run) on a fresh copy holding only the package's source
   files and compared here (`feature_deletion.behaviour`). They are a gate: any discriminating or held-out step answered
   unlike gold is reward 0; the reward of a submission that passes it is its F2P fraction.

Any exception while grading is reward 0 with a `grading_error` record (`safe_grade`), never a crash.
"""

from __future__ import annotations

import ast
import json
import re
import secrets
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from feature_deletion.behaviour import GUARD_EXIT, Verdict, check_behaviour
from feature_deletion.fstree import Quota, QuotaExceeded, temporary_directory, walk
from feature_deletion.sandbox import Limits, RunResult, Sandbox, read_output
from feature_deletion.scope import Invalid, read_scope
from feature_deletion.task import TaskRow, apply_files, is_stripped, is_test_path, materialize

MAX_FILE_BYTES = 1 << 20
# Grading reads pytest's whole summary (one line per test) from the output's tail.
GRADING_OUTPUT_KB = 16 * 1024
# report.json is one short entry per test (about 100 bytes): 4 MiB holds a suite of 40,000; a longer one is no report
REPORT_MAX_BYTES = 4 * 1024 * 1024
# A short summary longer than this is not pytest's (red team 3, H4: 200,000 entries printed into it): a test has an
# entry, one more for an error in its teardown, one per failed subtest; a file that fails to collect has one
ENTRIES_PER_TEST, MAX_FILE_ENTRIES = 16, 64
# Summary flags: one line with the node id for every passed, failed, erroring, xfailed and xpassed test.
SUMMARY_FLAGS = "-rfEpxX"
LAYERS = frozenset({"scope", "guard", "canaries", "report", "behaviour"})
SUMMARY_WORDS = {"PASSED": "passed", "FAILED": "failed", "ERROR": "error", "XFAIL": "skipped", "XPASS": "skipped",
                 "SUBFAILED": "failed", "SUBPASSED": None}
# A summary entry: its word, then (subtests) the subtest's message and parameters, then the node id.
SUMMARY_ENTRY = re.compile(r"(?P<word>[A-Z]+)(?P<context>(\[[^\]]*\])?( ?\([^)]*\))?)? (?P<rest>.*)$")
WORKSPACE_QUOTA = Quota()  # what the agent's workspace may hold for grading to read it


def pytest_argv(sb: Sandbox, tests: list[str] | None, summary: bool = False, record: bool = False,
                guard: bool = False) -> list[str]:
    flags = ["-p", "fd_guard"] if guard else []
    flags += [SUMMARY_FLAGS, "--continue-on-collection-errors"] if summary else ["-rfE"]
    flags += ["-p", "fd_calls"] if record else []
    return [sb.python, "-m", "pytest", "-q", *flags, "--tb=short", "-p", "no:cacheprovider", "-p", "fd_report",
            "-o", "addopts=", "-o", "python_files=test_*.py *_test.py tests.py test.py", "--rootdir", sb.workspace,
            *(tests or [])]


def run_pytest(sb: Sandbox, row_import_root: str, tests: list[str] | None, coverage_source: list[str] | None = None,
               wall_s: float | None = None, summary: bool = False, record: dict | None = None,
               guard: dict[str, list[list[int]]] | None = None,
               test_files: tuple[str, ...] = ()) -> tuple[RunResult, dict[str, str]]:
    """Run pytest in the sandbox; the command's result and {nodeid: outcome} (empty if no report).

    `record` ({"targets", "src"}, _sandbox_files/fd_calls.py) records the tests' programs into `calls.json`
    of the outdir; `guard` ({repository file: [[first, last], ...]}) installs the grader's audit hook on
    those lines before anything else loads, with `test_files` (repository paths) the only code that may start
    processes once the agent's code is loaded."""
    with temporary_directory("fd-out.") as own:
        if sb.outdir is None:
            sb.outdir = own
            owned = True
        else:
            owned = False
        try:
            out = Path(sb.outdir)
            report = out / "report.json"
            report.unlink(missing_ok=True)
            env = {"PYTHONPATH": sb.pythonpath(row_import_root), "FD_REPORT": f"{sb.out}/report.json"}
            if coverage_source is not None:
                env |= {"FD_COVERAGE": f"{sb.out}/coverage.db",
                        "FD_COVERAGE_SOURCE": ":".join(f"{sb.workspace}/{s}" for s in coverage_source)}
            if record is not None:
                env |= {"FD_CALLS_SPEC": json.dumps(record | {"root": sb.workspace}),
                        "FD_CALLS_OUT": f"{sb.out}/calls.json"}
            if guard is not None:
                env |= {"FD_GUARD": json.dumps({f"{sb.workspace}/{rel}": spans for rel, spans in guard.items()}),
                        "FD_GUARD_TESTS": json.dumps([f"{sb.workspace}/{rel}" for rel in test_files])}
            argv = pytest_argv(sb, tests, summary, record is not None, guard is not None)
            result = sb.run(argv, env=env, wall_s=wall_s)
            outcomes = {}
            text = read_output(report, REPORT_MAX_BYTES)
            if text is not None:
                try:
                    outcomes = json.loads(text)
                except (json.JSONDecodeError, RecursionError):
                    outcomes = {}
            if not isinstance(outcomes, dict) or not all(isinstance(o, str) for o in outcomes.values()):
                outcomes = {}  # what a conftest of the agent's wrote in its place: never kept (Workspace.last_outcomes)
            return result, outcomes
        finally:
            if owned:
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
    verdict: dict = field(default_factory=dict)  # behaviour.Verdict of the checks, when they ran

    def metrics(self) -> dict[str, float]:
        checks = Verdict(**self.verdict).metrics() if self.verdict else Verdict().metrics()
        return {"f2p_passed": self.f2p_passed, "f2p_total": self.f2p_total, "p2p_passed": self.p2p_passed,
                "p2p_total": self.p2p_total, "f2p_fraction": self.f2p_passed / max(1, self.f2p_total),
                "p2p_broken": self.p2p_total - self.p2p_passed, "resolved": float(self.reward == 1.0),
                "invalid_submission": float(bool(self.invalid)),
                "grading_timed_out": float(self.timed_out)} | checks

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
    """Regular files and links under `root` (not .git, caches or build outputs), within the workspace quota."""
    found = {}
    skipped: list[str] = []
    for rel, st in walk(root, WORKSPACE_QUOTA):
        parts = rel.split("/")
        if any(rel == s or rel.startswith(s + "/") for s in skipped):
            continue
        if is_stripped(parts[-1]):
            skipped.append(rel)
            continue
        if not (st.st_mode & 0o040000):
            found[rel] = root / rel
    return found


def agent_changes(row: TaskRow, reference: Path, agent_dir: Path) -> tuple[dict[str, bytes | None], list[str]]:
    """Changed/new/removed files of the agent's workspace relative to the task's start state,
    split into what grading applies (source files) and what it ignores. A workspace over its quota
    (too deep, too many entries, too large) raises QuotaExceeded."""
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
        if not in_src(row, rel) or is_test_path(rel) or not (rel.endswith(".py") or b is None):
            ignored.append(rel)
            continue
        keep[rel] = None if b is None else b.read_bytes()
    return keep, ignored


CANARY_FAILURE = 'raise NotImplementedError("this feature was deleted; rebuild it")'


def plant_canaries(root: Path, row: TaskRow) -> dict[str, str]:
    """Insert grader-owned tests into the first F2P test file of the grading copy: {node id: the outcome it
    must have}. Their number, names, places and bodies change at every grading, and they look like the
    file's own tests: names made of the words of its tests' names, bodies copied from its module-level
    pass-to-pass tests (a failing one ends as a deleted feature does), inserted between its statements."""
    rel = row.f2p[0].split("::", 1)[0]
    path = root / rel
    text = path.read_text()
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    p2p = {t.split("::", 1)[1] for t in row.p2p if t.startswith(rel + "::") and t.count("::") == 1}
    bodies = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in p2p and not n.decorator_list
              and not n.args.args and not n.args.posonlyargs and not n.args.kwonlyargs]
    names = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    words = sorted({w for n in names if n.startswith("test") for w in n.split("_")[1:] if w.isidentifier()}) or \
        ["value", "case", "result", "empty", "basic"]
    first_code = next((n.lineno for n in tree.body if not isinstance(n, (ast.Import, ast.ImportFrom, ast.Expr))),
                      len(lines) + 1)
    gaps = [n.end_lineno for n in tree.body if n.end_lineno >= first_code - 1] or [len(lines)]
    expected: dict[str, str] = {}
    inserts: list[tuple[int, str]] = []
    kinds = ["passed", "failed"] + [("passed", "failed")[secrets.randbelow(2)] for _ in range(secrets.randbelow(3))]
    for want in kinds:
        name = "test_" + "_".join(secrets.choice(words) for _ in range(2 + secrets.randbelow(2)))
        while name in names:
            name += "_" + secrets.choice(words)
        names.add(name)
        if bodies:
            source = ast.get_source_segment(text, secrets.choice(bodies)) or ""
            header, _, body = source.partition("\n")
            indent = re.match(r"\s*", body).group(0) or "    "
            source = f"def {name}():\n{body}" + (f"\n{indent}{CANARY_FAILURE}" if want == "failed" else "")
        else:
            a, b = secrets.randbelow(10**6), 10**6 + secrets.randbelow(10**6)
            check = f"assert {a} + {b} == {a + b}" if want == "passed" else CANARY_FAILURE
            source = f"def {name}():\n    value = {a} + {b}\n    {check}"
        inserts.append((secrets.choice(gaps), "\n\n" + source + "\n"))
        expected[f"{rel}::{name}"] = want
    for after, source in sorted(inserts, key=lambda x: x[0], reverse=True):
        lines.insert(after, source)
    path.write_text("".join(lines))
    return expected


def summary_outcomes(output: str, nodeids: list[str]) -> dict[str, str]:
    """{node id: outcome} from pytest's short test summary (ERROR wins over FAILED; a failed subtest fails its test).

    The summary is one block of entries after its header; an entry's message may go on over indented
    or empty lines (pytest prints whole multi-line messages when it thinks it runs in CI). The block
    ends at its first other line (pytest's final counts), so lines printed after it (by a finaliser,
    say) are not read; a second header means something printed a summary of its own, and nothing is
    read at all; nor is it when the block has more entries than the run's tests could make."""
    lines = output.splitlines()
    headers = [i for i, line in enumerate(lines) if re.match(r"=+ short test summary info =+$", line)]
    if len(headers) != 1:
        return {}
    known = set(nodeids)
    found: dict[str, str] = {}
    entries = 0
    for line in lines[headers[0] + 1:]:
        if not line.strip() or line[0].isspace():
            continue
        m = SUMMARY_ENTRY.match(line)
        if m is None or m["word"] not in SUMMARY_WORDS:
            break
        entries += 1
        if entries > ENTRIES_PER_TEST * len(known) + MAX_FILE_ENTRIES:
            return {}
        outcome, rest = SUMMARY_WORDS[m["word"]], m["rest"]
        node = rest if rest in known else _entry_node(rest, known)
        if node is None or outcome is None or found.get(node) == "error":
            continue
        if found.get(node) == "failed" and outcome == "passed":
            continue  # a test whose subtest failed stays failed
        found[node] = outcome
    return found


def _entry_node(rest: str, known: set[str]) -> str | None:
    """The known node id that an entry "<node id> - <message>" names (a node id may hold " - " itself)."""
    cuts, at = [], rest.find(" - ")
    while at != -1:
        cuts.append(at)
        at = rest.find(" - ", at + 1)
    return next((rest[:at] for at in reversed(cuts) if rest[:at] in known), None)  # the longest, as pytest wrote it


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


def guard_tripped(returncode: int, output: str) -> list[Invalid]:
    if returncode != GUARD_EXIT:
        return []
    line = next((ln for ln in output.splitlines() if ln.startswith("fd-guard:")), "fd-guard: (no message)")
    return [Invalid(code="guard", message=line[len("fd-guard: "):][:300])]


def grade(row: TaskRow, tasks_dir: Path, agent_dir: Path | None, runner: Path | None,
          limits: Limits | None = None, isolation: str = "namespace", changes: dict[str, bytes | None] | None = None,
          layers: frozenset[str] = LAYERS) -> Grade:
    """Grade the agent's workspace `agent_dir` (None: the untouched task; `changes`: explicit files).

    `layers` leaves checks out only to measure them: their cost, and what the report alone would pay."""
    limits = replace(limits or Limits(), output_kb=max((limits or Limits()).output_kb, GRADING_OUTPUT_KB))
    base = Grade(reward=0.0, f2p_passed=0, f2p_total=len(row.f2p), p2p_passed=0, p2p_total=len(row.p2p),
                 failing=row.tests)
    if "behaviour" in layers and row.checks is None:
        return replace(base, invalid=[Invalid(code="ungradable", message=(
            f"task {row.id} has no checks ({row.checks_status or 'none recorded'}): it cannot be graded soundly; "
            "rebuild it with fd-build")).model_dump()])
    with temporary_directory("fd-grade.") as tmp, ThreadPoolExecutor(1, thread_name_prefix="fd-replay") as beside:
        fresh = materialize(row, tasks_dir, Path(tmp) / "repo", git=False)
        ignored: list[str] = []
        if changes is None:
            if agent_dir is None:
                changes = {}
            else:
                try:
                    changes, ignored = agent_changes(row, fresh, Path(agent_dir))
                except QuotaExceeded as exc:
                    return quota_grade(row, str(exc))
        base = replace(base, applied=sorted(changes), ignored=ignored)
        invalid, lines = read_scope(row, changes)  # one parse for both: it was a fifth of a short grading
        if invalid and "scope" in layers:
            return replace(base, invalid=[i.model_dump() for i in invalid])
        apply_files(fresh, changes)
        # The checks' replay needs nothing of the test run (a source-only copy of its own, a sandbox of its own, no
        # channel between the two: `sandbox`): it runs beside the tests, so that a grading takes the longer of the two
        # rather than their sum, and is read only where the tests pass.
        replay = beside.submit(check_behaviour, row, tasks_dir, runner, limits, isolation, changes, lines) \
            if "behaviour" in layers else None
        canaries = plant_canaries(fresh, row) if "canaries" in layers else {}
        # the tests under UTC, the checks' replay under a drawn zone (`sandbox.zones`)
        sb = Sandbox(fresh, runner=runner, limits=limits, isolation=isolation, zone="UTC")  # type: ignore[arg-type]
        tests = tuple(sorted(rel for rel in _files(fresh) if rel.endswith(".py") and is_test_path(rel)))
        result, outcomes = run_pytest(sb, row.import_root, row.tests + sorted(canaries), summary=True,
                                      guard=lines if "guard" in layers else None, test_files=tests)
        f2p = sum(outcomes.get(t) == "passed" for t in row.f2p)
        p2p = sum(outcomes.get(t) == "passed" for t in row.p2p)
        reward = reward_of(f2p, len(row.f2p), p2p, len(row.p2p))
        verdict = None
        # The hook's refusal is recorded whatever the outcome (its own line may be lost in pytest's capture: the
        # exit status names it), so that a rollout's trace says why; an honest failure needs no other proof, and a
        # claimed success must survive every layer and the checks' gate.
        invalid = guard_tripped(result.returncode, result.output)
        if reward > 0:
            invalid += check_canaries(canaries, outcomes) + (
                check_report(row, canaries, result, outcomes) if "report" in layers else [])
            if replay is not None and not invalid:
                verdict = replay.result()
                invalid += behaviour_invalid(verdict)
                reward = min(reward, verdict.fraction)
    return replace(base, reward=0.0 if invalid else reward, f2p_passed=f2p, p2p_passed=p2p,
                   invalid=[i.model_dump() for i in invalid], failing=[t for t in row.tests if outcomes.get(t) != "passed"],
                   timed_out=result.timed_out, output_tail=result.output[-2000:],
                   verdict=verdict.to_dict() if verdict is not None else {})


def behaviour_invalid(verdict: Verdict) -> list[Invalid]:
    if verdict.guard:
        return [Invalid(code="guard", message="the grader's audit hook ended the replay of the checks: the code "
                        "did something it may not (reflection, dynamic code, processes, writing files)")]
    if verdict.deadline:
        return [Invalid(code="replay_deadline", message=(
            "a step of the checks' replay ran past its deadline: the code caught the timeout raised in it (a bare "
            "`except:`) or held the interpreter; the replay was ended"))]
    if verdict.missing:
        return [Invalid(code="behaviour", message=(
            f"{verdict.missing} check programs gave no result (the code crashed or hung the replay)"))]
    if verdict.state:
        return [Invalid(code="package_state", message=(
            f"the package's state differs from the original's ({verdict.state}): a module-level value, or a public "
            "attribute of an object the checks made, is not what the original leaves"))]
    if verdict.unhooked:
        return [Invalid(code="behaviour_unhooked", message=(
            "the checks' replay with no audit hook, as a user's process runs the code, answered unlike the original "
            "where the hooked replay did not: the code behaves otherwise when it finds the grader, or under that "
            f"process's configuration ({verdict.replays[-1]}): {verdict.unhooked}"))]
    if verdict.broke:
        return [Invalid(code="behaviour", message=(
            f"{verdict.broke} checks that the untouched task already passed now give a different result than the "
            f"original, e.g. {verdict.first_mismatch}"))]
    return []


def quota_grade(row: TaskRow, why: str) -> Grade:
    """Reward 0 for a workspace over its quota, which grading does not read."""
    return Grade(reward=0.0, f2p_passed=0, f2p_total=len(row.f2p), p2p_passed=0, p2p_total=len(row.p2p),
                 failing=row.tests, invalid=[Invalid(code="workspace_quota", message=(
                     f"the workspace is over its quota: {why}")).model_dump()])


def safe_grade(row: TaskRow, *args, **kwargs) -> Grade:
    """grade(), with any exception turned into reward 0 and a `grading_error` record: one broken grading never
    ends a run."""
    try:
        return grade(row, *args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - whatever went wrong, this rollout scores 0 and says why
        return Grade(reward=0.0, f2p_passed=0, f2p_total=len(row.f2p), p2p_passed=0, p2p_total=len(row.p2p),
                     failing=row.tests, invalid=[Invalid(code="grading_error", message=(
                         f"grading failed: {type(exc).__name__}: {exc}"[:500])).model_dump()])
