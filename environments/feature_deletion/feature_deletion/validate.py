"""`fd-validate [tasks.jsonl]`: every task's gold patch must score 1.0 and the untouched task 0.0.

`--record-checks` first rebuilds every task's checks (feature_deletion.behaviour: programs recorded from its
fail-to-pass tests on the gold code, held-out variants, gold's answers) and rewrites the tasks file; a task
that cannot be graded soundly leaves it, listed with its reason. Malformed rows are reported and counted,
never fatal. Exit status 0 only when every row is valid.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from feature_deletion.behaviour import answer_again, build_checks
from feature_deletion.grading import grade
from feature_deletion.sandbox import Limits
from feature_deletion.scope import check_scope
from feature_deletion.task import UNSOUND, TaskRow, load_rows, runner_for, write_rows


def with_checks(row: TaskRow, tasks_dir: Path, runner: Path, limits: Limits | None = None) -> tuple[TaskRow | None, str]:
    """The row with freshly built checks, or None and why it cannot be graded soundly."""
    if check_scope(row, {k: v.encode() for k, v in row.gold_files.items()}):
        return None, "gold_outside_allow_list"
    checks, status = build_checks(row, tasks_dir, runner, limits or Limits())
    if checks is None:
        return None, status
    return row.model_copy(update={"checks": checks, "checks_status": status}), status


def with_answers(row: TaskRow, tasks_dir: Path, runner: Path, limits: Limits | None = None) -> tuple[TaskRow | None, str]:
    """The row with its kept programs answered again on gold (`behaviour.answer_again`), or None and why."""
    if row.checks is None:
        return None, row.checks_status or "no_checks"
    checks, status = answer_again(row, tasks_dir, runner, limits or Limits())
    if checks is None:
        return None, status
    return row.model_copy(update={"checks": checks, "checks_status": status}), status


def heldout_tests(directory: Path) -> dict[str, str]:
    """{file name: text} of the test files `test_*.py` in `directory` (none when it does not exist)."""
    return {p.name: p.read_text() for p in sorted(directory.glob("test_*.py")) if p.is_file()}


def validate_row(row: TaskRow, tasks_dir: Path, runner: Path) -> dict:
    t0 = time.monotonic()
    try:
        gold = grade(row, tasks_dir, None, runner, changes={k: v.encode() for k, v in row.gold_files.items()})
        noop = grade(row, tasks_dir, None, runner)
    except Exception as exc:  # noqa: BLE001 - one broken task is reported, not fatal
        return {"id": row.id, "valid": False, "error": f"{type(exc).__name__}: {exc}"}
    return {"id": row.id, "gold": gold.reward, "noop": noop.reward, "valid": gold.reward == 1.0 and noop.reward == 0.0,
            "gold_failing": gold.failing[:5], "gold_invalid": [i["code"] + ": " + i["message"][:200] for i in gold.invalid],
            "seconds": round(time.monotonic() - t0, 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fd-validate", description=__doc__)
    parser.add_argument("tasks", nargs="?", default=str(Path(__file__).parent / "data" / "tasks.jsonl.xz"))
    parser.add_argument("--limit", type=int)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--output", help="write one JSON result per task here")
    parser.add_argument("--record-checks", action="store_true",
                        help="rebuild every task's checks on the gold code and rewrite the tasks file (tasks that "
                             "cannot be graded soundly leave it)")
    parser.add_argument("--answer-checks", action="store_true",
                        help="answer every task's kept check programs again on the gold code (nothing recorded or "
                             "chosen anew: for checks built before the replay observed what it observes now) and "
                             "rewrite the tasks file (tasks that cannot be graded soundly leave it)")
    parser.add_argument("--heldout-tests", metavar="DIR",
                        help="with --record-checks: give each task the test files DIR/<package>/test_*.py as its "
                             "held-out tests (recorded on the gold code, never in a sandbox the agent sees)")
    parser.add_argument("--prune", action="store_true",
                        help="rewrite the tasks file without the rows whose checks cannot tell a forger from an "
                             "implementation (what loading it leaves out), their reasons added to the checks report")
    args = parser.parse_args(argv)
    path = Path(args.tasks)
    if not path.is_file():
        parser.error(f"{path}: no such tasks file")
    rows, problems = load_rows(path, upgrade=args.record_checks)
    for p in problems:
        print(p, file=sys.stderr)
    if args.prune:
        unsound = [p.split(UNSOUND, 1)[1].strip().rsplit(": ", 1) for p in problems if UNSOUND in p]
        if len(unsound) != len(problems) or args.limit or args.record_checks:
            parser.error("--prune rewrites the whole tasks file: fix malformed rows, drop --limit and --record-checks")
        write_rows(path, rows)
        report_path = path.with_name(path.name.split(".")[0] + ".checks.json")
        report = json.loads(report_path.read_text()) if report_path.is_file() else {"tasks": {}, "dropped_tasks": {}}
        dropped = report.get("dropped_tasks", {}) | dict(unsound)
        report |= {"kept": len(rows), "dropped": len(dropped), "reasons": dict(Counter(dropped.values())),
                   "tasks": {r.id: r.checks_status for r in rows}, "dropped_tasks": dropped}
        report_path.write_text(json.dumps(report, indent=2) + "\n")
        print(f"pruned {len(unsound)} tasks: {dict(Counter(why for _, why in unsound))}; {len(rows)} kept")
        return 0
    rows = rows[: args.limit] if args.limit else rows
    if args.record_checks or args.answer_checks:
        if problems or args.limit or (args.record_checks and args.answer_checks):
            parser.error("--record-checks and --answer-checks each rewrite the whole tasks file: fix malformed rows, "
                         "drop --limit and give one of them")
        if args.heldout_tests:
            rows = [r.model_copy(update={"heldout_tests": heldout_tests(Path(args.heldout_tests) / r.package)})
                    for r in rows]
        make = with_checks if args.record_checks else with_answers
        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            built = list(pool.map(lambda r: make(r, path.parent, runner_for(r)), rows))
        dropped = [(r.id, why) for r, (new, why) in zip(rows, built) if new is None]
        rows = [new for new, _ in built if new is not None]
        write_rows(path, rows)
        report = path.with_name(path.name.split(".")[0] + ".checks.json")
        before = json.loads(report.read_text()).get("dropped_tasks", {}) if args.answer_checks and report.is_file() else {}
        every = before | dict(dropped)  # answering again keeps the tasks dropped when the checks were built
        report.write_text(json.dumps({
            "kept": len(rows), "dropped": len(every), "reasons": dict(Counter(every.values())),
            "tasks": {r.id: r.checks_status for r in rows}, "dropped_tasks": every}, indent=2) + "\n")
        for task, why in dropped:
            print(f"dropped {task}: {why}", file=sys.stderr)
        print(f"checks built for {len(rows)} of {len(built)} tasks; dropped {len(dropped)}: "
              f"{dict(Counter(why for _, why in dropped))}")
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        results = list(pool.map(lambda r: validate_row(r, path.parent, runner_for(r)), rows))
    for r in results:
        if not r["valid"]:
            print(f"INVALID {r['id']}: {r}", file=sys.stderr)
    if args.output:
        Path(args.output).write_text("".join(json.dumps(r) + "\n" for r in results))
    valid = sum(r["valid"] for r in results)
    gold_ok = sum(r.get("gold") == 1.0 for r in results)
    noop_ok = sum(r.get("noop") == 0.0 for r in results)
    print(f"{valid}/{len(results)} tasks valid ({100 * valid / max(1, len(results)):.1f}%): gold 1.0 on {gold_ok}, "
          f"untouched 0.0 on {noop_ok}; {len(problems)} malformed rows skipped")
    return 0 if valid == len(results) and results and not problems else 1


if __name__ == "__main__":
    sys.exit(main())
