"""Orchestrator overhead per rollout, against the model time of the same rollouts.

Builds the tiny model, starts a real inference server on a free port, runs `--groups` rollout
groups one after another (so no overlap hides the overhead), then turns them into a trainer
step (advantages, packing, atomic write) exactly as the orchestrator does. Per rollout:

  overhead = (group wall time - its /generate call) / group_size  +  step post-processing / rollouts
  model    = /generate call time / group_size

Prints both medians and their ratio (overhead / model; the baseline is the model time of
the same run). Usage: uv run python benchmarks/rollout_overhead.py [--groups 32]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from composer_prime.configs.inference import InferenceConfig
from composer_prime.configs.orchestrator import AdvantageConfig
from composer_prime.configs.shared import LogConfig, ModelConfig
from composer_prime.eval.server import inference_server, wait_ready
from composer_prime.inference.client import InferenceClient
from composer_prime.model.load import load_tokenizer
from composer_prime.model.tiny import TinyModelConfig, build
from composer_prime.orchestrator.advantage import compute_advantages
from composer_prime.orchestrator.packing import pack_step
from composer_prime.orchestrator.sink import samples_of
from composer_prime.orchestrator.step_io import write_step
from composer_prime.configs.rollout import EnvConfig, SamplingConfig
from composer_prime.rollout.envs import load_environment
from composer_prime.rollout.single_turn import rollout_group
from composer_prime.utils.net import free_port


async def run(work: Path, groups: int, group_size: int, max_tokens: int) -> None:
    model_dir = build(TinyModelConfig(output_dir=work / "model", corpus_lines=2000))
    tokenizer = load_tokenizer(ModelConfig(path=str(model_dir)))
    env = load_environment(EnvConfig(id="reverse-text"))
    examples = env.examples("train")
    port = free_port()
    server = InferenceConfig(model=ModelConfig(path=str(model_dir)), port=port, log=LogConfig(progress=False))
    with inference_server(server, work / "server") as child:
        async with InferenceClient(f"http://127.0.0.1:{port}") as client:
            await wait_ready(client, child, timeout_s=300)
            sampling = SamplingConfig(temperature=1.0, max_tokens=max_tokens)
            await rollout_group(client, env, tokenizer, examples[0], sampling, n=group_size)  # warm-up: first-call allocations are not overhead
            results = []
            for i in range(groups):
                results.append(await rollout_group(client, env, tokenizer, examples[i % len(examples)], sampling,
                                                   n=group_size, seed=i))

    start = time.perf_counter()
    samples = [s for g in results
               for s in samples_of(g, compute_advantages(g.rewards, g.completion_lens, max_tokens, AdvantageConfig()))]
    batches = pack_step(samples, step=1, seq_len=512, micro_batch_rows=4, world_size=1,
                        pad_token_id=tokenizer.pad_token_id, temperature=1.0)
    write_step(work / "run", 1, batches, {})
    step_share = (time.perf_counter() - start) / len(samples)

    overhead = [(g.total_s - g.generate_s) / group_size + step_share for g in results]
    model = [g.generate_s / group_size for g in results]
    tokens = statistics.mean(n for g in results for n in g.completion_lens)
    o, m = statistics.median(overhead), statistics.median(model)
    print(f"{groups} groups x {group_size} rollouts, {tokens:.1f} completion tokens on average")
    print(f"model time per rollout (median):        {m * 1e3:8.3f} ms")
    print(f"orchestrator overhead per rollout:      {o * 1e3:8.3f} ms "
          f"(of which step post-processing {step_share * 1e3:.3f} ms)")
    print(f"overhead / model time:                  {o / m:8.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=32, help="rollout groups to time")
    parser.add_argument("--group-size", type=int, default=8, help="completions per /generate call")
    parser.add_argument("--max-tokens", type=int, default=16, help="completion tokens per rollout")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rollout-overhead-") as tmp:
        asyncio.run(run(Path(tmp), args.groups, args.group_size, args.max_tokens))


if __name__ == "__main__":
    main()
