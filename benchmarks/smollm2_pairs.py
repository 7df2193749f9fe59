"""How good are mined add-numbers preference pairs by the task's own verdict (configs/smollm2/pairs/pairs.jsonl).

Replay keeps a step where k teachers agree on a reply other than the student's; nothing in it asks whether the
agreed reply is right. This scores every pair's chosen and rejected reply with add-numbers' verdict (the reward RL
trains on) and counts the four cases, separately for the pairs the trainer holds out (`eval_fraction`, by id hash,
as trainer/preference.py splits them), and checks that no pair's question is a held-out problem.

Usage: uv run python benchmarks/smollm2_pairs.py configs/smollm2/pairs/pairs.jsonl [--eval-fraction 0.2]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
from pathlib import Path

from composer_prime.configs.rollout import EnvConfig
from composer_prime.pairs import read_pairs
from composer_prime.rollout.envs import load_environment
from composer_prime.trainer.preference import is_held_out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pairs", type=Path)
    parser.add_argument("--eval-fraction", type=float, default=0.2, help="the config's preference.eval_fraction")
    args = parser.parse_args()
    env = load_environment(EnvConfig(id="add-numbers"))
    by_question = {split: {e.prompt[-1]["content"]: e for e in env.examples(split)} for split in ("train", "eval")}
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for pair in read_pairs(args.pairs):
        question = pair.state[-1].content
        if question in by_question["eval"]:
            raise SystemExit(f"pair {pair.id} asks a held-out problem: {question!r}")
        example = by_question["train"][question]
        chosen, rejected = (asyncio.run(env.score(example, reply.content or "")).reward == 1
                            for reply in (pair.chosen, pair.rejected))
        part = "held out" if is_held_out(pair.id, args.eval_fraction) else "train"
        counts[part][f"chosen {'right' if chosen else 'wrong'}, rejected {'right' if rejected else 'wrong'}"] += 1
    for part, counter in sorted(counts.items()):
        total = sum(counter.values())
        print(f"{part}: {total} pairs; " + "; ".join(f"{k} {v} ({v / total:.1%})" for k, v in sorted(counter.items())))


if __name__ == "__main__":
    main()
