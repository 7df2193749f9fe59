"""composer-prime's environments served over OpenEnv (`pip install composer-prime[openenv]`).

    uv run --extra openenv openenv-serve --env.id feature-deletion --port 8010
    # any OpenEnv client then plays it:
    with GenericEnvClient(base_url="http://127.0.0.1:8010").sync() as env:
        obs = env.reset(index=0)           # the prompt messages and the tool schemas
        obs = env.step({"tool_calls": [{"name": "submit", "arguments": "{}"}]})
        obs.reward, obs.done

Any verifiers v1 taskset our orchestrator loads works (`rollout/envs.py` `load_environment`), with
the same sandbox and grading: a single-turn task (reverse-text) is scored by `Environment.score` on the
one reply, exactly as a completion is; a task with tools (feature-deletion) opens its `ToolSession` on
reset, every tool call of a step runs in it, and the episode is graded by `session.finish` when the agent
ends it (`submit`), replies without a tool call, or reaches `max_turns`, the orchestrator's rules
(`rollout/multi_turn.py`). A client sees the prompt, the tools, tool outputs, reward and metrics;
never the task row (its gold files stay on the server).
"""

from __future__ import annotations

import asyncio
import random
from typing import Annotated, Any, Literal

from openenv.core.env_server.http_server import create_fastapi_app
from openenv.core.env_server.interfaces import Environment as OpenEnvEnvironment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field
from pydantic_config import BaseConfig

from composer_prime.cli import run_cli
from composer_prime.chat import ChatMessage, ToolCall
from composer_prime.configs.rollout import EnvConfig
from composer_prime.rollout.envs import Environment, Example, ToolSession, load_environment
from composer_prime.utils.net import KEEP_ALIVE_S


class ComposerAction(Action):
    """One assistant turn: its text and, for a task with tools, its tool calls (OpenAI shape, arguments a JSON string)."""

    content: str = Field(default="", description="The assistant's text (the answer, for a single-turn task).")
    tool_calls: list[ToolCall] = Field(default_factory=list, description="Tool calls, run in order.")


class ComposerObservation(Observation):
    messages: list[dict[str, Any]] = Field(default_factory=list, description="Messages added since the last observation.")
    tools: list[dict[str, Any]] = Field(default_factory=list, description="OpenAI tool schemas (on reset).")
    metrics: dict[str, float] = Field(default_factory=dict, description="The grading's metrics (when done).")
    errors: list[dict[str, Any]] = Field(default_factory=list, description="Error records of the episode (when done).")


class ComposerState(State):
    env_id: str = ""
    example_id: str | None = None
    done: bool = False


class ComposerEnvironment(OpenEnvEnvironment):
    """One episode at a time of a loaded composer-prime environment; one instance per OpenEnv session."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # each session gets its own instance and its own tool session

    def __init__(self, env: Environment, split: Literal["train", "eval"] = "train", max_turns: int = 30):
        super().__init__()
        self.env, self.split, self.max_turns = env, split, max_turns
        self._state = ComposerState(env_id=env.id)
        self._example: Example | None = None
        self._session: ToolSession | None = None
        self._messages: list[dict[str, Any]] = []
        self._turns = 0

    def reset(self, seed: int | None = None, episode_id: str | None = None, task_id: str | None = None,
              index: int | None = None, **kwargs: Any) -> ComposerObservation:
        """Start an episode on task `task_id`, else example `index`, else one drawn with `seed`."""
        examples = self.env.examples(self.split)
        if task_id is not None:
            matches = [e for e in examples if e.task.data.id == task_id]
            if not matches:
                raise ValueError(f"no {self.split} task {task_id!r} in {self.env.id}")
            example = matches[0]
        elif index is not None:
            if not 0 <= index < len(examples):
                raise ValueError(f"index {index} outside the {len(examples)} {self.split} tasks of {self.env.id}")
            example = examples[index]
        else:
            example = random.Random(seed).choice(examples)
        self.close()
        self._example, self._turns = example, 0
        self._messages = [dict(m) for m in example.prompt]
        self._session = self.env.open_session(example) if self.env.multi_turn else None
        self._state = ComposerState(env_id=self.env.id, example_id=example.id, episode_id=episode_id)
        tools = list(self._session.tools) if self._session is not None else []
        return ComposerObservation(messages=list(self._messages), tools=tools)

    def step(self, action: ComposerAction, timeout_s: float | None = None, **kwargs: Any) -> ComposerObservation:
        if self._example is None or self._state.done:
            raise ValueError("no episode in progress: call reset first")
        self._state.step_count += 1
        if self._session is None:
            score = asyncio.run(self.env.score(self._example, action.content))
            self._state.done = True
            metadata = {"feedback": score.feedback} if score.feedback else {}
            return ComposerObservation(done=True, reward=score.reward, metrics=score.metrics, metadata=metadata)
        return self._tool_turn(action)

    def _tool_turn(self, action: ComposerAction) -> ComposerObservation:
        turn = len(self._messages)
        self._turns += 1
        calls = [c.model_copy(update={"id": c.id or f"call_{turn}_{i}"}) for i, c in enumerate(action.tool_calls)]
        assistant = ChatMessage(role="assistant", content=action.content, tool_calls=calls or None).openai()
        added = [assistant]
        for call in assistant.get("tool_calls", []):
            output = self._session.call(call["function"]["name"], call["function"]["arguments"], turn)
            added.append({"role": "tool", "tool_call_id": call["id"], "content": output})
        self._messages += added
        if action.tool_calls and not self._session.done and self._turns < self.max_turns:
            return ComposerObservation(messages=added)
        last = max(i for i, m in enumerate(self._messages) if m["role"] == "assistant")
        outcome = self._session.finish(last, self._turns)
        self._state.done = True
        self.close()
        return ComposerObservation(messages=added, done=True, reward=float(outcome.reward), metrics=outcome.metrics,
                                   errors=[dict(e) for e in outcome.errors])

    @property
    def state(self) -> ComposerState:
        return self._state

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None


def create_app(env_config: EnvConfig, split: Literal["train", "eval"] = "train", max_turns: int = 30,
               max_sessions: int = 4):
    """The OpenEnv FastAPI app (HTTP + WebSocket routes) of one environment, loaded once and shared by sessions."""
    env = load_environment(env_config)
    return create_fastapi_app(lambda: ComposerEnvironment(env, split, max_turns), ComposerAction,
                              ComposerObservation, max_concurrent_envs=max_sessions)


class OpenEnvServeConfig(BaseConfig):
    """Serve one composer-prime environment as an OpenEnv environment."""

    env: EnvConfig = EnvConfig()
    split: Annotated[Literal["train", "eval"], Field(description="Which split's tasks the episodes draw from.")] = "train"
    max_turns: Annotated[int, Field(ge=1, description="Assistant turns before a tool episode is graded.")] = 30
    max_sessions: Annotated[int, Field(ge=1, description="Concurrent OpenEnv sessions (each runs its own sandbox).")] = 4
    host: Annotated[str, Field(description="Address to bind; 127.0.0.1 keeps the sandbox off the network.")] = "127.0.0.1"
    port: Annotated[int, Field(ge=1, le=65535, description="Port to listen on.")] = 8010


def main(config: OpenEnvServeConfig) -> None:
    import uvicorn

    uvicorn.run(create_app(config.env, config.split, config.max_turns, config.max_sessions),
                host=config.host, port=config.port, log_level="warning", timeout_keep_alive=KEEP_ALIVE_S)


def cli() -> None:
    run_cli(OpenEnvServeConfig, main)


if __name__ == "__main__":
    cli()
