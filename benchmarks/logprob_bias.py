"""How far float32 log-probs drift from float64 at a real vocabulary size, by normaliser and thread count.

Per-token log-probs of 64 rows of logits (normal, std 2.5, one confident token +15 per row, as a trained
LM's) through torch's `log_softmax` and through `x - logsumexp(x)` (the sampler's and the trainer's
normaliser since issue 31), each minus float64's, averaged: a mean away from 0 is a bias that moves the
importance ratio of every on-policy step by the same amount, which no amount of data averages out.

Usage: uv run python benchmarks/logprob_bias.py [--vocabs 1024,49152,151936] [--threads 1,2]
"""

from __future__ import annotations

import argparse

import torch

from composer_prime.inference.sampling import log_softmax


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocabs", default="1024,49152,151936")
    parser.add_argument("--threads", default="1,2")
    args = parser.parse_args()
    print("| threads | vocabulary | torch log_softmax - float64 | logits - logsumexp - float64 |")
    print("|---|---|---|---|")
    for threads in map(int, args.threads.split(",")):
        torch.set_num_threads(threads)
        for vocab in map(int, args.vocabs.split(",")):
            logits = torch.randn(64, vocab, generator=torch.Generator().manual_seed(0)) * 2.5 + 5
            logits[:, 0] += 15
            exact = logits.double().log_softmax(-1)
            torch_mean = (logits.log_softmax(-1).double() - exact).mean().item()
            ours_mean = (log_softmax(logits).double() - exact).mean().item()
            print(f"| {threads} | {vocab:,} | {torch_mean:+.2e} | {ours_mean:+.2e} |", flush=True)


if __name__ == "__main__":
    main()
