"""Held-out reward of a decentralised run (2 DiLoCo trainer sites fed by volunteer workers) against a single
trainer site fed by the same workers, on the same number of samples, over seeds.

    uv run python benchmarks/decentralised.py [--steps 40] [--seeds 2] [--work outputs/bench-decentralised]

Each run is the whole arrangement of tests/e2e/cluster.py on 127.0.0.1 (seaweedfs, publisher, origin,
relay, orchestrator in workers mode, 2 honest workers; trainer sites as given), `--steps` steps of 64
samples. The final version is evaluated with the `eval` command's code on 256 held-out prompts at
temperature 1 (the quickstart's held-out reward). Prints per run and the difference of the arms'
means against its standard error.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "tests" / d) for d in ("e2e", "support")]

from cluster import WARMSTART, LocalRun  # noqa: E402

from composer_prime.configs.eval import EvalCommandConfig  # noqa: E402
from composer_prime.eval.main import main as run_eval  # noqa: E402
from composer_prime.weights import version_dir  # noqa: E402


def held_out(model: Path, seed: int) -> float:
    return run_eval(EvalCommandConfig(model={"path": str(model)}, num_examples=256, temperature=1.0, max_tokens=16,
                                      seed=seed)).reward


def one_run(root: Path, sites: int, steps: int, seed: int) -> float:
    result_file = root / "result.json"
    if result_file.is_file():
        return json.loads(result_file.read_text())["reward"]
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    cluster = LocalRun(root, steps, sites=sites, seed=seed)
    try:
        cluster.start()
        for index in range(2):
            cluster.start_worker(f"worker-{index}", seed=100 * seed + index)
        cluster.wait("trainers done", cluster.trainers_done, 3600)
    finally:
        cluster.stop()
    reward = held_out(version_dir(root / "run", steps), seed)
    result_file.write_text(json.dumps({"reward": reward, "sites": sites, "seed": seed, "steps": steps}))
    return reward


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path("outputs/bench-decentralised"))
    args = parser.parse_args()
    rewards: dict[int, list[float]] = {1: [], 2: []}
    for seed in range(args.seeds):
        for sites in (1, 2):
            reward = one_run(args.work.resolve() / f"sites{sites}_s{seed}", sites, args.steps, seed)
            rewards[sites].append(reward)
            print(f"sites {sites} seed {seed}: held-out reward {reward:.3f}", flush=True)
    start = [held_out(WARMSTART, seed) for seed in range(args.seeds)]
    print(f"warm start (before training): held-out reward {np.mean(start):.3f}", flush=True)
    one, two = np.array(rewards[1]), np.array(rewards[2])
    diff = two.mean() - one.mean()
    se = float(np.sqrt(one.var(ddof=1) / len(one) + two.var(ddof=1) / len(two))) if len(one) > 1 else float("nan")
    print(f"single site {one.mean():.3f} +- {one.std(ddof=1) if len(one) > 1 else float('nan'):.3f}, "
          f"2 DiLoCo sites {two.mean():.3f} +- {two.std(ddof=1) if len(two) > 1 else float('nan'):.3f}: "
          f"difference {diff:+.3f}, standard error {se:.3f}")


if __name__ == "__main__":
    main()
