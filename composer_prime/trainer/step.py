"""One optimizer step on one TrainBatch: the composed loss, backward per micro-batch, then clip + AdamW.

    loss = L_pg + alpha * L_hint + beta_w * L_pref

L_pg sums the policy-gradient loss over all ranks' loss tokens and divides by their count;
L_hint does the same over the hint sites' error-turn tokens (trainer/hint.py); L_pref is the
mean over the step's preference pairs (trainer/preference.py). Each channel runs its own
forward passes and backward calls, so peak memory is that of the largest one, not the sum.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from composer_prime.batch import TrainBatch
from composer_prime.loss.packed import packed_loss
from composer_prime.loss.registry import Loss
from composer_prime.trainer.config import OptimConfig
from composer_prime.trainer.data import MicroBatchTensors
from composer_prime.trainer.hint import HintChannel, HintTensors
from composer_prime.trainer.logprobs import forward_logprobs
from composer_prime.trainer.preference import PreferenceChannel
from composer_prime.trainer.parallel import World, all_gather_json, all_reduce_max, clip_grad_norm


@dataclass
class Channels:
    """The optional loss channels of a run, each None when off (weight 0 or no inputs configured)."""

    hint: HintChannel | None = None
    hint_weight: float = 0.0
    preference: PreferenceChannel | None = None
    preference_weight: float = 0.0


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
    """`pg` always; `hint` on steps with hint sites; `preference` when the channel is on."""


def learning_rate(step: int, optim: OptimConfig) -> float:
    """Linear warm-up over the first `warmup_steps` steps (step is 1-based), then constant."""
    if optim.warmup_steps == 0:
        return optim.lr
    return optim.lr * min(1.0, step / optim.warmup_steps)


def train_step(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    batch: TrainBatch,
    loss: Loss,
    lr: float,
    max_norm: float,
    world: World,
    channels: Channels | None = None,
) -> StepResult:
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
        logprobs = forward_logprobs(model, mb.input_ids, mb.position_ids, batch.temperature)
        micro_loss, outputs = packed_loss(
            loss, logprobs, mb.inference_logprobs, mb.advantages, mb.loss_mask, mb.position_ids
        )
        (micro_loss / scale).backward()
        loss_sum += micro_loss.detach()
        for out in outputs:
            _add_metrics(out.metrics, metric_sums, metric_counts)

    channels = channels or Channels()
    sums: dict[str, float] = {}
    if channels.hint is not None and batch.num_hint_tokens > 0:  # a global count: every rank takes this branch
        sums |= _hint_backward(model, batch, channels, world)
    if channels.preference is not None:
        sums |= _preference_backward(model, batch.step, channels, world, metric_sums, metric_counts)

    grad_norm = clip_grad_norm([p for p in model.parameters() if p.grad is not None], max_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)

    keys = sorted(metric_sums)
    values = torch.stack([loss_sum, *(metric_sums[k] for k in keys)]).tolist()  # one device sync
    local = {
        "loss_sum": values[0],
        "num_tokens": num_tokens,
        "sums": sums,
        "metrics": {k: [v, metric_counts[k]] for k, v in zip(keys, values[1:])},
    }
    ranks = all_gather_json(local, world)
    totals: dict[str, list[float]] = {}
    for r in ranks:
        for key, (s, n) in r["metrics"].items():
            acc = totals.setdefault(key, [0.0, 0])
            acc[0] += s
            acc[1] += n
    pg = sum(r["loss_sum"] for r in ranks) / scale
    channel_losses = {"pg": pg}
    totals_sums = {key: sum(r["sums"][key] for r in ranks) for key in sums}
    loss = pg
    if "hint" in totals_sums:
        channel_losses["hint"] = totals_sums["hint"] / batch.num_hint_tokens
        totals["hint/kl"] = [totals_sums["hint/kl"], batch.num_hint_tokens]
        totals["hint/sites"] = [totals_sums["hint/sites"], 1]
        loss += channels.hint_weight * channel_losses["hint"]
    if "preference" in totals_sums:
        channel_losses["preference"] = totals_sums["preference"] / channels.preference.config.pairs_per_step
        loss += channels.preference_weight * channel_losses["preference"]
    return StepResult(
        loss=loss,
        grad_norm=float(grad_norm),
        loss_metrics={k: s / n for k, (s, n) in totals.items() if n > 0},
        num_tokens=sum(r["num_tokens"] for r in ranks),
        channel_losses=channel_losses,
    )


def _add_metrics(metrics: dict[str, Tensor], sums: dict, counts: dict) -> None:
    for key, value in metrics.items():
        value = value.detach().double()
        sums[key] = sums.get(key, 0) + value.sum()
        counts[key] = counts.get(key, 0) + value.numel()


def _hint_backward(model, batch: TrainBatch, channels: Channels, world: World) -> dict[str, float]:
    hint = channels.hint
    micro = hint.micro_batches(batch.hint_sites, world.device)
    micro += [HintTensors.placeholder(world.device) for _ in range(all_reduce_max(len(micro), world) - len(micro))]
    loss_sum, kl_sum, sites = 0.0, 0.0, 0.0
    for mb in micro:
        loss, diag = hint.loss(model, mb)
        (channels.hint_weight * loss / batch.num_hint_tokens).backward()
        loss_sum += loss.item()
        kl_sum += float(diag.get("hint/kl", 0.0))
        sites += float(diag.get("hint/sites", 0.0))
    return {"hint": loss_sum, "hint/kl": kl_sum, "hint/sites": sites}


def _preference_backward(model, step: int, channels: Channels, world: World, metric_sums, metric_counts
                         ) -> dict[str, float]:
    pref = channels.preference
    pairs = pref.step_pairs(step, world.rank, world.world_size)
    if not pairs:  # fewer pairs than ranks: still one forward/backward, for FSDP's collectives
        logits = model(input_ids=torch.zeros(1, 2, dtype=torch.long, device=world.device), use_cache=False).logits
        (logits.sum() * 0.0).backward()
        return {"preference": 0.0}
    loss, diag = pref.loss(model, pairs, world.device)
    (channels.preference_weight * loss / pref.config.pairs_per_step).backward()
    _add_metrics(diag, metric_sums, metric_counts)
    return {"preference": loss.item()}
