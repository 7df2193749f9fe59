"""Demonstrations for SFT: an environment's prompts with their reference answers, as tokens.

A demonstration is tokenized exactly as an RL rollout is: the prompt rendered by the chat
template with the generation prompt, then the answer's tokens and the eos token, which is
what inference samples and stops on. Only the answer and eos carry loss.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch
from transformers import PreTrainedTokenizerBase

from composer_prime.errors import UserError
from composer_prime.orchestrator.envs import Example

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
        prompt = tokenizer.apply_chat_template(example.prompt, add_generation_prompt=True)
        answer = tokenizer.encode(example.answer, add_special_tokens=False) + [tokenizer.eos_token_id]
        demos.append(Demonstration(input_ids=prompt + answer, prompt_len=len(prompt)))
    return demos


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
