"""One optimizer step on one TrainBatch: the composed loss, backward per micro-batch, then clip + AdamW.

    loss = L_pg + sum over channels of weight_c * L_c        (trainer/channels.py)

L_pg sums the policy-gradient loss over all ranks' loss tokens and divides by their count; each
channel normalises its own (hint: error-turn tokens, preference: pairs per step). Each channel runs
its own forward passes and backward calls, so peak memory is that of the largest one, not the sum.

A step whose loss or gradient norm is not finite on any rank changes nothing: the optimizer does not
step, every rank skips alike, and the trainer logs a warning and `skipped = 1` (one batch must never
turn every weight into NaN).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from composer_prime.batch import TrainBatch
from composer_prime.configs.trainer import OptimConfig
from composer_prime.loss.packed import packed_loss
from composer_prime.loss.resolve import Loss
from composer_prime.trainer.channels import LossChannel
from composer_prime.trainer.data import MicroBatchTensors
from composer_prime.trainer.logprobs import forward_logprobs
from composer_prime.trainer.parallel import World, all_gather_json, all_reduce_max, clip_grad_norm

logger = logging.getLogger(__name__)

@dataclass
class StepResult:
    loss: float
    """The composed loss (module docstring); `channel_losses` has each channel's own, unweighted."""
    grad_norm: float
    loss_metrics: dict[str, float]
    """Mean of each metric the loss returned, over all its values on all ranks."""
    num_tokens: int
    """Packed tokens forwarded by all ranks (padding included: it is compute spent)."""
    channel_losses: dict[str, float] = field(default_factory=dict)
    """`pg` always; each channel's name on the steps it had inputs (hint: steps with hint sites)."""
    skipped: bool = False
    """The loss or the gradients were not finite: the optimizer did not step (module docstring)."""


def learning_rate(step: int, optim: OptimConfig) -> float:
    """Linear warm-up over the first `warmup_steps` steps (step is 1-based), then constant."""
    if optim.warmup_steps == 0:
        return optim.lr
    return optim.lr * min(1.0, step / optim.warmup_steps)


def train_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, batch: TrainBatch, loss: Loss, lr: float,
               max_norm: float, world: World, channels: Sequence[LossChannel] = ()) -> StepResult:
    for group in optimizer.param_groups:
        group["lr"] = lr
    micro_batches = [MicroBatchTensors.from_message(m, world.device) for m in batch.micro_batches]
    num_tokens = sum(mb.input_ids.numel() for mb in micro_batches)
    # FSDP's collectives run once per forward/backward: every rank must run as many.
    missing = all_reduce_max(len(micro_batches), world) - len(micro_batches)
    micro_batches += [MicroBatchTensors.placeholder(world.device) for _ in range(missing)]
    scale = max(batch.num_loss_tokens, 1)

    loss_sum = torch.zeros((), dtype=torch.float64, device=world.device)
    metric_sums: dict[str, torch.Tensor] = {}
    metric_counts: dict[str, int] = {}
    for mb in micro_batches:
        logprobs = forward_logprobs(model, mb.input_ids, mb.position_ids, batch.temperature, batch.top_p)
        micro_loss, outputs = packed_loss(
            loss, logprobs, mb.inference_logprobs, mb.advantages, mb.loss_mask, mb.position_ids
        )
        (micro_loss / scale).backward()
        loss_sum += micro_loss.detach()
        for key, value in ((k, v) for out in outputs for k, v in out.metrics.items()):
            metric_sums[key] = metric_sums.get(key, 0) + value.detach().double().sum()
            metric_counts[key] = metric_counts.get(key, 0) + value.numel()

    sums = {c.name: part for c in channels if (part := c.backward(model, batch, world)) is not None}

    grad_norm = clip_grad_norm([p for p in model.parameters() if p.grad is not None], max_norm)
    local_finite = math.isfinite(float(grad_norm)) and math.isfinite(float(loss_sum)) and all(
        math.isfinite(v) for part in sums.values() for v in part.values())
    skipped = all_reduce_max(int(not local_finite), world) == 1
    if skipped:
        logger.warning("step skipped: its loss or gradients are not finite (grad norm %s); the weights are unchanged",
                       float(grad_norm))
    else:
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)

    keys = sorted(metric_sums)
    values = torch.stack([loss_sum, *(metric_sums[k] for k in keys)]).tolist()  # one device sync
    local = {"loss_sum": values[0], "num_tokens": num_tokens, "sums": sums,
             "metrics": {k: [v, metric_counts[k]] for k, v in zip(keys, values[1:])}}
    ranks = all_gather_json(local, world)
    totals: dict[str, list[float]] = {}
    for r in ranks:
        for key, (s, n) in r["metrics"].items():
            acc = totals.setdefault(key, [0.0, 0])
            acc[0] += s
            acc[1] += n
    loss_metrics = {k: s / n for k, (s, n) in totals.items() if n > 0}
    loss = pg = sum(r["loss_sum"] for r in ranks) / scale
    channel_losses = {"pg": pg}
    for channel in channels:
        if channel.name in sums:
            part_totals = {key: sum(r["sums"][channel.name][key] for r in ranks) for key in sums[channel.name]}
            channel_losses[channel.name], metrics = channel.finish(part_totals, batch)
            loss_metrics |= metrics
            loss += channel.weight * channel_losses[channel.name]
    return StepResult(loss=loss, grad_norm=float(grad_norm), loss_metrics=loss_metrics,
                      num_tokens=sum(r["num_tokens"] for r in ranks), channel_losses=channel_losses, skipped=skipped)
