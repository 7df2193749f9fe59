"""Environments: verifiers v1 tasksets, loaded by id, seen as prompts plus a scorer.

Any installed v1 taskset package works (ours live in `environments/`): the id resolves
through verifiers' own loader, and a completion is scored by the verifiers Task's own
`@vf.reward` / `@vf.metric` functions run on a real verifiers Trace of the conversation.
Only runtime-free rewards run: there is no sandbox behind a single-turn completion.

Splits: a taskset whose config declares a `split` field is loaded once per split with
`split = "train"` / `"eval"`, so it decides how to keep them apart; any other taskset
serves the same tasks to both (with a warning). Reference answers for SFT come from a
string `answer` field on the task data, when the taskset has one.

Feedback: a Task may define `async def feedback(self, trace) -> str | None`, the explanation a
failing check would print (e.g. expected vs got). It becomes the message of the rollout's
`wrong_answer` error site, which the hint writer turns into a hint (composer_prime/hints/).

Tools: a Task that defines `open_session() -> ToolSession` (below) makes the environment multi-turn:
the orchestrator opens one session per rollout, drives the conversation itself (multi_turn.py) and
takes the reward from the session's grading instead of `score`. feature-deletion is one.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Literal, Protocol

import verifiers.v1 as vf
from pydantic import TypeAdapter, ValidationError
from verifiers.v1.graph import MessageNode
from verifiers.v1.types import AssistantMessage, Message, content_text
from verifiers.v1.utils import loaders

from composer_prime.errors import UserError
from composer_prime.configs.rollout import EnvConfig

logger = logging.getLogger(__name__)

Split = Literal["train", "eval"]
SPLITS: tuple[Split, ...] = ("train", "eval")

_MESSAGE = TypeAdapter(Message)
_REQUIREMENT_NAME = re.compile(r"[A-Za-z0-9._-]*")
# No harness or sandbox plays in a trace built here; the seat records who produced it.
_AGENT = vf.AgentInfo(config=vf.AgentConfig(runtime=vf.SubprocessConfig()), name="composer-prime")


@dataclass(frozen=True)
class Example:
    id: str  # stable across runs, e.g. "eval/17"
    prompt: list[dict[str, str]]  # chat messages, system prompt first when there is one
    answer: str | None  # reference answer (SFT demonstrations), when the env has one
    task: vf.Task  # the verifiers Task behind it


@dataclass(frozen=True)
class Score:
    reward: float  # the weighted sum of the task's rewards
    metrics: dict[str, float]  # each reward's own score and each metric
    feedback: str | None = None  # the task's explanation of the score, when it gives one


class SessionOutcome(Protocol):
    reward: float
    metrics: dict[str, float]
    errors: list[dict[str, Any]]
    """{"kind", "turn", "message", ...}: `turn` indexes the conversation's messages (an assistant message)."""


class ToolSession(Protocol):
    """One rollout's tools and state (a sandboxed workspace, say). Its methods block: they run in a thread."""

    tools: list[dict[str, Any]]
    """OpenAI-style tool schemas offered to the model."""

    @property
    def done(self) -> bool:
        """The agent ended the episode (e.g. called `submit`)."""

    def call(self, name: str, arguments: str, turn: int) -> str:
        """Run one call of assistant message `turn`; failures come back as text and are recorded in `errors`."""

    def finish(self, last_turn: int, turns: int) -> SessionOutcome:
        """Grade the episode (`turns` assistant messages, the last one at index `last_turn`)."""

    def close(self) -> None: ...


def _prompt(data: vf.TaskData) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": data.system_prompt}] if data.system_prompt else []
    if isinstance(data.prompt, str):
        messages.append({"role": "user", "content": data.prompt})
    else:
        messages += [{"role": m.role, "content": content_text(m.content)} for m in data.prompt or []]
    return messages


def _example(split: Split, task: vf.Task) -> Example:
    answer = getattr(task.data, "answer", None)
    return Example(id=f"{split}/{task.data.idx}", prompt=_prompt(task.data),
                   answer=answer if isinstance(answer, str) else None, task=task)


class Environment:
    """The train and eval examples of one taskset, and the scorer of their completions."""

    def __init__(self, id: str, examples: dict[Split, list[Example]]):
        self.id = id
        self._examples = examples

    def examples(self, split: Split) -> list[Example]:
        return self._examples[split]

    @property
    def multi_turn(self) -> bool:
        """Its tasks open tool sessions: rollouts go through multi_turn.py, rewards through the sessions."""
        examples = self._examples["train"] or self._examples["eval"]
        return bool(examples) and all(callable(getattr(e.task, "open_session", None)) for e in examples)

    @staticmethod
    def open_session(example: Example) -> ToolSession:
        """A fresh session; RuntimeError or OSError when it cannot start (its sandbox, say): the run stops there."""
        return example.task.open_session()

    async def score(self, example: Example, completion: str) -> Score:
        """Run the task's rewards and metrics on the conversation prompt + `completion`."""
        task = example.task
        messages = [_MESSAGE.validate_python(m) for m in example.prompt] + [AssistantMessage(content=completion)]
        nodes = [
            MessageNode(message=m, parent=i - 1 if i else None, sampled=i == len(messages) - 1)
            for i, m in enumerate(messages)
        ]
        trace = vf.Trace(task=vf.TraceTask(type=type(task).__name__, data=task.data, key=task.key, hash=task.hash),
                         agent=_AGENT, nodes=nodes)
        await task.score(trace)
        metrics = {name: r.score for name, r in trace.rewards.items() if r is not None}
        metrics |= {name: value for name, value in trace.metrics.items() if value is not None}
        feedback = await task.feedback(trace) if callable(getattr(task, "feedback", None)) else None
        return Score(reward=trace.reward, metrics=metrics, feedback=feedback)


def installed_environments() -> list[str]:
    """Installed distributions that depend on verifiers and load as a v1 taskset."""
    names = set()
    for dist in metadata.distributions():
        requires = [r for r in dist.requires or [] if "extra ==" not in r]
        if any(_REQUIREMENT_NAME.match(r).group().lower() == "verifiers" for r in requires):
            names.add(dist.metadata["Name"])
    return sorted(name for name in names if _is_taskset(name))


def _is_taskset(name: str) -> bool:
    try:
        loaders.taskset_class(name)
    except Exception:  # noqa: BLE001 - anything that fails to load is not an environment
        return False
    return True


def _taskset_class(env_id: str) -> type[vf.Taskset]:
    try:
        return loaders.taskset_class(env_id)
    except ModuleNotFoundError as exc:
        missing = exc.__cause__ if isinstance(exc.__cause__, ModuleNotFoundError) else exc
        # verifiers imports an id `owner/some-env@1.0` as module `some_env`.
        module = env_id.rsplit("/", 1)[-1].split("@", 1)[0].replace("-", "_").lower()
        if missing.name not in (module, f"verifiers.v1.tasksets.{module}"):
            raise UserError(f"environment {env_id!r} failed to import: {missing}") from None
        installed = ", ".join(installed_environments()) or "none"
        raise UserError(f"unknown environment {env_id!r}; installed environments: {installed}") from None
    except (AttributeError, TypeError, ValueError) as exc:
        raise UserError(f"environment {env_id!r} is not a verifiers v1 taskset package: {exc}") from None


def load_environment(config: EnvConfig) -> Environment:
    """Load the taskset `config.id` with `config.args` for both splits; UserError on bad input."""
    taskset_cls = _taskset_class(config.id)
    config_type = loaders.taskset_config_type(config.id)
    has_split = "split" in config_type.model_fields
    if has_split and "split" in config.args:
        raise UserError("env.args.split: composer-prime sets the split itself; remove it")
    if not has_split:
        logger.warning("environment %s has no `split` field: eval uses the training tasks", config.id)
    tasks: dict[Split, list[vf.Task]] = {}
    for split in SPLITS if has_split else ("train",):
        fields = {**config.args, "id": config.id} | ({"split": split} if has_split else {})
        try:
            taskset = taskset_cls(config_type.model_validate(fields))
            if not taskset.bounded:
                raise UserError(f"environment {config.id!r} yields tasks forever; bound it through env.args")
            tasks[split] = list(taskset)
        except ValidationError as exc:
            problems = "; ".join(
                ": ".join(filter(None, (".".join(map(str, e["loc"])), e["msg"])))
                for e in exc.errors()
            )
            raise UserError(f"env.args for {config.id!r}: {problems}") from None
        except ValueError as exc:  # a taskset's own check of its arguments
            raise UserError(f"environment {config.id!r}: {exc}") from None
    tasks.setdefault("eval", tasks["train"])
    return Environment(config.id, {split: [_example(split, t) for t in tasks[split]] for split in SPLITS})
