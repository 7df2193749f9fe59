"""Held-out accuracy of SmolLM2 RL runs over seeds: a before/after table (mean and standard error) and the curves.

Reads each run's metrics.jsonl (`rl @ configs/smollm2/rl.toml --seed S --output-dir DIR`): the task's own verdict
on the held-out split, sampled at the eval temperature (eval/solved) and greedily (eval/greedy/solved), at every
eval step, and the training rollouts' verdict per step (env/exact_match). Prints one row per run and the mean
+- standard error (sample std / sqrt(n)) of the first and the last eval and of their difference; writes the plot.

Usage: uv run python benchmarks/smollm2_curves.py outputs/smollm2-s0 outputs/smollm2-s1 outputs/smollm2-s2
       [--plot benchmarks/smollm2_curves.png]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from composer_prime.utils.metrics import read_metrics  # noqa: E402

HELD_OUT = {"sampled": "eval/solved", "greedy": "eval/greedy/solved"}


def curve(records: list[dict], key: str) -> list[tuple[int, float]]:
    return [(r["step"], r[key]) for r in records if r.get(key) is not None]


def mean_se(values: list[float]) -> tuple[float, float]:
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, float("nan")
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(var / n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--plot", type=Path, default=Path("benchmarks/smollm2_curves.png"))
    args = parser.parse_args()
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    table: dict[str, dict[str, list[float]]] = {name: {"before": [], "after": [], "gain": []} for name in HELD_OUT}
    print(f"{'run':28s} " + "  ".join(f"{name:>22s}" for name in HELD_OUT) + "  final step")
    for run in args.runs:
        orch = read_metrics(run, "orchestrator")
        cells = []
        for ax, (name, key) in zip(axes, HELD_OUT.items()):
            points = curve(orch, key)
            if not points:
                raise SystemExit(f"{run}: no {key} in metrics.jsonl (not an rl run with held-out eval?)")
            ax.plot(*zip(*points), "o-", label=run.name)
            (_, before), (last, after) = points[0], points[-1]
            table[name]["before"].append(before)
            table[name]["after"].append(after)
            table[name]["gain"].append(after - before)
            cells.append(f"{before:.3f} -> {after:.3f} ({after - before:+.3f})")
        axes[2].plot(*zip(*curve(orch, "env/exact_match")), "-", linewidth=0.8, label=run.name)
        print(f"{str(run):28s} " + "  ".join(f"{c:>22s}" for c in cells) + f"  {last}")
    for name, columns in table.items():
        summary = ", ".join(f"{col} {m:.3f} +- {se:.3f}" for col, (m, se) in
                            ((col, mean_se(vals)) for col, vals in columns.items()))
        print(f"{name} over {len(args.runs)} runs (mean +- standard error): {summary}")
    for ax, title in zip(axes, ["held-out exact match, sampled (T = 0.5)", "held-out exact match, greedy",
                                "training rollouts' exact match (32 a step, T = 0.5)"]):
        ax.set(xlabel="step", title=title, ylim=(0, None))
        ax.legend()
    fig.tight_layout()
    args.plot.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.plot, dpi=90)
    print(f"plot: {args.plot}")


if __name__ == "__main__":
    main()
