"""Samples proven sampled: honest false rejections, what an attacker can still choose, and what the check costs.

    uv run python benchmarks/sampling_proof.py [--model DIR] [--worker-dtype bfloat16] [--prompts 96] [--n 8]
                                               [--max-tokens 48] [--temperature 1.0] [--threads 1] [--repeats 3]

An honest worker: the transformers engine a volunteer runs (KV cache, left-padded batched prefill, continuous
batching), drawing every token by Gumbel-max with noise keyed by (key, sample, position), in `--worker-dtype`,
on reverse-text prompts. The verifier: `ModelScorer`, one teacher-forced float32 forward per right-padded batch
of 16 (another code path, other kernels and shapes: what another machine changes), recomputing each token's
sampling gap (composer_prime/verify/sampled.py). Printed per tolerance: the fraction of honest tokens and of
honest samples rejected, and the fraction of positions where a worker could have submitted another token and
still passed (with the mean number of such tokens there).

Cost: the verifier scores the same samples `--repeats` times each way, in this process: without noise keys
(trusted log-probs only, the check before issue 30: the baseline) and with them (the same forward, then the
Philox noise of every position over the whole vocabulary and the gaps). Median per token, and the ratio.
The sampling check's own cost grows with the vocabulary, not the model: `--noise-vocab` times it alone
(noise and gaps of 64 positions) at larger vocabularies (SmolLM2 49,152; Qwen 151,936).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from pathlib import Path

import torch
from transformers import AutoTokenizer

from composer_prime.configs.inference import TransformersBackendConfig
from composer_prime.configs.rollout import EnvConfig
from composer_prime.configs.shared import ModelConfig
from composer_prime.inference.protocol import GenerateRequest
from composer_prime.inference.transformers_backend import TransformersBackend
from composer_prime.rollout.envs import load_environment
from composer_prime.model.chat_template import template_ids
from composer_prime.verify.sampled import choosable, sampling_gaps
from composer_prime.verify.scorer import ModelScorer, ScoreItem

ROOT = Path(__file__).resolve().parents[1]
TOLERANCES = (0.0, 1e-5, 1e-4, 1e-3, 1e-2, 0.05, 0.1, 0.2, 0.5)


async def honest_samples(args, prompts: list[list[int]], key: int) -> list[tuple[ScoreItem, list[float]]]:
    """(the sample as the verifier scores it, the log-probs the worker reported)."""
    backend = TransformersBackend(ModelConfig(path=str(args.model), dtype=args.worker_dtype, device="cpu"),
                                  TransformersBackendConfig(max_batch_size=64, num_threads=args.threads))
    try:
        responses = await asyncio.gather(*(backend.generate(GenerateRequest(
            prompt_token_ids=prompt, n=args.n, max_tokens=args.max_tokens, temperature=args.temperature,
            gumbel_key=key, gumbel_first_sample=slot * args.n)) for slot, prompt in enumerate(prompts)))
    finally:
        await backend.close()
    return [(ScoreItem(prompt, c.token_ids, (key, slot * args.n + i)), c.logprobs)
            for slot, (prompt, response) in enumerate(zip(prompts, responses, strict=True))
            for i, c in enumerate(response.completions)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=ROOT / "configs" / "quickstart" / "warmstart")
    parser.add_argument("--worker-dtype", default="bfloat16", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--prompts", type=int, default=96)
    parser.add_argument("--n", type=int, default=8, help="samples per prompt")
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--key", type=int, default=0x5EED)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--noise-vocab", type=int, nargs="*", default=[49152, 151936])
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    examples = load_environment(EnvConfig(id="reverse-text")).examples("train")
    picked = random.Random(0).sample(range(len(examples)), args.prompts)
    prompts = [template_ids(tokenizer, examples[i].prompt) for i in picked]

    t0 = time.perf_counter()
    sampled = asyncio.run(honest_samples(args, prompts, args.key))
    items = [item for item, _ in sampled]
    sampled_s = time.perf_counter() - t0
    tokens = sum(len(i.completion_ids) for i in items)

    scorer = ModelScorer(lambda version: args.model)
    scorer.model(0)
    plain = [ScoreItem(i.prompt_ids, i.completion_ids) for i in items]

    def timed(batch: list[ScoreItem]) -> tuple[float, list]:
        times, scored = [], []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            scored = scorer.score_many(0, batch, args.temperature)
            times.append(time.perf_counter() - t0)
        return statistics.median(times), scored

    alone_s, unkeyed = timed(plain)
    both_s, scored = timed(items)
    for vocab in args.noise_vocab:
        dist = torch.randn(64, vocab).log_softmax(-1)
        t0 = time.perf_counter()
        for _ in range(args.repeats):
            sampling_gaps(dist, [0] * 64, args.key, 0)
        print(f"sampling check alone at vocabulary {vocab}: "
              f"{(time.perf_counter() - t0) / args.repeats / 64 * 1e6:.0f} us/token")
    gaps = torch.tensor([g for s in scored for g in s.gaps], dtype=torch.float64)
    worst_sample = torch.tensor([max(s.gaps) for s in scored], dtype=torch.float64)
    logprob_diff = max(abs(a - b) for (_, reported), s in zip(sampled, unkeyed) for a, b in zip(reported, s.logprobs))
    print(f"{len(items)} honest samples, {tokens} tokens; worker {args.worker_dtype} (engine, KV cache), verifier "
          f"float32 (teacher-forced); T = {args.temperature}; sampling took {sampled_s:.0f} s")
    print(f"largest |worker - verifier| log-prob {logprob_diff:.2e}")
    print(f"verifier cost, vocabulary {scorer.model(0).config.vocab_size}, {args.threads} thread(s): log-prob check "
          f"{alone_s / tokens * 1e6:.0f} us/token, with the sampling check {both_s / tokens * 1e6:.0f} us/token, "
          f"ratio {both_s / alone_s:.2f}")
    print(f"gaps: {int((gaps == 0).sum())} tokens exactly the trusted argmax; largest {gaps.max():.3g}; "
          f"99.9th percentile {gaps.quantile(0.999):.3g}")

    # The alternatives a worker had: counted on the trusted distribution at every honest position.
    model = scorer.model(0)
    alternatives = []
    with torch.no_grad():
        for item in items:
            ids = torch.tensor([item.prompt_ids + item.completion_ids])
            rows = model(ids).logits[0, len(item.prompt_ids) - 1:-1].float() / args.temperature
            alternatives.append(torch.stack([choosable(rows.log_softmax(-1), *item.noise, tolerance=t)
                                             for t in TOLERANCES]))
    per_position = torch.cat(alternatives, dim=1)  # [tolerances, tokens]
    print("| tolerance | honest tokens rejected | honest samples rejected | positions with a choice | "
          "other tokens there (mean) |")
    print("| --- | --- | --- | --- | --- |")
    for row, tolerance in enumerate(TOLERANCES):
        choice = per_position[row] > 0
        mean = per_position[row][choice].double().mean().item() if bool(choice.any()) else 0.0
        print(f"| {tolerance:g} | {int((gaps > tolerance).sum())} / {tokens} ({(gaps > tolerance).double().mean():.2e}) | "
              f"{int((worst_sample > tolerance).sum())} / {len(items)} | {choice.double().mean():.2e} | {mean:.2f} |")


if __name__ == "__main__":
    main()
