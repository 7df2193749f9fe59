"""Multi-turn tool rollouts: the caller drives the conversation itself, token in / token out.

For each rollout of a group: open the task's tool session (envs.ToolSession), render the prompt with
the policy's chat template (tools described, conversation.py), then per turn: POST /generate on the
exact token sequence so far (the Sampler's `generate`), parse the turn's `<tool_call>` blocks (tool_calls.py), run each
well-formed call in the session, answer a malformed one with an `error: ...` tool message and a
`malformed_tool_call` record, append the tool messages as context tokens, and go on.

A rollout ends when the session is done (submit), at a turn without tool calls, after `max_turns`
turns, when the next turn would not fit `seq_len` (the packed row the sample must fit), or when the
template cannot extend the sequence exactly (`TemplateMismatch`: logged, the sample keeps what was
sampled). Then the session grades it: reward, metrics, structured errors. The training sample is the
prompt, then everything after it with only the sampled turns trained (`conversation.sampled`).

The session's calls block (file tools, sandboxed test runs), so they run in worker threads; the
rollouts of a group run concurrently. Weights may change between turns: every token keeps the
log-prob of the version that sampled it, and the rollout counts as old as its oldest turn.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import httpx
from transformers import PreTrainedTokenizerBase

from composer_prime.chat import ChatMessage
from composer_prime.configs.rollout import SamplingConfig
from composer_prime.errors import UserError
from composer_prime.rollout.conversation import TemplateMismatch, TokenConversation
from composer_prime.rollout.envs import Environment, Example
from composer_prime.rollout.sampler import Sampler, generate_request
from composer_prime.rollout.single_turn import Group, request_seed, rollout_group
from composer_prime.tool_calls import parse_turn, tool_names
from composer_prime.traces import ErrorRecord

logger = logging.getLogger(__name__)
STOP_REASONS = ("done", "no_tool_call", "max_turns", "context", "template_mismatch", "rejected")


@dataclass
class ToolRollout:
    """One finished multi-turn rollout: the conversation, its tokens and its grade."""

    messages: list[ChatMessage]
    tools: list[dict]
    conversation: TokenConversation
    reward: float
    metrics: dict[str, float]
    errors: list[ErrorRecord]
    """The environment's records and the unparseable calls, by turn (hints/detect.py adds the rest)."""
    weight_version: int
    """The oldest policy version that sampled a turn of it."""
    stop_reason: str
    """One of STOP_REASONS."""
    truncated: bool
    """The last turn hit max_tokens."""
    turns: int
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def prompt_ids(self) -> list[int]:
        return self.conversation.ids[: self.conversation.prompt_len]

    @property
    def sampled_tokens(self) -> int:
        return sum(self.conversation.sampled)


@dataclass(frozen=True)
class ToolGroup:
    """The rollouts of one example: the multi-turn counterpart of rollout.Group."""

    example: Example
    rollouts: list[ToolRollout]
    total_s: float

    @property
    def weight_version(self) -> int:
        return min(r.weight_version for r in self.rollouts)

    @property
    def rewards(self) -> list[float]:
        return [r.reward for r in self.rollouts]

    @property
    def completion_lens(self) -> list[int]:
        """Sampled tokens of each rollout, all turns together."""
        return [r.sampled_tokens for r in self.rollouts]

    @property
    def truncated(self) -> list[bool]:
        return [r.truncated for r in self.rollouts]

    @property
    def metrics(self) -> list[dict[str, float]]:
        return [r.metrics for r in self.rollouts]


@dataclass
class FailedGrading:
    """The outcome of a rollout whose session raised while grading: reward 0, the error on its last turn."""

    errors: list[dict]
    reward: float = 0.0
    metrics: dict[str, float] = field(default_factory=dict)


def tool_errors(groups: Sequence[ToolGroup]) -> dict[str, float]:
    """`tool_errors`: structured errors per rollout, the environment's records and the calls the parser refused
    (which the environment never sees; turns are in every rollout's metrics already). Empty without tool groups."""
    rollouts = [r for g in groups for r in g.rollouts]
    return {"tool_errors": sum(len(r.errors) for r in rollouts) / len(rollouts)} if rollouts else {}


def _assistant_turn(messages: list[ChatMessage], turn: int) -> int | None:
    """`turn` when it is an assistant message, else the closest assistant message before it."""
    for i in range(min(turn, len(messages) - 1), -1, -1):
        if messages[i].role == "assistant":
            return i
    return None


def _env_errors(records: list[dict], messages: list[ChatMessage]) -> list[ErrorRecord]:
    errors = []
    for r in records:
        turn = _assistant_turn(messages, int(r.get("turn", len(messages) - 1)))
        if turn is not None:
            errors.append(ErrorRecord(kind=str(r["kind"]), turn=turn, message=str(r.get("message", ""))))
    return errors


async def tool_rollout(sampler: Sampler, env: Environment, tokenizer: PreTrainedTokenizerBase, example: Example,
                       sampling: SamplingConfig, *, max_turns: int, seq_len: int, seed: int | None = None
                       ) -> ToolRollout:
    start = time.perf_counter()
    try:
        session = await asyncio.to_thread(env.open_session, example)
    except (RuntimeError, OSError) as exc:
        # A session that cannot start (its sandbox, say) would fail every rollout alike: stop the run in one
        # line instead of training or evaluating on zero rewards.
        raise UserError(f"environment {env.id}: cannot open a tool session for {example.id}: {exc}") from None
    try:
        tools = list(session.tools)
        conversation = TokenConversation(tokenizer, example.prompt, tools)
        messages = [ChatMessage(role=m["role"], content=m["content"]) for m in example.prompt]
        known = tool_names(tools)
        stop_ids = {tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set()
        errors: list[ErrorRecord] = []
        versions: list[int] = []
        stop, truncated, turns, generate_s, tool_s = "max_turns", False, 0, 0.0, 0.0
        while turns < max_turns:
            room = seq_len - len(conversation.ids)
            if room <= 0:
                stop = "context"
                break
            request = generate_request(conversation.ids, sampling, tokenizer, max_tokens=room,
                                       seed=None if seed is None else request_seed(seed, turns))
            t0 = time.perf_counter()
            try:
                response = await sampler.generate(request)
            except httpx.HTTPStatusError as exc:
                if exc.response.status_code != 400:
                    raise
                # The server refused the sequence (longer than the model's context): the rollout ends there.
                logger.warning("rollout of %s ends: /generate refused turn %d: %s", example.id, turns + 1,
                               exc.response.text[:300])
                stop = "rejected"
                break
            generate_s += time.perf_counter() - t0
            completion = response.completions[0]
            versions.append(response.weight_version)
            turns += 1
            index = len(messages)
            text = conversation.add_turn(completion.token_ids, completion.logprobs, index, stop_ids)
            truncated = completion.finish_reason == "length"
            parsed = parse_turn(text, known, id_prefix=f"call_{index}")
            calls = [p.call for p in parsed.calls if p.call is not None]
            messages.append(ChatMessage(role="assistant", content=parsed.content, tool_calls=calls or None))
            if not parsed.calls:
                stop = "no_tool_call"
                break
            replies = []
            t0 = time.perf_counter()
            for i, p in enumerate(parsed.calls):
                if p.problem is not None:
                    errors.append(ErrorRecord(kind="malformed_tool_call", turn=index, message=p.problem))
                    output = f"error: {p.problem}"
                else:
                    output = await asyncio.to_thread(session.call, p.call.name, p.call.arguments, index)
                call_id = p.call.id if p.call is not None else f"call_{index}_{i}"
                replies.append(ChatMessage(role="tool", content=output, tool_call_id=call_id))
            tool_s += time.perf_counter() - t0
            messages += replies
            if session.done:
                stop = "done"
                break
            if turns >= max_turns:
                break
            try:
                conversation.add_context([{"role": "tool", "content": r.content, "tool_call_id": r.tool_call_id}
                                          for r in replies])
            except TemplateMismatch as exc:
                logger.warning("rollout of %s ends after turn %d: %s", example.id, turns, exc)
                stop = "template_mismatch"
                break
        if not versions:
            raise RuntimeError(f"rollout of {example.id}: the prompt alone fills seq_len {seq_len}: raise seq_len")
        last = max(i for i, m in enumerate(messages) if m.role == "assistant")
        t0 = time.perf_counter()
        try:
            outcome = await asyncio.to_thread(session.finish, last, turns)
        except Exception as exc:  # noqa: BLE001 - one rollout's broken grading scores 0; the run goes on
            logger.warning("grading the rollout of %s failed: %s: %s", example.id, type(exc).__name__, exc)
            outcome = FailedGrading(errors=[{"kind": "grading_error", "turn": last,
                                             "message": f"grading failed: {type(exc).__name__}: {exc}"[:500]}])
        grade_s = time.perf_counter() - t0
    finally:
        try:
            await asyncio.to_thread(session.close)
        except Exception as exc:  # noqa: BLE001 - a session that cannot clean up is logged, never fatal
            logger.warning("closing the tool session of %s failed: %s: %s", example.id, type(exc).__name__, exc)
    errors = sorted(errors + _env_errors(outcome.errors, messages), key=lambda e: e.turn)
    metrics = {**outcome.metrics, "turns": float(turns)} | {f"stop/{r}": float(r == stop) for r in STOP_REASONS}
    return ToolRollout(
        messages=messages, tools=tools, conversation=conversation, reward=float(outcome.reward), metrics=metrics,
        errors=errors, weight_version=min(versions), stop_reason=stop, truncated=truncated, turns=turns,
        timings={"generate_s": generate_s, "tool_s": tool_s, "grade_s": grade_s,
                 "total_s": time.perf_counter() - start},
    )


async def tool_rollout_group(sampler: Sampler, env: Environment, tokenizer: PreTrainedTokenizerBase,
                             example: Example, sampling: SamplingConfig, *, n: int, max_turns: int, seq_len: int,
                             seed: int | None = None) -> ToolGroup:
    """`n` independent rollouts of one example, concurrently (each its own session and seed)."""
    start = time.perf_counter()
    rollouts = await asyncio.gather(*(
        tool_rollout(sampler, env, tokenizer, example, sampling, max_turns=max_turns, seq_len=seq_len,
                     seed=None if seed is None else request_seed(seed, i))
        for i in range(n)
    ))
    return ToolGroup(example=example, rollouts=list(rollouts), total_s=time.perf_counter() - start)


async def env_rollout_group(sampler: Sampler, env: Environment, tokenizer: PreTrainedTokenizerBase, example: Example,
                            sampling: SamplingConfig, *, n: int, max_turns: int, seq_len: int, seed: int | None = None
                            ) -> Group | ToolGroup:
    """`n` rollouts of one example as its environment runs them: multi-turn with tool sessions, else one `generate`
    call (training and held-out eval both come through here, so they roll out alike)."""
    if env.multi_turn:
        return await tool_rollout_group(sampler, env, tokenizer, example, sampling, n=n, max_turns=max_turns,
                                        seq_len=seq_len, seed=seed)
    return await rollout_group(sampler, env, tokenizer, example, sampling, n=n, seed=seed)
