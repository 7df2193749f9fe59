"""The loss channels beside the policy gradient, behind one protocol, built from `[trainer.loss]`.

    loss = L_pg + sum over channels of weight_c * L_c

A channel owns its inputs (hint sites in the batch, preference pairs on disk), its forwards and its
backward calls; `train_step` (trainer/step.py) calls `backward` on every rank, sums what the ranks
return and hands the totals to `finish`. A new channel is one class and one line in build_channels.
"""

from __future__ import annotations

import logging
from typing import Protocol

import torch

from composer_prime.batch import TrainBatch
from composer_prime.configs.trainer import TrainerConfig
from composer_prime.model.load import load_tokenizer
from composer_prime.trainer.hint import HintChannel
from composer_prime.trainer.parallel import World
from composer_prime.trainer.preference import PreferenceChannel

logger = logging.getLogger(__name__)


class LossChannel(Protocol):
    name: str
    """Its loss is logged as `loss/<name>`, its metrics as `<name>/...`."""
    weight: float
    """Its weight in the composed loss (alpha, beta_w); `backward` applies it."""

    def prepare(self, model: torch.nn.Module, world: World) -> None:
        """Once before the first step, with the initial (or resumed) weights."""

    def backward(self, model: torch.nn.Module, batch: TrainBatch, world: World) -> dict[str, float] | None:
        """Backward of weight * this rank's share / the global normaliser; this rank's sums (same keys on
        every rank), or None when the step has no inputs, decided alike on every rank (FSDP collectives)."""

    def finish(self, totals: dict[str, float], batch: TrainBatch) -> tuple[float, dict[str, float]]:
        """From the sums of all ranks: the unweighted loss L_c and the channel's metrics."""

    def held_out(self, model: torch.nn.Module, world: World, step: int, always: bool) -> dict[str, float]:
        """Held-out metrics after `step` when due (always when `always`), else {}; runs on every rank."""


def build_channels(config: TrainerConfig) -> list[LossChannel]:
    """Channels 2 and 3 as configured; each one that is off says why, once."""
    hint, pref = config.loss.hint, config.loss.preference
    channels: list[LossChannel] = []
    if hint.weight > 0:
        channels.append(HintChannel(hint, config.max_steps))
        logger.info("hint channel on: alpha %g, %s, side channel %s", hint.weight, hint.variant, hint.side_channel)
    else:
        logger.info("hint channel off: trainer.loss.hint.weight is 0 (hint sites in batches are ignored)")
    if pref.pairs is None:
        logger.info("preference channel off: trainer.loss.preference.pairs is not set")
    else:
        # With weight 0 the pairs are still read, for held-out accuracy: the ablation's beta = 0 arm needs it.
        channels.append(PreferenceChannel(pref, load_tokenizer(config.model), config.output_dir, config.seed))
        if pref.weight == 0:
            logger.info("preference channel off: trainer.loss.preference.weight is 0 (held-out accuracy still logged)")
    return channels
