"""Structured metrics: one JSON object per line in `<output>/metrics.jsonl`, shared by all processes.

Each record is written with a single `write` on an O_APPEND descriptor, which Linux keeps
whole for short lines, so the trainer, orchestrator and inference can append to one file.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

from composer_prime.errors import UserError


def _clean(value: Any) -> Any:
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class MetricsLogger:
    """Appends `{"process", "step", "time", **metrics}` records; optionally mirrors to wandb."""

    def __init__(self, output_dir: Path, process: str, wandb_project: str | None = None, config: dict | None = None):
        self.path = Path(output_dir) / "metrics.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.process = process
        self._wandb = None
        if wandb_project:
            try:
                import wandb  # the optional extra: only when the user asked for it
            except ImportError:
                raise UserError(f"log.wandb_project is {wandb_project!r} but wandb is not installed: "
                                "uv sync --extra wandb") from None

            # One run per process, grouped by the run directory: rl's three processes land side by side.
            run = Path(output_dir).name
            self._wandb = wandb.init(project=wandb_project, group=run, name=f"{run}-{process}", config=config)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def log(self, step: int, metrics: dict[str, Any]) -> dict[str, Any]:
        record = {"process": self.process, "step": step, "time": time.time()}
        record.update({k: _clean(v) for k, v in metrics.items()})
        os.write(self._fd, (json.dumps(record) + "\n").encode())
        if self._wandb is not None:
            self._wandb.log({f"{self.process}/{k}": v for k, v in record.items() if isinstance(v, (int, float))}, step=step)
        return record

    def close(self) -> None:
        os.close(self._fd)
        if self._wandb is not None:
            self._wandb.finish()


def read_metrics(output_dir: Path, process: str | None = None) -> list[dict[str, Any]]:
    path = Path(output_dir) / "metrics.jsonl"
    if not path.is_file():
        return []
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in records if process is None or r.get("process") == process]


class MetricsFollower:
    """Reads only the records appended since the last call, like `tail -f`, for live displays."""

    def __init__(self, output_dir: Path):
        self.path = Path(output_dir) / "metrics.jsonl"
        self._offset = 0

    def new_records(self) -> list[dict[str, Any]]:
        if not self.path.is_file():
            return []
        with open(self.path, "rb") as f:
            f.seek(self._offset)
            data = f.read()
        complete = data[: data.rfind(b"\n") + 1]  # a line still being written waits for the next call
        self._offset += len(complete)
        return [json.loads(line) for line in complete.splitlines() if line.strip()]
