"""Models a benchmark builds, trained to a held-out target instead of a fixed number of steps
(shared with benchmarks/replay_voi.py, tested in test_calibration.py).

A fixed step count does not reproduce: tiny models learn reverse-text through a phase transition
whose position moves with the CPU's float rounding, so the same 1000 steps gave a 76 % student on
one machine and a 100 % one on another (issue 21). Instead a run saves checkpoints as it trains and
the first checkpoint whose held-out score meets the target is the model:
- the student: the first checkpoint whose score is inside a band (`Band`), so that it is right on
  most steps and teachers can still disagree with it, and, when asked, whose uncertainty ranks its
  own held-out mistakes (an AUROC at least a floor): a gate on the student's uncertainty (replay/voi.py)
  can only find the steps it got wrong if it is calibrated, and a checkpoint caught mid-transition
  often is not (the VOI build's first student in band, 0.69 exact, ranked its mistakes at 0.72);
- each teacher: the first checkpoint that beats the chosen student by a margin.
Checkpoints are scored lazily, in training order, and scoring stops at the first that fits (the
build stops training there too: `checkpoints` may be written while they are scored). A
student that jumps over the band between two checkpoints, or a model that never reaches its
target, stops the build with `CalibrationFailed`: one line naming every score seen, so the fix
(save more often, train longer, widen the band) can be read from it.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path


class CalibrationFailed(Exception):
    """The target was not reached; the message is one line."""


@dataclass(frozen=True)
class Band:
    low: float
    high: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.low <= self.high <= 1.0:
            raise ValueError(f"band [{self.low}, {self.high}] is not inside [0, 1] with low <= high")

    def __str__(self) -> str:
        return f"[{self.low:.2f}, {self.high:.2f}]"


@dataclass(frozen=True)
class Reached:
    """The checkpoint chosen for one model and the calibration it reached."""

    name: str
    step: int
    score: float
    target: str
    scores: tuple[tuple[int, float], ...]
    """Every (step, score) evaluated, in order, up to the chosen one."""
    auroc: float | None = None
    """The chosen checkpoint's uncertainty AUROC on its own held-out mistakes, when that was a target."""

    def line(self) -> str:
        auroc = "" if self.auroc is None else f", uncertainty AUROC {self.auroc:.3f}"
        return f"{self.name}: step {self.step}, held-out {self.score:.3f}{auroc} (target {self.target})"


def _seen(scores: list[tuple[int, float]], aurocs: dict[int, float] | None = None) -> str:
    aurocs = aurocs or {}
    return ", ".join(f"{step}:{score:.2f}" + (f" (AUROC {aurocs[step]:.2f})" if step in aurocs else "")
                     for step, score in scores) or "none"


def first_in_band(name: str, checkpoints: Iterable[int], score: Callable[[int], float], band: Band,
                  auroc: Callable[[int], float] | None = None, min_auroc: float = 0.0) -> Reached:
    """The first checkpoint (in training order) whose score is inside `band` and, with `auroc`, whose
    uncertainty AUROC (asked only of checkpoints in the band) is at least `min_auroc`."""
    seen: list[tuple[int, float]] = []
    aurocs: dict[int, float] = {}
    target = f"in {band}" + (f", AUROC >= {min_auroc:.2f}" if auroc else "")
    for step in checkpoints:
        value = score(step)
        seen.append((step, value))
        if band.low <= value <= band.high:
            if auroc is None:
                return Reached(name, step, value, target, tuple(seen))
            aurocs[step] = auroc(step)
            if aurocs[step] >= min_auroc:
                return Reached(name, step, value, target, tuple(seen), aurocs[step])
        if value > band.high:
            uncalibrated = " with no checkpoint in it calibrated" if aurocs else ""
            raise CalibrationFailed(
                f"{name} jumped over the band {band}{uncalibrated} (held-out score by step: {_seen(seen, aurocs)}): "
                f"save checkpoints more often or widen the band")
    raise CalibrationFailed(f"{name} never reached the band {band} (held-out score by step: {_seen(seen, aurocs)}): "
                            f"train longer or lower the band")


def first_above(name: str, checkpoints: Iterable[int], score: Callable[[int], float], floor: float) -> Reached:
    """The first checkpoint (in training order) whose score is at least `floor`."""
    seen: list[tuple[int, float]] = []
    for step in checkpoints:
        value = score(step)
        seen.append((step, value))
        if value >= floor:
            return Reached(name, step, value, f">= {floor:.2f}", tuple(seen))
    raise CalibrationFailed(f"{name} never reached {floor:.2f} (held-out score by step: {_seen(seen)}): "
                            f"train longer or lower the margin over the student")


def trained_checkpoints(steps: Sequence[int], saved_at: Callable[[int], Path],
                        train: Callable[[], subprocess.Popen]) -> Iterator[int]:
    """`steps` in training order, each yielded once the model saved at it is on disk.

    Checkpoints already on disk (an earlier build's) come first; `train` (a training subprocess that
    saves at `steps`) is started only when one that is not there is asked for, and stopped when the
    caller closes the generator, so a model is trained only as far as its target needs. Training does
    not resume: asking past an earlier build's checkpoints trains again from the start."""

    def on_disk(step: int) -> bool:  # saves are atomic (model/save.py): a checkpoint that is there is complete
        return (saved_at(step) / "config.json").exists()

    todo = list(steps)
    while todo and on_disk(todo[0]):
        yield todo.pop(0)
    if not todo:
        return
    process = train()
    try:
        for step in todo:
            while not on_disk(step):
                if process.poll() is not None and not on_disk(step):  # it may have saved just before exiting
                    raise subprocess.CalledProcessError(process.returncode, process.args)
                time.sleep(1)
            yield step
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait()
