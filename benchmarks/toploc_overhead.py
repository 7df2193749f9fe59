"""What TOPLOC proofs cost: worker time to build them vs sampling the batch (baseline), and verifier time.

    uv run python benchmarks/toploc_overhead.py [--prompts 4] [--samples 8] [--max-tokens 16]   (uv sync --extra toploc)

One worker batch on the quickstart model, as a volunteer worker makes it (transformers backend, CPU,
1 thread): sampling `--prompts` x `--samples` completions is the baseline; the proofs add one float32
forward per sample plus the encoding (composer_prime/verify/toploc.py). On the verifier side, checking
the proofs of the batch is compared with recomputing its log-probs (batched), both with trusted weights.
Also printed: proof bytes per sample.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from pathlib import Path

import torch
from transformers import AutoTokenizer

from composer_prime.configs.inference import InferenceConfig, TransformersBackendConfig
from composer_prime.configs.shared import ModelConfig
from composer_prime.configs.verify import ToplocConfig
from composer_prime.inference.backend import make_backend
from composer_prime.inference.protocol import GenerateRequest
from composer_prime.model.chat_template import template_ids
from composer_prime.verify.scorer import ModelScorer
from composer_prime.verify.toploc import build_proofs, proof_mismatch

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "configs" / "quickstart" / "warmstart"


async def sample(prompts: list[list[int]], n: int, max_tokens: int) -> list[tuple[list[int], list[int]]]:
    backend = make_backend(InferenceConfig(model=ModelConfig(path=str(MODEL), dtype="float32", device="cpu"),
                                           backend=TransformersBackendConfig(), seed=0))
    try:
        out = []
        for prompt in prompts:
            response = await backend.generate(GenerateRequest(prompt_token_ids=prompt, n=n, max_tokens=max_tokens,
                                                              temperature=1.0, seed=0))
            out += [(prompt, c.token_ids) for c in response.completions]
        return out
    finally:
        await backend.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=16)
    args = parser.parse_args()
    torch.set_num_threads(1)
    tokenizer = AutoTokenizer.from_pretrained(MODEL)
    rng = random.Random(0)
    words = ["alpha", "river", "stone", "cloud", "ember", "quiet", "maple", "orbit"]
    prompts = [template_ids(tokenizer, [{"role": "user", "content": "Reverse: " + " ".join(rng.choices(words, k=6))}])
               for _ in range(args.prompts)]

    t0 = time.perf_counter()
    items = asyncio.run(sample(prompts, args.samples, args.max_tokens))
    sampling_s = time.perf_counter() - t0

    config = ToplocConfig()
    scorer = ModelScorer(lambda version: MODEL)
    scorer.model(0)  # loading is not part of either cost
    t0 = time.perf_counter()
    proofs = [build_proofs(scorer.hidden_states(0, p + c), len(p), config.spec()) for p, c in items]
    proving_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    scorer.logprobs_many(0, items, 1.0)
    logprobs_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    failed = [proof_mismatch(scorer.hidden_states(0, p + c), len(p), pr, config) for (p, c), pr in zip(items, proofs)]
    checking_s = time.perf_counter() - t0
    assert not any(failed), failed

    per_sample = sum(len(b) for pr in proofs for b in pr) / len(proofs)
    print(f"{len(items)} samples: sampling {sampling_s:.2f} s, proofs {proving_s:.2f} s "
          f"(ratio {proving_s / sampling_s:.3f}); {per_sample:.0f} proof bytes per sample")
    print(f"verifier: log-probs (batched) {logprobs_s:.3f} s, proofs {checking_s:.3f} s "
          f"(ratio {checking_s / logprobs_s:.2f})")


if __name__ == "__main__":
    main()
