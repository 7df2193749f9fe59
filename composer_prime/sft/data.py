"""Demonstrations for SFT: an environment's prompts with their reference answers, as tokens.

A demonstration is tokenized exactly as an RL rollout is: the prompt rendered by the chat
template with the generation prompt, then the answer's tokens and the eos token, which is
what inference samples and stops on. Only the answer and eos carry loss.

Hinted demonstrations teach a model to use hints, which the hint channel's teacher needs (a
large pretrained model can already; a tiny one trained from scratch cannot): the context is
exactly the teacher context of channel 2 (hints/context.py) for a wrong first attempt, with the
hint the default template writes from the environment's own feedback on that attempt.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from transformers import PreTrainedTokenizerBase

from composer_prime.chat import ChatMessage
from composer_prime.errors import UserError
from composer_prime.hints.context import teacher_messages
from composer_prime.hints.writer import TemplateHintWriter
from composer_prime.model.chat_template import template_ids
from composer_prime.rollout.envs import Environment, Example
from composer_prime.traces import ErrorRecord

IGNORE = -100  # the label transformers' causal-LM loss skips


@dataclass(frozen=True)
class Demonstration:
    input_ids: list[int]
    prompt_len: int  # tokens before the answer; they carry no loss


def demonstrations(examples: list[Example], tokenizer: PreTrainedTokenizerBase) -> list[Demonstration]:
    demos = []
    for example in examples:
        if example.answer is None:
            raise UserError(f"example {example.id} has no reference answer: SFT needs an environment that gives them")
        prompt = template_ids(tokenizer, example.prompt)
        answer = tokenizer.encode(example.answer, add_special_tokens=False) + [tokenizer.eos_token_id]
        demos.append(Demonstration(input_ids=prompt + answer, prompt_len=len(prompt)))
    return demos


def hinted_demonstrations(examples: list[Example], env: Environment, tokenizer: PreTrainedTokenizerBase,
                          seed: int) -> list[Demonstration]:
    """One hinted demonstration per example: a wrong attempt (the answer's words shuffled; reversed, or
    with a word repeated, when that leaves them as they were) is scored by the environment, and its
    feedback becomes the hint."""
    rng = random.Random(seed)
    writer = TemplateHintWriter()

    async def one(example: Example) -> Demonstration:
        words = example.answer.split()
        wrong = rng.sample(words, len(words))
        if wrong == words:
            wrong = words[::-1]
        if wrong == words:  # a palindrome, or one word
            wrong = words + words[:1]
        attempt = " ".join(wrong)
        score = await env.score(example, attempt)
        messages = [ChatMessage(role=m["role"], content=m["content"]) for m in example.prompt]
        messages.append(ChatMessage(role="assistant", content=attempt))
        error = ErrorRecord(kind="wrong_answer", turn=len(messages) - 1,
                            message=score.feedback or f"the verifier scored the answer {score.reward:.2f}")
        context = teacher_messages(messages, error, await writer.write(messages, error))
        prompt = template_ids(tokenizer, [{"role": m.role, "content": m.content} for m in context])
        answer = tokenizer.encode(example.answer, add_special_tokens=False) + [tokenizer.eos_token_id]
        return Demonstration(input_ids=prompt + answer, prompt_len=len(prompt))

    async def all_of() -> list[Demonstration]:
        return [await one(e) for e in examples]

    return asyncio.run(all_of())


def collate(demos: list[Demonstration], pad_token_id: int) -> dict[str, torch.Tensor]:
    """Right-padded `input_ids`, `attention_mask` and `labels` (IGNORE off the answers)."""
    width = max(len(d.input_ids) for d in demos)
    input_ids = torch.full((len(demos), width), pad_token_id, dtype=torch.long)
    labels = torch.full((len(demos), width), IGNORE, dtype=torch.long)
    attention_mask = torch.zeros((len(demos), width), dtype=torch.long)
    for row, demo in enumerate(demos):
        ids = torch.tensor(demo.input_ids)
        input_ids[row, : len(ids)] = ids
        labels[row, demo.prompt_len : len(ids)] = ids[demo.prompt_len :]
        attention_mask[row, : len(ids)] = 1
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}


def batch_indices(num_demos: int, batch_size: int, seed: int) -> Iterator[list[int]]:
    """Endless epochs, each a fresh seeded permutation cut into batches."""
    generator = torch.Generator().manual_seed(seed)
    while True:
        order = torch.randperm(num_demos, generator=generator).tolist()
        for start in range(0, num_demos, batch_size):
            yield order[start : start + batch_size]
