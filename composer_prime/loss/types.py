"""The loss contract, field for field PRIME-RL's (`prime_rl.trainer.rl.loss`).

A loss is `fn(inputs: LossInputs, **kwargs) -> LossOutputs`, called on ONE sequence (one
packed sample) at a time. It returns the SUM of its per-token terms over `loss_mask`; the
trainer adds the sums of every sequence of every micro-batch and rank and divides by the
global count of loss tokens of the step (`TrainBatch.num_loss_tokens`), so each token
weighs the same whatever sequence, micro-batch or rank it lands in. A PRIME-RL loss runs
here unchanged once its import reads `from composer_prime.loss import LossInputs, LossOutputs`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from torch import Tensor


@dataclass
class LossInputs:
    """One sequence's tokens; every tensor is 1-D of the same length (position t = token t)."""

    trainer_logprobs: Tensor
    """log pi_theta(token_t | <t) at the batch temperature, differentiable."""
    inference_logprobs: Tensor
    """log mu(token_t | <t) reported by the sampler (0 off the loss mask)."""
    ref_logprobs: Tensor | None
    """Reference-model log-probs when the run computes them, else None."""
    advantages: Tensor
    """The sample's advantage broadcast over its tokens (0 off the loss mask)."""
    loss_mask: Tensor
    """bool: the tokens this loss trains on."""
    loss_weights: Tensor | None = field(default=None)
    """Per-token weights that scale the per-token loss; None means 1.0 everywhere."""


@dataclass
class LossOutputs:
    """`loss`: a 0-d tensor, the SUM over loss tokens. `metrics`: detached-or-not tensors,
    0-d (one value per call) or 1-D (one value per token); the trainer logs the mean of
    all values of a key over the step's calls, micro-batches and ranks."""

    loss: Tensor
    metrics: dict[str, Tensor]


LossFn = Callable[..., LossOutputs]
"""`fn(inputs: LossInputs, **kwargs) -> LossOutputs`."""
