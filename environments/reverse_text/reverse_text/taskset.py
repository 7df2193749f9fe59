"""Reverse a short string of space-separated lowercase letters.

Letters are space-separated so that a byte-level BPE tokenizer sees one token per letter:
merged letter groups would make reversal a spelling puzzle that a tiny model cannot solve.
Prompts are generated, not downloaded, so the package works offline. A string belongs to
the eval split iff a hash of it says so, which keeps the splits disjoint for every seed,
size and length range.
"""

from __future__ import annotations

import hashlib
import random
import string
from difflib import SequenceMatcher
from typing import Literal

import verifiers.v1 as vf
from pydantic import Field, model_validator

SYSTEM_PROMPT = "Reverse the letters."
EVAL_BUCKETS = 8  # one string in EVAL_BUCKETS is held out for eval


def letters(text: str) -> str:
    """The reply's letters in order; whitespace carries no meaning."""
    return "".join(text.split())


def split_of(word: str) -> Literal["train", "eval"]:
    digest = hashlib.sha256(word.encode()).digest()
    return "eval" if digest[0] % EVAL_BUCKETS == 0 else "train"


class ReverseTextData(vf.TaskData):
    answer: str
    """The reference reply: the prompt's letters in reverse order, space-separated."""


class ReverseTextTask(vf.Task[ReverseTextData]):
    @vf.reward(weight=1.0)
    async def lcs_ratio(self, trace: vf.Trace) -> float:
        """Partial credit: difflib's similarity ratio of the reply's letters to the target's."""
        return SequenceMatcher(None, letters(trace.last_reply), letters(self.data.answer)).ratio()

    @vf.metric
    async def exact_match(self, trace: vf.Trace) -> float:
        return float(letters(trace.last_reply) == letters(self.data.answer))

    async def feedback(self, trace: vf.Trace) -> str | None:
        """What a failing check prints: expected and got (composer-prime turns it into a hint)."""
        got, expected = letters(trace.last_reply), letters(self.data.answer)
        if got == expected:
            return None
        return f"expected '{' '.join(expected)}', got '{' '.join(got)}'"


class ReverseTextConfig(vf.TasksetConfig):
    split: Literal["train", "eval"] = "train"
    """Which split to load; the two never share a string."""
    num_examples: int = Field(2000, ge=1)
    """How many distinct strings to generate."""
    seed: int = 0
    """Seed of the string generator."""
    min_length: int = Field(3, ge=1)
    """Fewest letters in a string."""
    max_length: int = Field(8, ge=1)
    """Most letters in a string."""

    @model_validator(mode="after")
    def _check_lengths(self) -> ReverseTextConfig:
        if self.min_length > self.max_length:
            raise ValueError(f"min_length ({self.min_length}) exceeds max_length ({self.max_length})")
        return self


class ReverseTextTaskset(vf.Taskset[ReverseTextTask, ReverseTextConfig]):
    def load(self) -> list[ReverseTextTask]:
        config = self.config
        rng = random.Random(f"reverse-text/{config.split}/{config.seed}")
        words: dict[str, None] = {}  # an ordered set
        # Short length ranges hold few strings; give up rather than loop forever.
        for _ in range(100 * config.num_examples):
            if len(words) == config.num_examples:
                break
            length = rng.randint(config.min_length, config.max_length)
            word = "".join(rng.choices(string.ascii_lowercase, k=length))
            if split_of(word) == config.split:
                words[word] = None
        else:
            raise ValueError(
                f"found only {len(words)} distinct {config.split} strings of {config.min_length}-{config.max_length} "
                f"letters, {config.num_examples} asked; lower num_examples or widen the length range"
            )
        return [
            ReverseTextTask(
                ReverseTextData(
                    id=f"{config.split}-{word}",
                    prompt=" ".join(word),
                    system_prompt=SYSTEM_PROMPT,
                    answer=" ".join(reversed(word)),
                ),
                config.task,
            )
            for word in words
        ]
