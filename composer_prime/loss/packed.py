"""Apply a per-sequence loss to a packed micro-batch (see composer_prime/batch.py for packing)."""

from __future__ import annotations

import torch
from torch import Tensor

from composer_prime.loss.resolve import Loss
from composer_prime.loss.types import LossInputs, LossOutputs


def segment_lengths(position_ids: Tensor) -> list[int]:
    """Lengths of the packed segments of a flat position_ids: a segment starts where positions restart at 0."""
    starts = (position_ids.reshape(-1) == 0).nonzero().flatten().tolist()
    if not starts or starts[0] != 0:
        starts.insert(0, 0)  # a row never starts mid-sample, but stay total on odd input
    return [end - start for start, end in zip(starts, starts[1:] + [position_ids.numel()])]


def packed_loss(
    loss: Loss,
    trainer_logprobs: Tensor,
    inference_logprobs: Tensor,
    advantages: Tensor,
    loss_mask: Tensor,
    position_ids: Tensor,
    ref_logprobs: Tensor | None = None,
    loss_weights: Tensor | None = None,
) -> tuple[Tensor, list[LossOutputs]]:
    """Sum of `loss` over every sample packed in the (any-shape, same-shape) tensors.

    Elementwise losses get one call on the flattened micro-batch; others get one call per
    segment that holds loss tokens (padding and prompt-only segments contribute nothing).
    The returned sum always depends on `trainer_logprobs`, so backward runs even when no
    token is trained on: every data-parallel rank must run it for FSDP's collectives.
    """
    flat = [None if t is None else t.reshape(-1) for t in
            (trainer_logprobs, inference_logprobs, ref_logprobs, advantages, loss_mask, loss_weights)]
    if loss.elementwise:
        out = loss.fn(LossInputs(*flat))
        return out.loss, [out]

    lengths = segment_lengths(position_ids)
    pieces = [None if t is None else torch.split(t, lengths) for t in flat]
    tokens_per_segment = torch.stack([m.sum() for m in pieces[4]]).tolist()
    total = flat[0].sum() * 0.0
    outputs = []
    for i, n_tokens in enumerate(tokens_per_segment):
        if n_tokens == 0:
            continue
        out = loss.fn(LossInputs(*(None if p is None else p[i] for p in pieces)))
        total = total + out.loss
        outputs.append(out)
    return total, outputs
