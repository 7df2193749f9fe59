"""The verifiers v1 taskset: one task per row of a tasks JSONL built by `fd-build`.

Rollouts run through `feature_deletion.rollout.run_rollout` (tools + sandbox + grading), or turn by
turn through the session a Task opens (`task.open_session()`, what an RL orchestrator drives); the
Task's `validate` hook gives `vf-validate` a model-free check (gold scores 1, untouched 0).
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any, Literal

import verifiers.v1 as vf
from pydantic import Field

from feature_deletion.grading import grade
from feature_deletion.rollout import SYSTEM_PROMPT, ToolSession
from feature_deletion.sandbox import IsolationUnavailable, probe_isolation
from feature_deletion.task import TaskRow, load_rows, runner_for

logger = logging.getLogger(__name__)
DATA = Path(__file__).parent / "data"
DEFAULT_TASKS = DATA / "tasks.jsonl.xz"
EVAL_BUCKETS = 8


def split_of(task_id: str) -> Literal["train", "eval"]:
    return "eval" if hashlib.sha256(task_id.encode()).digest()[0] % EVAL_BUCKETS == 0 else "train"


class FeatureDeletionData(vf.TaskData):
    row: dict[str, Any]
    """The task row (see feature_deletion.task.TaskRow)."""
    tasks_dir: str
    """Directory of the tasks file (archives are relative to it)."""
    isolation: Literal["namespace", "none"] = "namespace"
    """How the task's sessions run agent code (the taskset's `isolation`)."""


class FeatureDeletionTask(vf.Task[FeatureDeletionData]):
    @property
    def row(self) -> TaskRow:
        return TaskRow.model_validate(self.data.row)

    @property
    def key(self) -> str:
        return self.row.id

    def open_session(self) -> ToolSession:
        """A fresh workspace with the tools over it, for one rollout; close it when done."""
        return ToolSession(self.row, Path(self.data.tasks_dir), isolation=self.data.isolation)

    async def validate(self, runtime=None) -> bool | None:
        """Gold patch scores 1.0 and the untouched task 0.0 (in the local sandbox)."""
        row, tasks_dir = self.row, Path(self.data.tasks_dir)
        runner = runner_for(row)
        gold = grade(row, tasks_dir, None, runner, changes={k: v.encode() for k, v in row.gold_files.items()})
        noop = grade(row, tasks_dir, None, runner)
        return gold.reward == 1.0 and noop.reward == 0.0


class FeatureDeletionConfig(vf.TasksetConfig):
    tasks_path: str | None = None
    """Tasks JSONL from fd-build; default: the tasks bundled with the package."""
    split: Literal["train", "eval"] = "train"
    """Which split; a task id's hash decides (1 in 8 goes to eval)."""
    num_examples: int | None = Field(None, ge=1)
    """Keep at most this many tasks (file order)."""
    isolation: Literal["namespace", "none"] = "namespace"
    """`none` runs agent code without isolation: an explicit opt-out, never the default."""


class FeatureDeletionTaskset(vf.Taskset[FeatureDeletionTask, FeatureDeletionConfig]):
    def load(self) -> list[FeatureDeletionTask]:
        config = self.config
        if config.isolation == "namespace" and (reason := probe_isolation()):
            raise IsolationUnavailable(
                f"feature-deletion runs agent code and cannot isolate it here ({reason}); "
                "set isolation = \"none\" to run it unsandboxed anyway")
        if config.isolation == "none":
            logger.warning("feature-deletion: isolation = none - agent code runs UNSANDBOXED on this machine")
        path = Path(config.tasks_path) if config.tasks_path else DEFAULT_TASKS
        if not path.is_file():
            raise ValueError(f"tasks file {path} not found; build one with fd-build")
        rows, problems = load_rows(path)
        for p in problems:
            logger.warning(p)
        if problems:
            logger.warning("%d malformed task rows skipped", len(problems))
        rows = [r for r in rows if split_of(r.id) == config.split]
        if config.num_examples is not None:
            rows = rows[: config.num_examples]
        return [
            FeatureDeletionTask(
                FeatureDeletionData(id=r.id, name=r.id, prompt=f"Task id: {r.id}\n\n{r.prompt}",
                                    system_prompt=SYSTEM_PROMPT, row=r.model_dump(mode="json"),
                                    tasks_dir=str(path.parent.resolve()), isolation=config.isolation),
                config.task,
            )
            for r in rows
        ]
