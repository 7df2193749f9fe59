"""Sort a short list of digits from smallest to largest.

A task sized for a small pretrained chat model (SmolLM2-135M-Instruct gets it right some of the
time and can learn it), verified exactly, with nothing a policy can farm:

- The verdict reads the reply's last n integers (n = the list's length) and passes only when they
  are the list sorted. Prose around them costs nothing and earns nothing; only the numbers count.
  Digits run together are one number ("123" is not 1, 2, 3) and a minus sign counts.
- No list is already sorted, so repeating the question never passes.
- The reward is the verdict (1 or 0): no partial credit to collect from half-sorted answers.
- A list belongs to the eval split when a hash of its sorted digits says so, so no held-out answer
  is ever a training answer, whatever the seed or the number of examples.

Lists are enumerated, not downloaded: every digit string of the configured lengths that is not
already sorted, split by hash, shuffled by the seed.
"""

from __future__ import annotations

import hashlib
import itertools
import random
import re
from typing import Literal

import verifiers.v1 as vf
from pydantic import Field, model_validator

# The question alone, no system prompt of its own (the model's chat template adds its default one). Measured
# on SmolLM2-135M-Instruct, greedy, 3 digits: "You sort lists of numbers." + "Sort from smallest to largest: ..."
# got 0 of 64 (it answers "The smallest list is 4, and the largest list is 3."), and a worked example in the
# system prompt got 0 of 32 (it repeats the list); this wording got 3 of 32.
QUESTION = "Sort these numbers from smallest to largest: {}"
EVAL_BUCKETS = 8  # one multiset of digits in EVAL_BUCKETS is held out
# ASCII digits with their sign: "-1" is not the 1 of the list, and no other script's digits count.
_INTEGER = re.compile(r"-?[0-9]+")


def numbers(reply: str) -> list[int]:
    """The integers written in the reply, in order."""
    return [int(x) for x in _INTEGER.findall(reply)]


def answer_of(reply: str, length: int) -> list[int]:
    """The reply's answer: its last `length` integers (fewer if it has fewer)."""
    return numbers(reply)[-length:]


def split_of(digits: tuple[int, ...]) -> Literal["train", "eval"]:
    key = "".join(map(str, sorted(digits))).encode()
    return "eval" if hashlib.sha256(key).digest()[0] % EVAL_BUCKETS == 0 else "train"


def describe_error(got: list[int], expected: list[int]) -> str | None:
    """What is wrong with `got` as the sorted list `expected`, in one sentence; None when it is right.

    It names the first mistake only (a missing or extra number, or the first pair out of order), as
    a failing check would, rather than giving the whole answer away."""
    if got == expected:
        return None
    if not got:
        return f"the reply has no list of {len(expected)} numbers"
    shown = ", ".join(map(str, got))
    if sorted(got) != expected:
        for x in sorted(set(expected) | set(got)):
            if got.count(x) < expected.count(x):
                return f"the answer {shown} is missing a {x}"
            if got.count(x) > expected.count(x):
                return (f"the answer {shown} has a {x}, which is not in the list" if x not in expected
                        else f"the answer {shown} has more {x}s than the list")
    i = next(i for i in range(len(got) - 1) if got[i] > got[i + 1])
    return f"in the answer {shown}, {got[i]} comes before {got[i + 1]}, but {got[i + 1]} is smaller"


class SortNumbersData(vf.TaskData):
    digits: list[int]
    """The list to sort, as asked."""
    answer: str
    """The reference reply: the digits sorted, comma-separated."""


class SortNumbersTask(vf.Task[SortNumbersData]):
    @vf.reward(weight=1.0)
    async def exact_match(self, trace: vf.Trace) -> float:
        """The task's own verdict and the whole reward: 1 when the reply's last numbers are the sorted list."""
        return float(answer_of(trace.last_reply, len(self.data.digits)) == sorted(self.data.digits))

    async def feedback(self, trace: vf.Trace) -> str | None:
        """What a failing check prints: the first mistake of the answer (composer-prime turns it into a hint)."""
        return describe_error(answer_of(trace.last_reply, len(self.data.digits)), sorted(self.data.digits))


class SortNumbersConfig(vf.TasksetConfig):
    split: Literal["train", "eval"] = "train"
    """Which split to load; no sorted answer appears in both."""
    num_examples: int | None = Field(None, ge=1)
    """How many lists to load; None: every list of the split."""
    seed: int = 0
    """Seed of the shuffle that orders (and, with num_examples, picks) the lists."""
    min_length: int = Field(3, ge=2, le=6)
    """Fewest digits in a list."""
    max_length: int = Field(3, ge=2, le=6)
    """Most digits in a list."""

    @model_validator(mode="after")
    def _check_lengths(self) -> SortNumbersConfig:
        if self.min_length > self.max_length:
            raise ValueError(f"min_length ({self.min_length}) exceeds max_length ({self.max_length})")
        return self


class SortNumbersTaskset(vf.Taskset[SortNumbersTask, SortNumbersConfig]):
    def load(self) -> list[SortNumbersTask]:
        config = self.config
        lists = [digits for length in range(config.min_length, config.max_length + 1)
                 for digits in itertools.product(range(10), repeat=length)
                 if list(digits) != sorted(digits) and split_of(digits) == config.split]
        random.Random(f"sort-numbers/{config.split}/{config.seed}").shuffle(lists)
        if config.num_examples is not None:
            if config.num_examples > len(lists):
                raise ValueError(f"the {config.split} split of {config.min_length}-{config.max_length} digits holds "
                                 f"{len(lists)} lists, {config.num_examples} asked; lower num_examples or widen the lengths")
            lists = lists[: config.num_examples]
        return [
            SortNumbersTask(
                SortNumbersData(
                    id=f"{config.split}-{''.join(map(str, digits))}",
                    prompt=QUESTION.format(", ".join(map(str, digits))),
                    digits=list(digits),
                    answer=", ".join(map(str, sorted(digits))),
                ),
                config.task,
            )
            for digits in lists
        ]
