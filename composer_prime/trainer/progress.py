"""Per-step report: a progress bar (plain lines when output is not a terminal), or one log line per step."""

from __future__ import annotations

import logging

from rich import get_console

from composer_prime.utils.progress import step_progress

logger = logging.getLogger("composer_prime.trainer")


def _summary(record: dict) -> str:
    return (
        f"loss {record['loss']:.4f} | grad {record['grad_norm']:.3f} | {record['tokens_per_s']:.0f} tok/s"
        f" | idle {record['idle_s']:.1f}s | lag {record['off_policy_lag']}"
    )


class StepReporter:
    def __init__(self, total: int, start: int, enabled: bool, progress: bool, interval_s: float):
        self.total, self.enabled = total, enabled
        self._progress = None
        if enabled and progress:
            self._progress = step_progress("trainer", get_console(), interval_s=interval_s)
            self._task = self._progress.add_task("train", total=total, completed=start, info="waiting for a batch")
            self._progress.start()

    def update(self, step: int, record: dict) -> None:
        if self._progress is not None:
            self._progress.update(self._task, completed=step, info=_summary(record))
        elif self.enabled:
            logger.info("step %d/%d | %s", step, self.total, _summary(record))

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
