"""Reverse a short string of space-separated lowercase letters.

Letters are space-separated so that a byte-level BPE tokenizer sees one token per letter:
merged letter groups would make reversal a spelling puzzle that a tiny model cannot solve.
Prompts are generated, not downloaded, so the package works offline. A string belongs to
the eval split iff a hash of it says so, which keeps the splits disjoint for every seed,
size and length range.

The reward is partial credit that cannot be gamed by stopping early. With r the reply's
letters, t the target's (|t| = T) and LCS their longest common subsequence,

    credit(r) = LCS(r, t) / max(|r|, T)

- Its maximum is the complete correct answer: credit = 1 iff LCS = |r| = T iff r = t.
- Stopping early never pays more than going on: for |r| < T the denominator is T, and
  extending r (up to length T) can only keep or grow LCS, so every continuation of an
  early stop scores at least as much. A reply that stops with k letters in order scores
  k / T, exactly what a complete attempt with k letters in order scores.
- Rambling past the target costs: for |r| > T the denominator grows with every extra letter.

difflib's ratio 2M / (|r| + T), used before, broke the second rule: for the target "b x m",
the correct prefix "b x" scored 0.8 and the complete "b x q" 0.67, and RL learned to stop early
while exact match fell.
"""

from __future__ import annotations

import hashlib
import random
import string
from typing import Literal

import verifiers.v1 as vf
from pydantic import Field, model_validator

SYSTEM_PROMPT = "Reverse the letters."
EVAL_BUCKETS = 8  # one string in EVAL_BUCKETS is held out for eval


def letters(text: str) -> str:
    """The reply's letters in order; whitespace carries no meaning."""
    return "".join(text.split())


def lcs_length(a: str, b: str) -> int:
    """Length of the longest common subsequence of a and b (dynamic programming, O(|a| |b|))."""
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def credit(reply: str, target: str) -> float:
    """LCS(reply, target) / max(|reply|, |target|) over letters; the module docstring says why."""
    got, expected = letters(reply), letters(target)
    longest = max(len(got), len(expected))
    return lcs_length(got, expected) / longest if longest else 1.0


def split_of(word: str) -> Literal["train", "eval"]:
    digest = hashlib.sha256(word.encode()).digest()
    return "eval" if digest[0] % EVAL_BUCKETS == 0 else "train"


class ReverseTextData(vf.TaskData):
    answer: str
    """The reference reply: the prompt's letters in reverse order, space-separated."""


class ReverseTextTask(vf.Task[ReverseTextData]):
    @vf.reward(weight=1.0)
    async def lcs_credit(self, trace: vf.Trace) -> float:
        """Partial credit: most for the complete correct answer, never more for stopping early."""
        return credit(trace.last_reply, self.data.answer)

    @vf.reward(weight=0.0)
    async def exact_match(self, trace: vf.Trace) -> float:
        """The task's own verdict; a reward of weight 0 by default, so a config can mix it into the training reward."""
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
