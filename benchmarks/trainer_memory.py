"""Peak memory and tokens/s of one trainer step on a ~0.6 B model: plain, activation checkpointing, LoRA.

The model has Qwen3-0.6B's shape (28 layers, hidden 1024, vocab 151936, tied embeddings: 0.60 B
parameters) with random weights, built locally and saved once under `--model-dir`. Each variant
runs in its own process, built by the trainer's own code (`trainer/build.py`) from a TrainerConfig,
so that a process's peak is that variant's alone:

- plain: full fine-tuning; its steps alternate with a bare loop (forward, mean cross-entropy,
  backward, AdamW) on the same model, optimizer and tokens, for the ratio trainer / bare;
- checkpointing: `activation_checkpointing = true`;
- lora: `lora = {rank 16, all linear layers}`.

Memory: on CPU the process's peak resident set (ru_maxrss) over the first step, which also creates
AdamW's state, and that peak less the resident set once the model is loaded (what the step adds:
gradients, optimizer state, activations); on CUDA `max_memory_allocated`. Tokens/s: median of
`--reps` steps after the first. Ratios are to the plain variant.

    uv run python benchmarks/trainer_memory.py [--tokens 256] [--reps 2] [--out FILE.json]
    uv run python benchmarks/trainer_memory.py --device cuda --dtype bfloat16 --tokens 8192 --reps 5
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
from trainer_throughput import bare_step, packed_batch
from transformers import Qwen3Config, Qwen3ForCausalLM

from composer_prime.configs.shared import ModelConfig
from composer_prime.loss.resolve import resolve_loss
from composer_prime.trainer.build import build_train_model
from composer_prime.configs.trainer import DPPOLossConfig, LoRAConfig, TrainerConfig
from composer_prime.trainer.data import MicroBatchTensors
from composer_prime.trainer.parallel import World
from composer_prime.trainer.step import train_step

VARIANTS = ("plain", "checkpointing", "lora")
SEQ_LEN = 256  # rows this long; --tokens is a multiple of it


def qwen3_06b_config() -> Qwen3Config:
    """Qwen3-0.6B's published shape."""
    return Qwen3Config(
        vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
        num_key_value_heads=8, head_dim=128, max_position_embeddings=40960, rope_theta=1_000_000.0,
        tie_word_embeddings=True,
    )


def ensure_model(path: Path) -> Path:
    if not (path / "config.json").is_file():
        torch.manual_seed(0)
        Qwen3ForCausalLM(qwen3_06b_config()).save_pretrained(path)
    return path


def gib(n: float) -> float:
    return n / 2**30


def peak_bytes(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device)
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def current_bytes(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.memory_allocated(device)
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run_variant(args: argparse.Namespace) -> dict:
    """One variant in this process: build as the trainer does, step, measure."""
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    config = TrainerConfig(
        model=ModelConfig(path=str(args.model_dir), device=args.device, dtype=args.dtype),
        activation_checkpointing=args.variant == "checkpointing",
        lora=LoRAConfig() if args.variant == "lora" else None,
    )
    world = World(rank=0, world_size=1, device=device)
    model = build_train_model(config, world)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    batch = packed_batch(np.random.default_rng(0), 1, args.tokens // SEQ_LEN, SEQ_LEN, model.config.vocab_size)
    tensors = [MicroBatchTensors.from_message(m, device) for m in batch.micro_batches]
    loss = resolve_loss(DPPOLossConfig())
    with torch.no_grad():  # page in every weight: safetensors maps the file and reads it lazily
        sum(float(p.sum()) for p in model.parameters())
    sync(device)
    loaded = current_bytes(device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)

    def timed(fn) -> float:
        sync(device)
        t0 = time.perf_counter()
        fn()
        sync(device)
        return time.perf_counter() - t0

    def trainer() -> None:
        train_step(model, optimizer, batch, loss, 1e-5, 1.0, world)

    def bare() -> None:
        bare_step(model, optimizer, tensors)

    first_s = timed(trainer)  # creates AdamW's state: the steady-state peak
    peak = peak_bytes(device)
    times: dict[str, list[float]] = {"trainer": [], "bare": []}
    for _ in range(args.reps):
        times["trainer"].append(timed(trainer))
        if args.variant == "plain":
            times["bare"].append(timed(bare))
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    result = {
        "variant": args.variant, "tokens": args.tokens, "first_step_s": first_s,
        "trainable_params": trainable, "total_params": sum(p.numel() for p in model.parameters()),
        "loaded_gib": gib(loaded), "peak_gib": gib(peak), "step_added_gib": gib(peak - loaded),
        "tokens_per_s": args.tokens / statistics.median(times["trainer"]), "step_s": times["trainer"],
    }
    if times["bare"]:
        result["bare_tokens_per_s"] = args.tokens / statistics.median(times["bare"])
        result["bare_step_s"] = times["bare"]
    return result


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, default=Path("outputs/qwen3-0.6b-random"),
                        help="Where the random Qwen3-0.6B-shaped model is (built there if missing).")
    parser.add_argument("--tokens", type=int, default=256, help=f"Tokens per step, a multiple of {SEQ_LEN}.")
    parser.add_argument("--reps", type=int, default=2, help="Timed steps per variant after the first.")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: stable on a shared machine).")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default=None, choices=["float32", "bfloat16", "float16"],
                        help="model.dtype; bfloat16 on CUDA trains float32 master weights (mixed precision).")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)  # a child process's own
    parser.add_argument("--out", type=Path, help="Also write the results here as JSON.")
    return parser


def main() -> None:
    parser = build_parser()
    args = parser.parse_args()
    if args.tokens % SEQ_LEN:
        parser.error(f"--tokens must be a multiple of {SEQ_LEN}")
    if args.variant is not None:
        print(json.dumps(run_variant(args)), flush=True)
        return

    ensure_model(args.model_dir)
    results = {}
    for variant in args.variants:
        child = [sys.executable, __file__, "--variant", variant, *sys.argv[1:]]
        done = subprocess.run(child, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"variant {variant} failed: {done.stderr.strip().splitlines()[-1]}")
        results[variant] = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"{variant}: {json.dumps(results[variant])}", flush=True)

    plain = results.get("plain")
    print(f"machine: {platform.processor() or platform.machine()}, torch {torch.__version__}, "
          f"{args.threads} threads, device {args.device}, dtype {args.dtype or 'default'}")
    params = min(r["total_params"] for r in results.values())  # LoRA's adapters come on top
    print(f"model: Qwen3-0.6B shape, {params / 1e9:.3f} B params; "
          f"step = {args.tokens} tokens; medians of {args.reps} steps after the first")
    print("| variant | trainable params | peak (GiB) | added by the step (GiB) | tokens/s | peak / plain | "
          "added / plain | tokens/s / plain |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        ratios = (r["peak_gib"] / plain["peak_gib"], r["step_added_gib"] / plain["step_added_gib"],
                  r["tokens_per_s"] / plain["tokens_per_s"]) if plain else (float("nan"),) * 3
        print(f"| {name} | {r['trainable_params'] / 1e6:.1f} M | {r['peak_gib']:.2f} | {r['step_added_gib']:.2f} | "
              f"{r['tokens_per_s']:.1f} | {ratios[0]:.3f} | {ratios[1]:.3f} | {ratios[2]:.3f} |")
    if plain:
        ratio = plain["tokens_per_s"] / plain["bare_tokens_per_s"]
        results["trainer_over_bare"] = ratio
        print(f"trainer step / bare fwd + CE + bwd + AdamW, same model and tokens: {plain['tokens_per_s']:.1f} / "
              f"{plain['bare_tokens_per_s']:.1f} tokens/s = {ratio:.3f}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
