"""Channel 2 inputs: a step's rollouts -> traces with error records -> hint sites for the trainer.

For every rollout: its trace (written to `<output>/traces/step_<N>.jsonl`), with the error
sites the environment and the detector found (hints/detect.py). Up to `max_sites_per_step`
of them, taken round-robin over groups so one prompt cannot fill the quota, get a hint
(hints/writer.py) and a teacher context (hints/context.py), and become `HintSite`s: token ids
for the trainer's teacher forward, or, with `hints.teacher = "inference"`, the inference
server's top-k of the hinted context already attached.

Multi-turn rollouts (rollout/multi_turn.py): the site is the erring assistant turn i. The student context is
every token before turn i exactly as the policy saw it, the completion is turn i's sampled tokens,
and the teacher context is `teacher_messages` (messages before turn i, then the hint) rendered by
the chat template like the rollout's own prompt (tools described the same way).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

import numpy as np
from transformers import PreTrainedTokenizerBase

from composer_prime.batch import Array, HintSite
from composer_prime.chat import ChatMessage
from composer_prime.configs.hints import HintsConfig
from composer_prime.hints.context import teacher_messages
from composer_prime.hints.detect import detect_errors
from composer_prime.hints.writer import TemplateHintWriter
from composer_prime.inference.client import InferenceClient
from composer_prime.inference.protocol import ScoreRequest
from composer_prime.model.chat_template import template_ids
from composer_prime.rollout.conversation import TokenConversation, encode, render
from composer_prime.rollout.multi_turn import ToolGroup
from composer_prime.rollout.single_turn import Group
from composer_prime.traces import RolloutTrace


@dataclass(frozen=True)
class Rollout:
    """One completion of a group, with what the trainer needs to score its error turn."""

    trace: RolloutTrace
    prompt_ids: list[int]
    completion_ids: list[int]
    completion_logprobs: list[float]
    conversation: TokenConversation | None = None
    """Multi-turn rollouts: the token sequence with each assistant turn's span."""


def rollouts_of(step: int, slot: int, group: Group | ToolGroup, env_id: str, hints: HintsConfig) -> list[Rollout]:
    if isinstance(group, ToolGroup):
        return _tool_rollouts_of(step, slot, group, env_id, hints)
    out = []
    prompt = [ChatMessage(role=m["role"], content=m["content"]) for m in group.example.prompt]
    for i, (completion, score, text) in enumerate(zip(group.completions, group.scores, group.texts, strict=True)):
        messages = [*prompt, ChatMessage(role="assistant", content=text)]
        truncated = completion.finish_reason == "length"
        errors = detect_errors(messages, truncated=truncated, reward=score.reward,
                               wrong_answer_below=hints.wrong_answer_below, feedback=score.feedback)
        trace = RolloutTrace(
            id=f"step{step}/{slot}/{i}", env_id=env_id, example_id=group.example.id, step=step,
            weight_version=group.weight_version, messages=messages, reward=score.reward, metrics=score.metrics,
            errors=errors, truncated=truncated,
        )
        out.append(Rollout(trace, group.prompt_ids, completion.token_ids, completion.logprobs))
    return out


def _tool_rollouts_of(step: int, slot: int, group: ToolGroup, env_id: str, hints: HintsConfig) -> list[Rollout]:
    out = []
    for i, r in enumerate(group.rollouts):
        errors = detect_errors(r.messages, env_errors=r.errors, truncated=r.truncated, reward=r.reward,
                               wrong_answer_below=hints.wrong_answer_below)
        trace = RolloutTrace(
            id=f"step{step}/{slot}/{i}", env_id=env_id, example_id=group.example.id, step=step,
            weight_version=r.weight_version, messages=r.messages, tools=json.dumps(r.tools), reward=r.reward,
            metrics=r.metrics, errors=errors, truncated=r.truncated,
        )
        c = r.conversation
        out.append(Rollout(trace, r.prompt_ids, c.completion_ids, list(c.logprobs), conversation=c))
    return out


def pick_sites(groups: list[list[Rollout]], limit: int) -> list[Rollout]:
    """Rollouts with an error, round-robin over groups (first rollout of each group, then second, ...)."""
    with_errors = [[r for r in g if r.trace.errors] for g in groups]
    picked: list[Rollout] = []
    for rank in range(max((len(g) for g in with_errors), default=0)):
        picked += [g[rank] for g in with_errors if rank < len(g)]
    return picked[:limit]


async def build_hint_sites(rollouts: list[Rollout], hints: HintsConfig, writer: TemplateHintWriter,
                           tokenizer: PreTrainedTokenizerBase, client: InferenceClient, temperature: float
                           ) -> list[HintSite]:
    """One site per rollout, on the turn of its first error (single-turn rollouts: the only turn)."""

    async def site(rollout: Rollout) -> HintSite:
        error = rollout.trace.errors[0]
        hint = await writer.write(rollout.trace.messages, error)
        context = teacher_messages(rollout.trace.messages, error, hint)
        if rollout.conversation is not None:
            student_ids, completion_ids, completion_logprobs, teacher_ids = _turn_site(rollout.conversation,
                                                                                       error.turn, context[-1])
        else:
            student_ids, completion_ids = rollout.prompt_ids, rollout.completion_ids
            completion_logprobs = rollout.completion_logprobs
            teacher_ids = template_ids(tokenizer, [{"role": m.role, "content": m.content or ""} for m in context])
        topk_ids = topk_logprobs = None
        if hints.teacher == "inference":
            scored = await client.score(ScoreRequest(
                prompt_token_ids=teacher_ids, completion_token_ids=completion_ids,
                temperature=temperature, top_k=hints.top_k,
            ))
            topk_ids = Array.from_numpy(np.array(scored.top_ids, dtype=np.int32))
            topk_logprobs = Array.from_numpy(np.array(scored.top_logprobs, dtype=np.float32))
        return HintSite(
            kind=error.kind, student_prompt_ids=student_ids, teacher_prompt_ids=teacher_ids,
            completion_ids=completion_ids, completion_logprobs=completion_logprobs,
            teacher_topk_ids=topk_ids, teacher_topk_logprobs=topk_logprobs,
        )

    return list(await asyncio.gather(*(site(r) for r in rollouts)))


def _turn_site(conversation: TokenConversation, turn: int, hint: ChatMessage
               ) -> tuple[list[int], list[int], list[float], list[int]]:
    """(student context, turn tokens, their sampler log-probs, teacher context) for assistant message `turn`."""
    start, end = conversation.spans[turn]
    offset = start - conversation.prompt_len
    # The template messages hold the turns as sampled, so the teacher sees the same earlier turns as the student.
    before = conversation.messages[: turn + conversation.offset]
    teacher = before + [{"role": hint.role, "content": hint.content}]
    teacher_ids = encode(conversation.tokenizer, render(conversation.tokenizer, teacher, conversation.tools))
    return (conversation.ids[:start], conversation.ids[start:end],
            conversation.logprobs[offset : offset + end - start], teacher_ids)
