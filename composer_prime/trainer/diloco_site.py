"""The trainer as one site of a Streaming DiLoCo run (`[trainer.diloco]`, composer_prime/diloco).

Each site trains on its own shard of every orchestrator step (`[trainer.data]`) with its inner
AdamW; the DiLoCo site syncs fragments with the other sites inside `optimizer.step()` (torchft)
or in `after_inner_step()` (guarded). Only the lead site publishes weight versions.

Healing (torchft): a site restarted after a crash resumes from its own checkpoint, joins the next
quorum and, being behind, receives a peer's state: model, inner optimizer, the fragments' outer
state and the peer's trainer step. The trainer then jumps to that step, skipping the batches it
missed, so every site trains the same step numbers from there on and the lead is never kept
waiting for a site replaying old batches.
"""

from __future__ import annotations

import logging

import torch

from composer_prime.configs.diloco import DiLoCoConfig

logger = logging.getLogger(__name__)


class DiLoCoTrainerSite:
    def __init__(self, config: DiLoCoConfig, model: torch.nn.Module, optimizer: torch.optim.Optimizer):
        self.model, self.optimizer = model, optimizer
        self.step = 0
        """The trainer step being trained: what a healing peer is told to continue from."""
        self._healed_to: int | None = None
        if config.mode == "torchft":
            from composer_prime.diloco.site import DiLoCoSite

            self.site = DiLoCoSite(config, model, optimizer, state_dict=self._state, load_state_dict=self._heal)
        else:
            from composer_prime.diloco.guarded import GuardedDiLoCoSite

            self.site = GuardedDiLoCoSite(config, model, optimizer)

    def _state(self) -> dict:
        return {"model": self.model.state_dict(), "inner_optim": self.optimizer.state_dict(), "step": self.step}

    def _heal(self, state: dict) -> None:
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["inner_optim"])
        self._healed_to = int(state["step"])

    def after_step(self) -> int | None:
        """After the step's optimizer.step(): the step to continue from when this step healed the site, else None."""
        self.site.after_inner_step()
        healed, self._healed_to = self._healed_to, None
        if healed is not None and healed != self.step:
            logger.info("healed from a peer during step %d: continuing from the peer's step %d", self.step, healed)
            return healed
        return None

    def state_dict(self) -> dict:
        return self.site.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.site.load_state_dict(state)

    def __enter__(self) -> DiLoCoTrainerSite:
        self.site.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.site.__exit__(*exc)
