"""The verifiers v1 taskset: one task per row of a tasks JSONL built by `fd-build`.

Two drivers, one implementation of tools and reward. Under verifiers' own runners (`vf-eval`,
`vf-validate`) a rollout gets the task's toolset (feature_deletion.toolset, served over MCP), the
`submitted` stop, and the task's reward and metrics below, which grade the agent's changes the
toolset reports in the rollout's state. An RL orchestrator that renders and samples tokens itself
drives the same tools turn by turn through `task.open_session()` (feature_deletion.rollout). Both
grade with `grading.grade` and score with `rollout.session_outcome`. The `validate` hook gives
`vf-validate` its model-free check (gold scores 1, untouched 0).

Train/eval split, by source file: a task is held out for eval iff the file its definitions were
deleted from ("package/path") hashes into the eval bucket (1 in 8 files), so no eval task deletes a
definition from a file a training task deletes from. A task deleting from several files is
eval only when all of them are eval files, train only when none is, and in neither split when
mixed. Training repositories of the same package still hold eval files intact; a split by package
would also hide those, and needs more packages than the four bundled.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import verifiers.v1 as vf
from pydantic import Field

from feature_deletion.grading import grade, quota_grade, safe_grade
from feature_deletion.rollout import SYSTEM_PROMPT, SessionOutcome, ToolSession, session_outcome
from feature_deletion.sandbox import IsolationUnavailable, probe_isolation
from feature_deletion.task import TaskRow, load_rows, runner_for
from feature_deletion.toolset import FeatureDeletionState, FeatureDeletionToolset, FeatureDeletionToolsetConfig

logger = logging.getLogger(__name__)
DATA = Path(__file__).parent / "data"
DEFAULT_TASKS = DATA / "tasks.jsonl.xz"
EVAL_BUCKETS = 8


def file_split(package: str, file: str) -> Literal["train", "eval"]:
    """The split of one source file of a package."""
    return "eval" if hashlib.sha256(f"{package}/{file}".encode()).digest()[0] % EVAL_BUCKETS == 0 else "train"


def split_of(row: TaskRow) -> Literal["train", "eval"] | None:
    """The task's split: that of the files it deletes from; None when they disagree (the task is in neither)."""
    splits = {file_split(row.package, t.file) for t in row.deletion.targets}
    return splits.pop() if len(splits) == 1 else None


class FeatureDeletionData(vf.TaskData):
    row: dict[str, Any]
    """The task row (see feature_deletion.task.TaskRow)."""
    tasks_dir: str
    """Directory of the tasks file (archives are relative to it)."""
    isolation: Literal["namespace", "none"] = "namespace"
    """How the task's sessions run agent code (the taskset's `isolation`)."""


class FeatureDeletionTask(vf.Task[FeatureDeletionData, FeatureDeletionState]):
    def __init__(self, data: FeatureDeletionData, config: vf.TaskConfig | None = None):
        super().__init__(data, config)
        self._graded: dict[str, asyncio.Future[SessionOutcome]] = {}

    @property
    def row(self) -> TaskRow:
        return TaskRow.model_validate(self.data.row)

    @property
    def key(self) -> str:
        return self.row.id

    def open_session(self) -> ToolSession:
        """A fresh workspace with the tools over it, for one rollout; close it when done."""
        return ToolSession(self.row, Path(self.data.tasks_dir), isolation=self.data.isolation)

    @classmethod
    def toolsets(cls, config) -> list[vf.Toolset]:
        return [FeatureDeletionToolset(FeatureDeletionToolsetConfig())]

    @vf.stop
    async def submitted(self, trace: vf.Trace) -> bool:
        """The agent called submit: the rollout ends and its changes are graded."""
        return trace.state.submitted

    @vf.metric
    async def grading(self, trace: vf.Trace) -> dict[str, float]:
        """F2P/P2P counts, tool calls and errors, turns (rollout.session_outcome's metrics)."""
        return (await self._outcome(trace)).metrics

    @vf.reward(weight=1.0)
    async def tests_pass(self, trace: vf.Trace) -> float:
        """1 when every F2P and P2P test passes; the F2P fraction with all P2P passing; else 0."""
        outcome = await self._outcome(trace)
        self._graded.pop(trace.id, None)
        return outcome.reward

    async def _outcome(self, trace: vf.Trace) -> SessionOutcome:
        # verifiers scores metrics before rewards: one grading serves both, kept until the reward has read it.
        if trace.id not in self._graded:
            self._graded[trace.id] = asyncio.ensure_future(asyncio.to_thread(self._grade, trace.state, trace.num_turns))
        return await self._graded[trace.id]

    def _grade(self, state: FeatureDeletionState, turns: int) -> SessionOutcome:
        row = self.row
        if state.over_quota:
            result = quota_grade(row, state.over_quota)
            return session_outcome(result, state.errors, state.tool_calls, state.submitted, state.tool_calls, turns)
        result = safe_grade(row, Path(self.data.tasks_dir), None, runner_for(row), isolation=self.data.isolation,
                            changes=dict(state.changes))
        result = replace(result, ignored=list(state.ignored))
        return session_outcome(result, state.errors, state.tool_calls, state.submitted, state.tool_calls, turns)

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
    """Which split; the hash of the source file a task deletes from decides (1 in 8 files goes to eval)."""
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
            logger.warning("%d task rows skipped (malformed, of another schema or not gradable soundly)", len(problems))
        rows = [r for r in rows if split_of(r) == config.split]
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
