"""Feature Deletion: checks chosen to kill gold's mutants against the checks chosen without them, same run.

    uv run python benchmarks/mutation.py [--tasks PATH] [--n 8] [--repeats 2] [--output results.jsonl]
    uv run python benchmarks/mutation.py --scores [--skip 8] [--n 62] [--output scores.jsonl]

For a fixed sample of tasks (the red team's two witnesses, then one task of every other package, seeded), builds
the checks both ways (`behaviour.build_checks(..., mutants=False)`, then `mutants=True`), and prints per task: the
mutants made, how many each set of checks kills (every mutant graded by the verdict replay, `check_behaviour`,
what `grade` runs), the build time of each and the time to grade the gold patch with each (`grade`, every layer,
alternating, median of `--repeats`); then the totals and ratios.

With `--scores`: only the new build, on the sample from its `--skip`-th task on, and its mutation score per task
(killed / made, as the build report says), then how many tasks each `mutation.MIN_SCORE` would drop.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import time
from pathlib import Path

from feature_deletion import mutation
from feature_deletion.behaviour import build_checks, check_behaviour
from feature_deletion.grading import grade
from feature_deletion.sandbox import Limits
from feature_deletion.scope import agent_lines
from feature_deletion.task import load_rows, runner_for
from feature_deletion.taskset import DEFAULT_TASKS

WITNESSES = ["inflection-0.5.1/inflection/__init__.py:underscore:body",
             "more-itertools-10.5.0/more_itertools/more.py:_sample_counted:body"]


def sample(rows, n: int) -> list:
    by_id = {r.id: r for r in rows}
    picked = [by_id[t] for t in WITNESSES if t in by_id]
    rest = [r for r in rows if r.id not in WITNESSES]
    random.Random(0).shuffle(rest)
    packages = {r.id.split("/")[0] for r in picked}
    for r in rest:  # one task of every other package first, then any
        if r.id.split("/")[0] not in packages:
            picked.append(r)
            packages.add(r.id.split("/")[0])
    picked += [r for r in rest if r not in picked]
    return picked[:n]
    return picked


def killed(row, checks, tasks_dir: Path, runner, made) -> set[str]:
    graded = row.model_copy(update={"checks": checks})
    out = set()
    for m in made:
        changes = {m.file: m.text.encode()}
        if check_behaviour(graded, tasks_dir, runner, Limits(), "namespace", changes,
                           agent_lines(row, changes)).fraction == 0:
            out.add(m.label)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", default=str(DEFAULT_TASKS))
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--output")
    parser.add_argument("--scores", action="store_true")
    parser.add_argument("--skip", type=int, default=0)
    args = parser.parse_args()
    path = Path(args.tasks)
    rows, _ = load_rows(path)
    if args.scores:
        return scores(sample(rows, args.n)[args.skip:], path.parent, args.output)
    results = []
    for row in sample(rows, args.n)[args.skip:]:
        runner = runner_for(row)
        built = {}
        for name, on in (("old", False), ("new", True)):
            t0 = time.perf_counter()
            checks, status = build_checks(row, path.parent, runner, Limits(), mutants=on)
            built[name] = (checks, status, time.perf_counter() - t0)
        made = mutation.mutants(row)
        r = {"task": row.id, "mutants": len(made), "status_new": built["new"][1],
             "build_s": {k: round(v[2], 1) for k, v in built.items()}}
        gold = {k: v.encode() for k, v in row.gold_files.items()}
        times: dict[str, list[float]] = {"old": [], "new": []}
        for name, (checks, _, _) in built.items():
            if checks is None:
                r[f"killed_{name}"] = None
                continue
            r[f"killed_{name}"] = len(killed(row, checks, path.parent, runner, made))
            r[f"heldout_{name}"] = checks.heldout
            r[f"steps_{name}"] = checks.steps
        for _ in range(args.repeats):
            for name, (checks, _, _) in built.items():
                if checks is not None:
                    t0 = time.perf_counter()
                    g = grade(row.model_copy(update={"checks": checks}), path.parent, None, runner, changes=gold)
                    times[name].append(time.perf_counter() - t0)
                    r[f"gold_reward_{name}"] = g.reward
        r["grade_s"] = {k: round(statistics.median(v), 2) for k, v in times.items() if v}
        results.append(r)
        print(json.dumps(r), flush=True)
        if args.output:
            Path(args.output).write_text("".join(json.dumps(x) + "\n" for x in results))
    ok = [r for r in results if r.get("killed_old") is not None and r.get("killed_new") is not None]
    total = sum(r["mutants"] for r in ok)
    print(f"{len(results)} tasks ({len(ok)} with checks both ways): mutants {total}, killed "
          f"{sum(r['killed_old'] for r in ok)} -> {sum(r['killed_new'] for r in ok)}")
    for key in ("build_s", "grade_s"):
        old = sum(r[key].get("old", 0) for r in ok)
        new = sum(r[key].get("new", 0) for r in ok)
        print(f"{key}: {old:.1f} -> {new:.1f} s in all (x{new / max(old, 1e-9):.2f})")


def scores(rows, tasks_dir: Path, output: str | None) -> None:
    results = []
    for row in rows:
        t0 = time.perf_counter()
        checks, status = build_checks(row, tasks_dir, runner_for(row), Limits(), mutants=True)
        m = re.search(r"mutants (\d+)/(\d+) killed, (\d+) told but not kept, (\d+) told by no program", status)
        r = {"task": row.id, "status": status, "build_s": round(time.perf_counter() - t0, 1)}
        if m:
            killed, made, _, untold = map(int, m.groups())
            r |= {"killed": killed, "made": made, "untold": untold, "score": killed / max(made, 1)}
        results.append(r)
        print(json.dumps(r), flush=True)
        if output:
            Path(output).write_text("".join(json.dumps(x) + "\n" for x in results))
    scored = [r["score"] for r in results if "score" in r]
    for threshold in (0.5, 0.6, 0.7, 0.75, 0.8, 0.9):
        print(f"MIN_SCORE {threshold}: {sum(s < threshold for s in scored)} of {len(scored)} tasks leave")


if __name__ == "__main__":
    main()
