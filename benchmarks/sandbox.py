"""Feature Deletion sandbox overhead and scripted-gold rollout throughput.

    uv run python benchmarks/sandbox.py [--tasks PATH] [--package inflection] [--rollouts 8]

Prints: median overhead of one tool call excluding test runs (list_dir/read_file/search/edit_file/
write_file, through Workspace.call), the fixed cost of starting one sandboxed process (namespaces +
chroot + rlimits) over a plain subprocess, and rollouts per minute of the scripted gold agent over
HTTP (127.0.0.1) at concurrency 1 and 4, grading included; with `--grading`, the cost of grading's
layers (scope check, canaries, report cross-check, replay of recorded calls): median time to grade the gold patch of one
task of every package with all layers and with the report alone (grading as it was before them).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from feature_deletion.grading import LAYERS, grade
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


def grading_overhead(rows, tasks_dir, runner, repeats=5) -> dict[str, tuple[float, float]]:
    """{package: (median seconds with every layer, median seconds on the report alone)}, gold patches
    of one task per package, one whose calls were recorded where there is one (so the replay counts)."""
    out = {}
    for row in {r.package: r for r in sorted(rows, key=lambda r: bool(r.calls))}.values():
        gold = {k: v.encode() for k, v in row.gold_files.items()}
        times: dict[frozenset, list[float]] = {LAYERS: [], frozenset(): []}
        for _ in range(repeats):
            for layers, seconds in times.items():
                t0 = time.perf_counter()
                assert grade(row, tasks_dir, None, runner, changes=gold, layers=layers).reward == 1.0
                seconds.append(time.perf_counter() - t0)
        out[row.package] = (statistics.median(times[LAYERS]), statistics.median(times[frozenset()]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", default=str(DEFAULT_TASKS))
    parser.add_argument("--package", default="inflection")
    parser.add_argument("--rollouts", type=int, default=8)
    parser.add_argument("--grading", action="store_true", help="only the grading layers' overhead")
    args = parser.parse_args()
    rows, _ = load_rows(args.tasks)
    if args.grading:
        for package, (layered, alone) in grading_overhead(rows, Path(args.tasks).parent, ensure_runner()).items():
            print(f"grading {package} gold: {layered:.2f} s with every layer vs {alone:.2f} s on the report alone "
                  f"({layered / alone:.2f}x)")
        return
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
