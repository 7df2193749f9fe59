"""Trainer step throughput against a bare training loop on the same model and tokens.

(a) the trainer's own step (`composer_prime.trainer.step.train_step` from a TrainBatch:
    message -> tensors, forward through the trainer's packed attention, token log-probs, DPPO loss, backward,
    clip, AdamW);
(b) a bare loop: forward (transformers' SDPA with its dense block-diagonal mask), mean cross-entropy,
    backward, AdamW, on the same packed tensors.
Repetitions alternate between (a) and (b) so that machine noise hits both; medians are
reported with the ratio (a) / (b). No checkpointing or publishing is timed.

    uv run python benchmarks/trainer_throughput.py [--reps 8] [--threads 1]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F
from transformers import Qwen3Config, Qwen3ForCausalLM

from composer_prime.batch import Array, MicroBatch, TrainBatch
from composer_prime.configs.trainer import DPPOLossConfig
from composer_prime.loss.resolve import resolve_loss
from composer_prime.trainer.data import MicroBatchTensors
from composer_prime.trainer.packed_attention import ATTENTION
from composer_prime.trainer.parallel import World
from composer_prime.trainer.step import train_step

VOCAB, SEQ_LEN = 1024, 512


def tiny_model(seed: int, attention: str = "sdpa") -> Qwen3ForCausalLM:
    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=VOCAB, hidden_size=128, intermediate_size=512, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, head_dim=32, max_position_embeddings=SEQ_LEN, tie_word_embeddings=False,
    )
    model = Qwen3ForCausalLM(config)
    model.set_attn_implementation(attention)
    return model.train()


def packed_batch(rng: np.random.Generator, micro_batches: int, rows: int, seq_len: int = SEQ_LEN,
                 vocab: int = VOCAB) -> TrainBatch:
    """Samples of 20-60 tokens (a third prompt) packed greedily into rows of `seq_len`."""
    micro = []
    loss_tokens = 0
    for _ in range(micro_batches):
        arrays = {k: np.zeros((rows, seq_len), dtype=d) for k, d in
                  (("input_ids", np.int32), ("position_ids", np.int32), ("loss_mask", np.bool_),
                   ("advantages", np.float32), ("inference_logprobs", np.float32))}
        for r in range(rows):
            start = 0
            while (n := int(rng.integers(20, 61))) <= seq_len - start:
                prompt = n // 3
                arrays["input_ids"][r, start : start + n] = rng.integers(1, vocab, n)
                arrays["position_ids"][r, start : start + n] = np.arange(n)
                arrays["loss_mask"][r, start + prompt : start + n] = True
                arrays["advantages"][r, start + prompt : start + n] = rng.normal()
                sampled = np.log(1 / vocab) + rng.normal(0, 0.1, n - prompt)
                arrays["inference_logprobs"][r, start + prompt : start + n] = sampled
                start += n
            arrays["position_ids"][r, start:] = np.arange(seq_len - start)
        loss_tokens += int(arrays["loss_mask"].sum())
        micro.append(MicroBatch(**{k: Array.from_numpy(v) for k, v in arrays.items()}))
    return TrainBatch(step=1, rank=0, world_size=1, temperature=1.0, num_loss_tokens=loss_tokens,
                      micro_batches=micro, min_policy_version=0, max_policy_version=0)


def bare_step(model, optimizer, tensors: list[MicroBatchTensors]) -> None:
    for mb in tensors:
        logits = model(input_ids=mb.input_ids, position_ids=mb.position_ids, use_cache=False).logits
        loss = F.cross_entropy(logits[:, :-1].flatten(0, 1).float(), mb.input_ids[:, 1:].flatten())
        (loss / len(tensors)).backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=8, help="Timed steps per path (after one warm-up each).")
    parser.add_argument("--micro-batches", type=int, default=2)
    parser.add_argument("--rows", type=int, default=4, help="Rows of 512 tokens per micro-batch.")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads; 1 keeps the ratio stable on a shared machine "
                             "(OpenMP spins when oversubscribed).")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    device = torch.device("cpu")
    world = World(rank=0, world_size=1, device=device)
    batch = packed_batch(np.random.default_rng(0), args.micro_batches, args.rows)
    tensors = [MicroBatchTensors.from_message(m, device) for m in batch.micro_batches]
    tokens = args.micro_batches * args.rows * SEQ_LEN
    loss = resolve_loss(DPPOLossConfig())

    trainer_model, bare_model = tiny_model(0, ATTENTION), tiny_model(0)  # ATTENTION: as build_train_model sets it
    trainer_opt = torch.optim.AdamW(trainer_model.parameters(), lr=1e-5)
    bare_opt = torch.optim.AdamW(bare_model.parameters(), lr=1e-5)

    def run_trainer():
        train_step(trainer_model, trainer_opt, batch, loss, 1e-5, 1.0, world)

    def run_bare():
        bare_step(bare_model, bare_opt, tensors)

    times: dict[str, list[float]] = {"trainer": [], "bare": []}
    for rep in range(args.reps + 1):
        for name, fn in (("trainer", run_trainer), ("bare", run_bare)):
            t0 = time.perf_counter()
            fn()
            if rep > 0:  # the first repetition warms up allocators and kernels
                times[name].append(time.perf_counter() - t0)

    trainer_tps = tokens / statistics.median(times["trainer"])
    bare_tps = tokens / statistics.median(times["bare"])
    params = sum(p.numel() for p in bare_model.parameters())
    print(f"machine: {platform.processor() or platform.machine()}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, device {device}")
    print(f"model: Qwen3 hidden 128, 4 layers, vocab {VOCAB} ({params / 1e6:.2f} M params); "
          f"step = {args.micro_batches} micro-batches x {args.rows} rows x {SEQ_LEN} tokens = {tokens} tokens; "
          f"{args.reps} reps, medians")
    print(f"trainer step (logprobs + DPPO + clip + AdamW): {trainer_tps:9.0f} tokens/s")
    print(f"bare fwd + mean CE + bwd + AdamW:             {bare_tps:9.0f} tokens/s")
    print(f"ratio trainer / bare: {trainer_tps / bare_tps:.3f}")


if __name__ == "__main__":
    main()
