"""Chunked full-vocabulary JSD against cross-entropy, and the top-k side channel's cost and error.

(1) Peak memory and time of `chunked_generalized_jsd` forward + backward against
    `torch.nn.functional.cross_entropy` forward + backward on the same `[tokens, 151936]` float32
    logits. Each measurement runs in a fresh subprocess: peak = the process's VmHWM (reset through
    /proc/self/clear_refs before each phase) minus its VmRSS once the inputs exist, so it is the
    extra memory above the inputs, the `[tokens, V]` gradient included for both. Times are the
    minimum over repetitions after one warm-up, wall clock and process CPU time. The float32
    chunked and naive forms are then both compared with a float64 `generalized_jsd`.
(2) The top-k + tail side channel on a real model's distributions: a tiny Qwen3 (hidden 128, 4
    layers, vocab 1024) trained for a few steps on generated text; the teacher is the final model,
    the student the same model earlier in training, both on held-out text. For k in 16/64/256:
    bytes per token on the wire and the error of `sparse_generalized_jsd` against the full JSD.

    uv run python benchmarks/jsd_memory.py [--tokens 2048 --reps 3 --threads 1]
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

from composer_prime.loss.jsd import chunked_generalized_jsd, generalized_jsd, sparse_generalized_jsd
from composer_prime.loss.topk import extract_topk

VOCAB = 151_936


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current RSS


def measure(kind: str, tokens: int, beta: float, reps: int) -> dict:
    """One subprocess's measurement of `kind` ("ce" or "jsd")."""
    generator = torch.Generator().manual_seed(0)
    logits = torch.empty(tokens, VOCAB).normal_(generator=generator).mul_(3.0).requires_grad_()
    teacher = torch.empty(tokens, VOCAB).normal_(generator=generator).mul_(3.0) if kind == "jsd" else None
    targets = torch.randint(0, VOCAB, (tokens,), generator=generator)

    def forward() -> torch.Tensor:
        if kind == "ce":
            return F.cross_entropy(logits, targets)
        return chunked_generalized_jsd(logits, teacher, beta=beta)

    forward().backward()  # warm-up
    logits.grad = None
    base = _status_kib("VmRSS")
    _reset_peak()
    loss = forward()
    forward_peak = _status_kib("VmHWM") - base
    _reset_peak()
    loss.backward()
    peak = max(forward_peak, _status_kib("VmHWM") - base)
    logits.grad = None
    del loss

    walls, cpus = [], []
    for _ in range(reps):
        wall, cpu = time.perf_counter(), time.process_time()
        forward().backward()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
        logits.grad = None
    return {"forward_peak_mib": forward_peak / 1024, "peak_mib": peak / 1024, "wall_s": min(walls), "cpu_s": min(cpus)}


def run_measurement(kind: str, tokens: int, beta: float, reps: int, threads: int) -> dict:
    command = [sys.executable, __file__, "--measure", kind, "--tokens", str(tokens), "--beta", str(beta)]
    command += ["--reps", str(reps), "--threads", str(threads)]
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def check_against_float64(tokens: int) -> list[tuple[float, float, float, float, float]]:
    """Per beta: max |error| against a float64 `generalized_jsd` of the float32 naive and chunked
    forms, values then gradients, on `[tokens, V]` logits; plus max |float64 gradient|."""
    generator = torch.Generator().manual_seed(1)
    student = torch.empty(tokens, VOCAB).normal_(generator=generator).mul_(3.0)
    teacher = torch.empty(tokens, VOCAB).normal_(generator=generator).mul_(3.0)

    def value_and_grad(form, logits, teacher_logits, beta):
        leaf = logits.clone().requires_grad_()
        value = form(leaf, teacher_logits, beta=beta, reduction="none")
        value.sum().backward()
        return value.detach().double(), leaf.grad.double()

    rows = []
    for beta in (0.0, 0.5, 1.0):
        ref_value, ref_grad = value_and_grad(generalized_jsd, student.double(), teacher.double(), beta)
        naive_value, naive_grad = value_and_grad(generalized_jsd, student, teacher, beta)
        chunked_value, chunked_grad = value_and_grad(chunked_generalized_jsd, student, teacher, beta)
        rows.append(
            (
                beta,
                (naive_value - ref_value).abs().max().item(),
                (chunked_value - ref_value).abs().max().item(),
                (naive_grad - ref_grad).abs().max().item(),
                (chunked_grad - ref_grad).abs().max().item(),
            )
        )
    return rows


def tiny_model_distributions(train_steps: int, snapshot_step: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(student logits, teacher logits) `[tokens, 1024]` of a tiny Qwen3 on held-out generated text."""
    from composer_prime.model.tiny import TinyModelConfig, build_model, build_tokenizer, corpus

    config = TinyModelConfig(corpus_lines=3000)
    tokenizer = build_tokenizer(config)
    model = build_model(config, tokenizer)
    ids = [i for line in tokenizer([line + "\n" for line in corpus(6000, seed=1)])["input_ids"] for i in line]
    seq, batch = 128, 16
    data = torch.tensor(ids[: len(ids) // seq * seq]).view(-1, seq)
    train, held_out = data[:-16], data[-16:]
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(0)
    student_logits = None
    for step in range(1, train_steps + 1):
        rows = train[torch.randint(0, len(train), (batch,), generator=generator)]
        loss = model(input_ids=rows, labels=rows).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step == snapshot_step:
            with torch.no_grad():
                student_logits = model(input_ids=held_out).logits.reshape(-1, model.config.vocab_size)
    print(f"tiny model trained {train_steps} steps, final train loss {loss.item():.3f}", flush=True)
    with torch.no_grad():
        teacher_logits = model(input_ids=held_out).logits.reshape(-1, model.config.vocab_size)
    return student_logits, teacher_logits


def topk_report(train_steps: int, snapshot_step: int) -> None:
    student, teacher = tiny_model_distributions(train_steps, snapshot_step)
    vocab = teacher.shape[-1]
    teacher_probs = torch.softmax(teacher, -1)
    entropy = -(teacher_probs * teacher_probs.log()).sum(-1).mean().item()
    print(f"\n(2) top-k side channel, {teacher.shape[0]} held-out tokens, vocab {vocab}")
    print(f"teacher entropy {entropy:.2f} nats (uniform: {math.log(vocab):.2f}); full row {vocab * 4} bytes in float32")
    _row("k", "bytes/token", "teacher tail mass", "beta", "full JSD", "top-k+tail JSD", "rel. error", "mean abs error")
    _row(*["---"] * 8)
    for k in (16, 64, 256):
        side_channel = extract_topk(teacher, k)
        wire = side_channel.ids.element_size() * k + side_channel.logprobs.element_size() * k
        tail = (1 - side_channel.logprobs.exp().sum(-1)).mean().item()
        for beta in (0.0, 0.5, 1.0):
            full = generalized_jsd(student, teacher, beta=beta, reduction="none")
            sparse = sparse_generalized_jsd(student, side_channel, beta=beta, reduction="none")
            rel = (sparse.mean() - full.mean()).abs().item() / full.mean().item()
            mean_abs = (sparse - full).abs().mean().item()
            values = (f"{full.mean():.5f}", f"{sparse.mean():.5f}", f"{rel:.1%}", f"{mean_abs:.5f}")
            _row(k, wire, f"{tail:.4f}", beta, *values)


def _row(*cells) -> None:
    print("| " + " | ".join(str(cell) for cell in cells) + " |")


def _cells(measured: dict) -> list[str]:
    return [
        f"{measured['forward_peak_mib']:.0f}",
        f"{measured['peak_mib']:.0f}",
        f"{measured['wall_s']:.2f}",
        f"{measured['cpu_s']:.2f}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=2048)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--check-tokens", type=int, default=128)
    parser.add_argument("--train-steps", type=int, default=100)
    parser.add_argument("--snapshot-step", type=int, default=40)
    parser.add_argument("--measure", choices=["ce", "jsd"], help=argparse.SUPPRESS)
    parser.add_argument("--beta", type=float, default=1.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.measure:
        print(json.dumps(measure(args.measure, args.tokens, args.beta, args.reps)))
        return

    print(f"{platform.processor() or platform.machine()}, torch {torch.__version__}, {args.threads} thread(s)")
    size_mib = args.tokens * VOCAB * 4 / 2**20
    print(f"\n(1) forward + backward on [{args.tokens}, {VOCAB}] float32 logits ({size_mib:.0f} MiB each)")
    ce = run_measurement("ce", args.tokens, 0.0, args.reps, args.threads)
    _row("loss", "forward peak MiB", "peak MiB", "wall s", "cpu s", "peak / CE", "wall / CE", "cpu / CE")
    _row(*["---"] * 8)
    _row("cross-entropy", *_cells(ce), 1, 1, 1)
    for beta in (1.0, 0.0, 0.5):
        jsd = run_measurement("jsd", args.tokens, beta, args.reps, args.threads)
        ratios = [f"{jsd[key] / ce[key]:.2f}" for key in ("peak_mib", "wall_s", "cpu_s")]
        _row(f"chunked JSD beta={beta}", *_cells(jsd), *ratios)
    print(f"\nmax |error| against float64 generalized_jsd on [{args.check_tokens}, {VOCAB}] float32 logits:")
    _row("beta", "naive value", "chunked value", "naive grad", "chunked grad")
    _row(*["---"] * 5)
    for beta, *errors in check_against_float64(args.check_tokens):
        _row(beta, *(f"{error:.1e}" for error in errors))
    topk_report(args.train_steps, args.snapshot_step)


if __name__ == "__main__":
    main()
