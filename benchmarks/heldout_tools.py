"""Held-out evaluation of a tool environment: its cost per task against one training rollout of the same task.

    uv run python benchmarks/heldout_tools.py [--tasks PATH] [--num-tasks 4] [--repeats 2]

The policy is the scripted gold agent behind a real inference server on 127.0.0.1 (`type = "scripted"`, the warm-start
tokenizer), so the time is the harness's: rendering, tool calls in the sandbox, test runs and grading. For each of the
first `--num-tasks` tasks of the feature-deletion eval split, alternating which goes first: held-out evaluation of
that task alone (heldout.evaluate, one sample, what rl's in-run eval does per task at eval.n = 1), and the baseline,
one training rollout of it (rollout.multi_turn.env_rollout_group with n = 1, what the orchestrator runs per rollout).
Prints the median seconds per task of each, their ratio, and where a rollout's time goes.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from composer_prime.configs.inference import InferenceConfig, ScriptedBackendConfig
from composer_prime.configs.rollout import EnvConfig, SamplingConfig
from composer_prime.configs.shared import LogConfig, ModelConfig
from composer_prime.eval.server import inference_server, wait_ready
from composer_prime.heldout.evaluate import evaluate
from composer_prime.inference.client import InferenceClient
from composer_prime.model.load import load_tokenizer
from composer_prime.rollout.envs import load_environment
from composer_prime.rollout.multi_turn import env_rollout_group
from composer_prime.utils.net import free_port

WARMSTART = Path(__file__).resolve().parents[1] / "configs/quickstart/warmstart"
# The bundled eval split rewrites more-itertools' 150 KB more.py: ~110 k tokens of the warm-start tokenizer.
SEQ_LEN = 262_144
MAX_TURNS = 30


async def measure(url: str, tasks: str | None, num_tasks: int, repeats: int) -> None:
    model = ModelConfig(path=str(WARMSTART))
    env = load_environment(EnvConfig(id="feature-deletion",
                                     args={"num_examples": num_tasks} | ({"tasks_path": tasks} if tasks else {})))
    tokenizer = load_tokenizer(model)
    sampling = SamplingConfig(temperature=1.0, max_tokens=SEQ_LEN)
    examples = env.examples("eval")
    evals, trains, parts = [], [], {"generate_s": [], "tool_s": [], "grade_s": []}
    async with InferenceClient(url) as client:
        async def held_out(example) -> float:
            t0 = time.perf_counter()
            result = await evaluate(client, env, tokenizer, [example], sampling, k=1, samples_per_prompt=1,
                                    success_metric="resolved", pass_threshold=1.0, seed=0, max_concurrent=1,
                                    max_turns=MAX_TURNS, seq_len=SEQ_LEN)
            assert result.solved == 1.0, f"gold did not resolve {example.id}: {result.summary()}"
            return time.perf_counter() - t0

        async def training(example) -> float:
            t0 = time.perf_counter()
            group = await env_rollout_group(client, env, tokenizer, example, sampling, n=1, max_turns=MAX_TURNS,
                                            seq_len=SEQ_LEN, seed=0)
            assert group.rewards == [1.0], f"gold did not resolve {example.id}"
            for name, values in parts.items():
                values.append(group.rollouts[0].timings[name])
            return time.perf_counter() - t0

        for repeat in range(repeats):
            for i, example in enumerate(examples):
                if (i + repeat) % 2:
                    evals.append(await held_out(example))
                    trains.append(await training(example))
                else:
                    trains.append(await training(example))
                    evals.append(await held_out(example))
                print(f"{example.id}: held-out eval {evals[-1]:.2f} s, training rollout {trains[-1]:.2f} s", flush=True)
    e, t = statistics.median(evals), statistics.median(trains)
    print(f"held-out eval cost per task: {e:.2f} s median vs one training rollout {t:.2f} s ({e / t:.3f}x), "
          f"{len(examples)} eval tasks x {repeats}")
    print("a rollout's time, median: " + ", ".join(f"{k} {statistics.median(v):.2f} s" for k, v in parts.items()))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", default=None, help="tasks JSONL (default: the bundled tasks)")
    parser.add_argument("--num-tasks", type=int, default=4, help="first tasks of the eval split")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    port = free_port()
    config = InferenceConfig(model=ModelConfig(path=str(WARMSTART)), port=port, log=LogConfig(progress=False),
                             backend=ScriptedBackendConfig(tasks_path=args.tasks, script="gold"))

    async def run(child) -> None:
        async with InferenceClient(f"http://127.0.0.1:{port}") as client:
            await wait_ready(client, child, timeout_s=300)
        await measure(f"http://127.0.0.1:{port}", args.tasks, args.num_tasks, args.repeats)

    with tempfile.TemporaryDirectory(prefix="heldout-tools-") as work, inference_server(config, Path(work)) as child:
        asyncio.run(run(child))


if __name__ == "__main__":
    main()
