"""Add a one-digit number to a two-digit one: "What is 45 + 4?".

A task on which SmolLM2-135M-Instruct starts inside issue 31's 5-40 % band (benchmarks/README.md,
"SmolLM2": it knows the sums and mostly loses them to a long preamble cut at the token limit), verified
exactly, with nothing a policy can farm:

- The verdict reads the reply's last integer and passes only when it is the sum. Prose before it costs
  nothing and earns nothing. Digits run together are one number ("149" is not 49) and a minus sign
  counts, so a reply cannot hide the sum at the end of a longer number.
- Only the last integer counts: listing candidates ("48, 49, 50") wins only when the last one is right,
  so hedging earns no more than committing to one guess.
- The reward is the verdict (1 or 0): no credit for being close.
- A problem (a, b) belongs to the eval split when a hash of it says so: no held-out problem is ever a
  training problem, whatever the seed or the number of examples. Sums repeat across problems (44 + 5
  and 45 + 4), so a held-out answer can be a training answer; what is held out is the question.

Problems are enumerated, not downloaded: every a in 10..99 and b in 1..9 (810), split by hash, shuffled
by the seed.
"""

from __future__ import annotations

import hashlib
import random
import re
from typing import Literal

import verifiers.v1 as vf
from pydantic import Field

# The question alone, no system prompt of its own (the model's chat template adds its default one). On
# SmolLM2-135M-Instruct the "number only" request makes it answer "45 + 4 = 49" often enough to learn from.
QUESTION = "What is {} + {}? Answer with the number only."
EVAL_BUCKETS = 8  # one problem in EVAL_BUCKETS is held out
# ASCII digits with their sign: "-49" is not 49, and no other script's digits count.
_INTEGER = re.compile(r"-?[0-9]+")


def answer_of(reply: str) -> int | None:
    """The reply's answer: its last integer (None if it has none)."""
    found = _INTEGER.findall(reply)
    return int(found[-1]) if found else None


def split_of(a: int, b: int) -> Literal["train", "eval"]:
    return "eval" if hashlib.sha256(f"{a}+{b}".encode()).digest()[0] % EVAL_BUCKETS == 0 else "train"


def describe_error(got: int | None, a: int, b: int, *, carry_step: bool = True) -> str | None:
    """What is wrong with `got` as a + b, in one sentence, without the sum; None when it is right.

    When the units carry (7 + 8 = 15 in 57 + 8), the sentence also works that column and says where its
    1 goes (`carry_step`): a trained 135 M model's remaining errors are nearly all a dropped carry ("57 + 8
    equals 55", benchmarks/README.md, "SmolLM2"), and "too small" alone does not say why. The tens digit
    is still the reader's to add up, so a hint made from it is a step, not the sum."""
    if got == a + b:
        return None
    if got is None:
        return "the reply has no number"
    message = f"{got} is not {a} + {b}: it is too {'large' if got > a + b else 'small'}"
    if carry_step and (units := a % 10 + b) >= 10:
        message += f"; {a % 10} + {b} = {units}, so 1 carries into the tens"
    return message


class AddNumbersData(vf.TaskData):
    a: int
    """The two-digit addend."""
    b: int
    """The one-digit addend."""
    answer: str
    """The reference reply: the sum."""


class AddNumbersTask(vf.Task[AddNumbersData]):
    @vf.reward(weight=1.0)
    async def exact_match(self, trace: vf.Trace) -> float:
        """The task's own verdict and the whole reward: 1 when the reply's last integer is the sum."""
        return float(answer_of(trace.last_reply) == self.data.a + self.data.b)

    async def feedback(self, trace: vf.Trace) -> str | None:
        """What a failing check prints (composer-prime turns it into a hint): never the sum itself."""
        return describe_error(answer_of(trace.last_reply), self.data.a, self.data.b)


class AddNumbersConfig(vf.TasksetConfig):
    split: Literal["train", "eval"] = "train"
    """Which split to load; no problem appears in both."""
    num_examples: int | None = Field(None, ge=1)
    """How many problems to load; None: every problem of the split."""
    seed: int = 0
    """Seed of the shuffle that orders (and, with num_examples, picks) the problems."""


class AddNumbersTaskset(vf.Taskset[AddNumbersTask, AddNumbersConfig]):
    def load(self) -> list[AddNumbersTask]:
        config = self.config
        problems = [(a, b) for a in range(10, 100) for b in range(1, 10) if split_of(a, b) == config.split]
        random.Random(f"add-numbers/{config.split}/{config.seed}").shuffle(problems)
        if config.num_examples is not None:
            if config.num_examples > len(problems):
                raise ValueError(f"the {config.split} split holds {len(problems)} problems, {config.num_examples} "
                                 "asked; lower num_examples")
            problems = problems[: config.num_examples]
        return [
            AddNumbersTask(
                AddNumbersData(id=f"{config.split}-{a}+{b}", prompt=QUESTION.format(a, b), a=a, b=b, answer=str(a + b)),
                config.task,
            )
            for a, b in problems
        ]
