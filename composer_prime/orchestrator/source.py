"""Where a step's rollouts come from: the contract between a rollout source and the step loop (main.py).

For step N a source hands the loop `batch_size / group_size` scored groups, each with its advantages,
none sampled by a weight version older than N-1-max_off_policy_steps (CollectedStep). The loop gives
them to the one sink (sink.py), which publishes the step, then tells the source (`published`), so a
source that carries state across a crash (the volunteers' pool) lets go of it only then.
A new source is one file with one class that satisfies RolloutSource.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from composer_prime.rollout.multi_turn import ToolGroup
from composer_prime.rollout.single_turn import Group


@dataclass
class StepStats:
    wait_weights_s: float = 0.0
    dropped_off_policy: int = 0
    dropped_uniform: int = 0
    elapsed_s: float = 0.0
    extra: dict[str, float] = field(default_factory=dict)
    """The source's own metrics (verification counts, per-worker stats), logged as they are."""


@dataclass
class CollectedStep:
    groups: list[tuple[Group | ToolGroup, list[float]]]
    """Each group with its advantages, by batch slot (a trace is named by its slot)."""
    stats: StepStats


class RolloutSource(Protocol):
    lookahead: int
    """Steps after the one being published that may be collected meanwhile (0: one step at a time)."""

    async def collect_step(self, step: int) -> CollectedStep:
        """Step `step`'s groups, once the weights it may be sampled from exist (waits for them)."""

    async def serve(self) -> None:
        """What runs beside the loop until it is cancelled (weight watcher, coordinator); raising ends the run."""

    def published(self, step: int) -> None:
        """Step `step` is on disk, with its metrics."""
