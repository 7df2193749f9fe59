"""Progress of a long-running command: rich's live bar on a terminal, plain lines anywhere else (CI logs,
nohup, output redirected to a file), where a live bar shows nothing until the command ends."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, Task, TaskID, TextColumn, TimeElapsedColumn


def step_progress(name: str, console: Console, enabled: bool = True, interval_s: float = 30.0) -> Progress:
    """A `name` bar (steps done of total, the task's `info` field, time elapsed) when `console` is a terminal,
    else a `PlainProgress`; nothing at all when not `enabled`. Add tasks with an `info` field."""
    if enabled and not console.is_terminal:
        return PlainProgress(name, console, interval_s)
    columns = (TextColumn(f"[bold]{name}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[info]}"),
               TimeElapsedColumn())
    return Progress(*columns, console=console, disable=not enabled)


class PlainProgress(Progress):
    """Prints `name: step 3/10  <info>  elapsed 1m05s` per task at most every `interval_s` seconds, and once
    more on stop so the log ends with the final state. Lines are due on `update` (no thread of its own):
    a command that stops updating stops printing, which is what a stalled run looks like."""

    def __init__(self, name: str, console: Console, interval_s: float):
        super().__init__(console=console, disable=True)  # rich still keeps the tasks and their times
        self.name, self.interval_s = name, interval_s
        self._next_line_at = self.get_time() + interval_s

    def update(self, task_id: TaskID, **changes: Any) -> None:
        super().update(task_id, **changes)
        now = self.get_time()
        if now >= self._next_line_at:
            self._next_line_at = now + self.interval_s
            self._print_lines()

    def stop(self) -> None:
        self._print_lines()
        super().stop()

    def _print_lines(self) -> None:
        for task in self.tasks:
            # soft_wrap: a file has no width, and markup off: info text may hold brackets
            self.console.print(self._line(task), markup=False, highlight=False, soft_wrap=True)

    def _line(self, task: Task) -> str:
        total = "?" if task.total is None else str(int(task.total))
        parts = [f"{self.name}: step {int(task.completed)}/{total}", str(task.fields.get("info", "")),
                 f"elapsed {duration(task.elapsed or 0.0)}"]
        return "  ".join(p for p in parts if p)


def duration(seconds: float) -> str:
    """`45s`, `1m32s`, `2h05m`."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
