"""One replay run: ingest -> filter -> (VOI gate) -> ask teachers per step (tiered) -> pairs.

Per step, tiers are asked in increasing order (all teachers of a tier at once). After each tier:
- a pair is decided (k agree on an action other than the student's): stop;
- no answer so far differs from the student's action: stop (escalate only on disagreement);
- even if every remaining teacher joined the largest dissenting cluster it would stay below k: stop;
- otherwise ask the next tier.
With every teacher in one tier (the default) each step costs exactly N calls, so a trace of S
steps costs at most S * N calls, and fewer on a resumed run (cached answers are free).

When the budget runs out, steps not yet started are not started, calls in flight finish, and the
pairs found so far are written: the run ends cleanly with `budget_exhausted` in the stats. A step
whose answers are incomplete yields no pair, and its missing answers are asked again by a rerun.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field

import httpx

from composer_prime.configs.replay import ReplayConfig
from composer_prime.pairs import PreferencePair, Provenance, TeacherAnswer
from composer_prime.replay.agreement import canonical, decide
from composer_prime.replay.budget import Budget, BudgetExhausted
from composer_prime.replay.cache import AnswerCache
from composer_prime.replay.render import action_text
from composer_prime.replay.steps import Step
from composer_prime.replay.teachers import Teacher


@dataclass
class StepOutcome:
    step: Step
    pair: PreferencePair | None = None
    answers: list[TeacherAnswer] = field(default_factory=list)
    complete: bool = True
    """False when the budget ran out before every needed teacher answered."""


class Replayer:
    """Teachers, budget and cache for one run; `replay_step` is safe to run concurrently."""

    def __init__(self, config: ReplayConfig, cache: AnswerCache, http: httpx.AsyncClient, seed: int = 0):
        self.config = config
        self.budget = Budget(config.budget_usd)
        rng = random.Random(seed)
        self.teachers = [Teacher(t, http, cache, self.budget, config.retry, random.Random(rng.random()))
                         for t in config.teachers]
        self.tiers = sorted({t.config.tier for t in self.teachers})

    def canonical(self, action) -> str:
        return canonical(action, self.config.agreement.lowercase)

    async def replay_step(self, step: Step, entropy: float | None = None) -> StepOutcome:
        agreement = self.config.agreement
        student = self.canonical(step.action)
        asked: list[Teacher] = []
        answers: list[TeacherAnswer] = []
        outcome = StepOutcome(step=step)
        for position, tier in enumerate(self.tiers):
            group = [t for t in self.teachers if t.config.tier == tier]
            results = await asyncio.gather(*(t.ask(step) for t in group), return_exceptions=True)
            for teacher, result in zip(group, results):
                if isinstance(result, BudgetExhausted):
                    outcome.complete = False
                    continue
                if isinstance(result, BaseException):
                    raise result
                asked.append(teacher)
                answers.append(result[0])
            if not outcome.complete:
                break
            forms = [self.canonical(a.action) if a.action is not None else None for a in answers]
            decision = decide(forms, student, agreement.k, agreement.similarity)
            remaining = sum(1 for t in self.teachers if t.config.tier in self.tiers[position + 1:])
            if (decision.chosen is not None or decision.votes == 0
                    or decision.votes + remaining < agreement.k):
                break
        forms = [self.canonical(a.action) if a.action is not None else None for a in answers]
        decision = decide(forms, student, agreement.k, agreement.similarity)
        members = set(decision.members) if decision.chosen is not None else set()
        outcome.answers = [a.model_copy(update={"canonical": forms[i], "agrees": i in members})
                           for i, a in enumerate(answers)]
        if outcome.complete and decision.chosen is not None:
            outcome.pair = PreferencePair(
                id=step.id, state=step.state, tools=step.tools,
                chosen=answers[decision.chosen].action, rejected=step.action,
                provenance=Provenance(source=step.source, format=step.format, trace_id=step.trace_id,
                                      step=step.index, student=step.student, k=agreement.k, n=len(asked),
                                      teachers=outcome.answers, student_entropy=entropy),
            )
        return outcome


def keep_pair(pair: PreferencePair, config: ReplayConfig) -> str | None:
    """None to keep the pair, else why it is dropped (length filters)."""
    filters = config.filters
    for side in (pair.chosen, pair.rejected):
        length = len(action_text(side))
        if length < filters.min_action_chars:
            return "action_too_short"
        if filters.max_action_chars is not None and length > filters.max_action_chars:
            return "action_too_long"
    return None


def state_chars(step: Step) -> int:
    return sum(len(m.content or "") + sum(len(c.arguments) + len(c.name) for c in m.tool_calls or [])
               for m in step.state)
