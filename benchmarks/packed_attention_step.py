"""The trainer's step on a run's own batches: its packed attention against transformers' SDPA (dense mask).

Builds the trainer's model from a run's `configs/trainer.toml` (as `build_train_model` does) twice, one on the
trainer's packed attention and one on transformers' SDPA with the dense block-diagonal mask it builds from the
position ids, and times `train_step` on the run's `rollouts/step_*/rank_0.msgpack`, alternating, so that the
machine's load hits both alike. Prints each one's median and the ratio packed / dense.

    uv run rl @ configs/quickstart/rl.toml --max-steps 6 --output-dir outputs/qs6
    OMP_WAIT_POLICY=PASSIVE uv run python benchmarks/packed_attention_step.py outputs/qs6 [--threads 2]

OMP_WAIT_POLICY is read when torch loads: set it in the environment, as `rl` does for its processes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import tomllib
from pathlib import Path

import torch

from composer_prime.configs.trainer import TrainerConfig
from composer_prime.loss.resolve import resolve_loss
from composer_prime.trainer.build import build_train_model
from composer_prime.trainer.data import read_batch
from composer_prime.trainer.packed_attention import ATTENTION
from composer_prime.trainer.parallel import World
from composer_prime.trainer.step import train_step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="An rl output_dir with configs/trainer.toml and rollouts/.")
    parser.add_argument("--steps", type=int, default=6, help="Batches to time (the first warms up).")
    parser.add_argument("--threads", type=int, default=None, help="torch threads; default: the run's.")
    args = parser.parse_args()
    config = TrainerConfig(**tomllib.loads((args.run_dir / "configs/trainer.toml").read_text()))
    torch.set_num_threads(args.threads or config.num_threads or torch.get_num_threads())
    world = World(rank=0, world_size=1, device=torch.device("cpu"))
    paths = sorted((args.run_dir / "rollouts").glob("step_*/rank_0.msgpack"),
                   key=lambda p: int(p.parent.name.removeprefix("step_")))[: args.steps]
    if len(paths) < 2:
        raise SystemExit(f"{args.run_dir}/rollouts holds {len(paths)} batches; 2 or more are needed")
    batches = [read_batch(p) for p in paths]
    loss = resolve_loss(config.loss.pg)
    models = {}
    for name, attention in (("packed", ATTENTION), ("dense", "sdpa")):
        torch.manual_seed(config.seed)
        model = build_train_model(config, world)
        model.set_attn_implementation(attention)
        models[name] = (model, torch.optim.AdamW(model.parameters(), lr=config.optim.lr))
    times: dict[str, list[float]] = {name: [] for name in models}
    for i, batch in enumerate(batches):
        for name, (model, optimizer) in models.items():
            t0 = time.perf_counter()
            train_step(model, optimizer, batch, loss, config.optim.lr, config.optim.max_norm, world)
            if i > 0:
                times[name].append(time.perf_counter() - t0)
    medians = {name: statistics.median(t) for name, t in times.items()}
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}, load {os.getloadavg()[0]:.1f}; "
          f"{len(batches) - 1} steps of {args.run_dir}, medians")
    for name, median in medians.items():
        print(f"{name:>6}: {median:.3f} s/step  {[round(t, 2) for t in times[name]]}")
    print(f"ratio packed / dense: {medians['packed'] / medians['dense']:.3f}")


if __name__ == "__main__":
    main()
