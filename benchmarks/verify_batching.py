"""Trusted log-probs for a batch of volunteer samples: one forward per sample (baseline) vs batched forwards.

    uv run python benchmarks/verify_batching.py [--model DIR] [--samples 64] [--batch-size 16] [--repeats 5]

The verifier recomputes the log-probs of every checked sample with the trusted weights
(composer_prime/verify/scorer.py). Baseline: `Scorer.logprobs_many`, one teacher-forced forward per
sample. Batched: `ModelScorer.logprobs_many`, right-padded batches of `--batch-size`. Same model,
same samples (prompts of 30-60 tokens, completions of 4-16, as a reverse-text worker batch), same
run; median of `--repeats` timings each; the two results agree to 1e-4.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

import torch

from composer_prime.verify.scorer import ModelScorer, Scorer

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=ROOT / "configs" / "quickstart" / "warmstart")
    parser.add_argument("--samples", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    scorer = ModelScorer(lambda version: args.model, batch_size=args.batch_size)
    vocab = scorer.model(0).config.vocab_size
    rng = random.Random(0)
    items = [([rng.randrange(vocab) for _ in range(rng.randint(30, 60))],
              [rng.randrange(vocab) for _ in range(rng.randint(4, 16))]) for _ in range(args.samples)]

    def timed(score) -> tuple[float, list[list[float]]]:
        times, out = [], None
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            out = score(0, items, 1.0)
            times.append(time.perf_counter() - t0)
        return statistics.median(times), out

    one_by_one, reference = timed(lambda *a: Scorer.logprobs_many(scorer, *a))
    batched, result = timed(scorer.logprobs_many)
    worst = max(abs(a - b) for r, o in zip(reference, result) for a, b in zip(r, o))
    print(f"{args.samples} samples, {args.threads} thread(s): one forward each {one_by_one * 1000:.1f} ms, "
          f"batched by {args.batch_size} {batched * 1000:.1f} ms, ratio {batched / one_by_one:.3f} "
          f"(largest log-prob difference {worst:.1e})")


if __name__ == "__main__":
    main()
