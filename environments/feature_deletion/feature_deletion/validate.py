"""`fd-validate [tasks.jsonl]`: every task's gold patch must score 1.0 and the untouched task 0.0.

`--record-calls` first records, with the gold code, the calls of each task's deleted functions made
by its fail-to-pass tests (grading's behaviour layer) and rewrites the tasks file with them.
Malformed rows are reported and counted, never fatal. Exit status 0 only when every row is valid.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from feature_deletion.behaviour import replay, targets_of
from feature_deletion.grading import grade, run_pytest
from feature_deletion.sandbox import Limits, Sandbox
from feature_deletion.task import TaskRow, load_rows, materialize, runner_for, write_rows


def record_calls(row: TaskRow, tasks_dir: Path, runner: Path, limits: Limits | None = None) -> TaskRow:
    """The row with the calls of its deleted functions that its F2P tests make on the gold code,
    kept only where a replay of the gold code gives the same encoded result."""
    targets = targets_of(row)
    if targets is None:
        return row.model_copy(update={"calls": [], "calls_status": "not recorded: a target is a method or a class"})
    with tempfile.TemporaryDirectory(prefix="fd-record.") as tmp:
        gold = materialize(row, tasks_dir, Path(tmp) / "repo", state="gold", git=False)
        out = Path(tmp) / "out"
        out.mkdir()
        sb = Sandbox(gold, runner=runner, limits=limits or Limits(), outdir=out)
        run_pytest(sb, row.import_root, row.f2p, record_targets=targets)
        recorded = json.loads((out / "calls.json").read_text()) if (out / "calls.json").is_file() else []
        sb.outdir = None
        outcomes = (replay(sb, row, recorded) or []) if recorded else []
    kept = [c for c, got in zip(recorded, outcomes) if got == c["result"]]
    status = f"recorded {len(kept)} calls" if kept else \
        "not recorded: no call of the deleted functions serialises faithfully and replays the same"
    return row.model_copy(update={"calls": kept, "calls_status": status})


def validate_row(row: TaskRow, tasks_dir: Path, runner: Path) -> dict:
    t0 = time.monotonic()
    try:
        gold = grade(row, tasks_dir, None, runner, changes={k: v.encode() for k, v in row.gold_files.items()})
        noop = grade(row, tasks_dir, None, runner)
    except Exception as exc:  # noqa: BLE001 - one broken task is reported, not fatal
        return {"id": row.id, "valid": False, "error": f"{type(exc).__name__}: {exc}"}
    return {"id": row.id, "gold": gold.reward, "noop": noop.reward, "valid": gold.reward == 1.0 and noop.reward == 0.0,
            "gold_failing": gold.failing[:5], "seconds": round(time.monotonic() - t0, 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fd-validate", description=__doc__)
    parser.add_argument("tasks", nargs="?", default=str(Path(__file__).parent / "data" / "tasks.jsonl.xz"))
    parser.add_argument("--limit", type=int)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--output", help="write one JSON result per task here")
    parser.add_argument("--record-calls", action="store_true",
                        help="record the deleted functions' calls with the gold code and rewrite the tasks file")
    args = parser.parse_args(argv)
    path = Path(args.tasks)
    if not path.is_file():
        parser.error(f"{path}: no such tasks file")
    rows, problems = load_rows(path)
    for p in problems:
        print(p, file=sys.stderr)
    rows = rows[: args.limit] if args.limit else rows
    if args.record_calls:
        if problems or args.limit:
            parser.error("--record-calls rewrites the whole tasks file: fix malformed rows and drop --limit")
        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            rows = list(pool.map(lambda r: record_calls(r, path.parent, runner_for(r)), rows))
        write_rows(path, rows)
        recorded = [r for r in rows if r.calls]
        print(f"calls recorded for {len(recorded)}/{len(rows)} tasks ({sum(len(r.calls) for r in recorded)} calls)")
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
