"""Feature Deletion sandbox overhead and scripted-gold rollout throughput.

    uv run python benchmarks/sandbox.py [--tasks PATH] [--package inflection] [--rollouts 8]
    uv run python benchmarks/sandbox.py --grading [--baseline-ref fa5c3c1] [--repeats 5]

Prints: median overhead of one tool call excluding test runs (list_dir/read_file/search/edit_file/
write_file, through Workspace.call), the fixed cost of starting one sandboxed process (namespaces +
chroot + rlimits) over a plain subprocess, and rollouts per minute of the scripted gold agent over
HTTP (127.0.0.1) at concurrency 1 and 4, grading included.

With `--grading`: the time to grade the gold patch of one task of every package with the new verdict (every
layer: scope, audit hook, canaries, report, the checks replayed on a source-only copy) against the baseline
measured in the same run, grading as it was at git `--baseline-ref` (the environment package of that commit,
extracted with `git archive` and run in a subprocess on its own tasks file), task by task, alternating.
"""

from __future__ import annotations

import argparse
import io
import json
import lzma
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import feature_deletion
from feature_deletion.rollout import run_rollout
from feature_deletion.sandbox import Sandbox, ensure_runner
from feature_deletion.scripted_agent import ScriptedServer
from feature_deletion.taskset import DEFAULT_TASKS
from feature_deletion.task import load_rows
from feature_deletion.tools import Workspace


def tool_overhead(row, tasks_dir, runner, n=40) -> dict[str, float]:
    times: dict[str, list[float]] = {}
    with Workspace(row, tasks_dir, runner) as ws:
        rel = next(iter(row.gold_files))
        for i in range(n):
            for name, args in [("list_dir", {"path": "."}), ("read_file", {"path": rel, "start_line": 1, "end_line": 80}),
                               ("search", {"pattern": "def ", "path": rel}),
                               ("write_file", {"path": f"scratch_{i}.py", "content": "x = 1\n"}),
                               ("edit_file", {"path": f"scratch_{i}.py", "old_text": "x = 1", "new_text": "x = 2"})]:
                t0 = time.perf_counter()
                ws.call(name, args, turn=i)
                times.setdefault(name, []).append(time.perf_counter() - t0)
    out = {name: statistics.median(v) * 1000 for name, v in times.items()}
    out["all"] = statistics.median([x for v in times.values() for x in v]) * 1000
    return out


def spawn_overhead(runner, n=15) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as d:
        sb = Sandbox(d, runner=runner)
        sandboxed, plain = [], []
        for _ in range(n):
            t0 = time.perf_counter()
            sb.run([sb.python, "-c", "pass"])
            sandboxed.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            subprocess.run([sb.python, "-c", "pass"], check=True)
            plain.append(time.perf_counter() - t0)
    return statistics.median(sandboxed) * 1000, statistics.median(plain) * 1000


def throughput(rows, tasks_dir, runner, concurrency) -> tuple[float, list[float], float]:
    with ScriptedServer(rows, script="gold") as server:
        t0 = time.perf_counter()
        with ThreadPoolExecutor(concurrency) as pool:
            results = list(pool.map(lambda r: run_rollout(r, tasks_dir, server.base_url, runner=runner), rows))
        elapsed = time.perf_counter() - t0
    return len(rows) / elapsed * 60, [r.reward for r in results], statistics.median(r.timings["test_s"] for r in results)


REPO = Path(__file__).resolve().parents[1]
# Times grade() of gold patches with whatever `feature_deletion` is first on the path: run in a subprocess on the
# baseline's package, so that both gradings share this machine, this run and the runner venv.
GRADE_TIMER = """
import json, sys, time
from pathlib import Path
from feature_deletion.grading import grade
from feature_deletion.sandbox import ensure_runner
from feature_deletion.task import load_rows
tasks, ids, repeats = Path(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
rows = {r.id: r for r in load_rows(tasks)[0]}
runner, out = ensure_runner(), {}
for task_id in ids:
    row = rows[task_id]
    gold = {k: v.encode() for k, v in row.gold_files.items()}
    out[task_id] = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        reward = grade(row, tasks.parent, None, runner, changes=gold).reward
        out[task_id].append(time.perf_counter() - t0)
        assert reward == 1.0, (task_id, reward)
print(json.dumps(out))
"""


def baseline_package(ref: str, dest: Path) -> Path:
    """The environment package as it was at git `ref`, extracted into `dest`: its import root."""
    archive = subprocess.run(["git", "archive", ref, "environments/feature_deletion"], cwd=REPO, check=True,
                             capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tf:
        tf.extractall(dest, filter="data")
    return dest / "environments" / "feature_deletion"


def time_gradings(import_root: Path, tasks: Path, ids: list[str], repeats: int) -> dict[str, list[float]]:
    env = os.environ | {"PYTHONPATH": str(import_root)}
    proc = subprocess.run([sys.executable, "-c", GRADE_TIMER, str(tasks), json.dumps(ids), str(repeats)], env=env,
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def grading_overhead(tasks: Path, baseline_ref: str, repeats: int, rounds: int = 2) -> dict[str, tuple[float, float]]:
    """{task id: (median seconds of the new grading, of the baseline's)}: the gold patch of one task per package
    that both task sets hold, graded `repeats` times by each in each of `rounds` alternating rounds."""
    rows, _ = load_rows(tasks)
    with tempfile.TemporaryDirectory(prefix="fd-baseline.") as tmp:
        old_root = baseline_package(baseline_ref, Path(tmp))
        old_tasks = old_root / "feature_deletion" / "data" / "tasks.jsonl.xz"
        with lzma.open(old_tasks, "rt") as f:
            old_calls = {row["id"]: bool(row.get("calls")) for row in map(json.loads, f)}
        # As the baseline's benchmark chose: per package, a task whose calls its layer 4 replays where there is one.
        chosen = {r.package: r.id for r in sorted(rows, key=lambda r: (old_calls.get(r.id, False), r.id), reverse=True)
                  if r.id in old_calls}
        new_root = Path(feature_deletion.__file__).parents[1]
        times: dict[str, tuple[list[float], list[float]]] = {i: ([], []) for i in chosen.values()}
        for _ in range(rounds):
            for task_id in chosen.values():
                times[task_id][1].extend(time_gradings(old_root, old_tasks, [task_id], repeats)[task_id])
                times[task_id][0].extend(time_gradings(new_root, tasks, [task_id], repeats)[task_id])
    return {i: (statistics.median(new), statistics.median(old)) for i, (new, old) in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", default=str(DEFAULT_TASKS))
    parser.add_argument("--package", default="inflection")
    parser.add_argument("--rollouts", type=int, default=8)
    parser.add_argument("--grading", action="store_true",
                        help="only grading: the new verdict against grading as it was at --baseline-ref")
    parser.add_argument("--baseline-ref", default="fa5c3c1", help="git ref whose grading is the baseline")
    parser.add_argument("--repeats", type=int, default=3, help="gradings per task, round and side")
    args = parser.parse_args()
    if args.grading:
        ratios = []
        for task_id, (new, old) in grading_overhead(Path(args.tasks), args.baseline_ref, args.repeats).items():
            ratios.append(new / old)
            print(f"grading {task_id} gold: {new:.2f} s with the new verdict vs {old:.2f} s at {args.baseline_ref} "
                  f"({new / old:.2f}x)")
        print(f"median ratio {statistics.median(ratios):.2f}x, max {max(ratios):.2f}x over {len(ratios)} packages")
        return
    rows, _ = load_rows(args.tasks)
    rows = [r for r in rows if r.package == args.package][: args.rollouts]
    if not rows:
        sys.exit(f"no tasks of package {args.package} in {args.tasks}")
    tasks_dir = Path(args.tasks).parent
    runner = ensure_runner()
    over = tool_overhead(rows[0], tasks_dir, runner)
    print("median tool-call overhead (ms, no test run): " + ", ".join(f"{k} {v:.2f}" for k, v in over.items()))
    sb_ms, plain_ms = spawn_overhead(runner)
    print(f"sandboxed `python -c pass`: {sb_ms:.0f} ms median vs {plain_ms:.0f} ms plain (+{sb_ms - plain_ms:.0f} ms)")
    for c in (1, 4):
        rpm, rewards, test_s = throughput(rows, tasks_dir, runner, c)
        print(f"scripted gold agent, {len(rows)} {args.package} rollouts, concurrency {c}: {rpm:.1f} rollouts/min "
              f"(rewards {sorted(set(rewards))}, median in-rollout test time {test_s:.2f} s)")


if __name__ == "__main__":
    main()
