"""Value-of-information gating: spend teacher calls where the student was uncertain.

A step can only yield a pair where the teachers' consensus differs from the student's action, and
that is most likely where the student itself was unsure what to do. The student's uncertainty at a
step is the mean, over the tokens of its own action (the end-of-turn token included: stopping is a
decision too), of the entropy of its next-token distribution:
    H = (1/T) * sum_t  -sum_v p(v | state, action[:t]) log p(v | state, action[:t])
computed by the inference server serving the student (`POST /score`, teacher-forced, temperature
1), with the state rendered by the student's own chat template (tool calls as text, render.py).

Gate: a step is replayed when H >= `threshold` (nats) or, without a threshold, when it is among
the `top_fraction` most uncertain steps of the run (ties at the cut included). The fraction is the
default because an absolute entropy means different things for different students; it fixes the
share of steps sent to teachers (calls cut = 1 - top_fraction) and lets the entropy decide which.

The gate pays where the student's entropy tracks its mistakes: a student that is right on most
steps and calibrated, with teachers better than it. It cannot where most steps yield a pair (no
gate keeps more than top_fraction / pair rate of them), nor where the teachers are weaker than the
student (they agree on wrong answers where it is confident). benchmarks/README.md has all three.
"""

from __future__ import annotations

import math

from composer_prime.configs.replay import VOIConfig
from composer_prime.inference.client import InferenceClient
from composer_prime.inference.protocol import ScoreRequest
from composer_prime.model.chat_template import template_ids
from composer_prime.replay.cache import AnswerCache
from composer_prime.replay.render import action_text, request_messages
from composer_prime.replay.steps import Step, digest


class StudentScorer:
    def __init__(self, config: VOIConfig, cache: AnswerCache):
        self.config, self.cache = config, cache
        self.client = InferenceClient(config.student_url)
        self._tokenizer = None
        self._model = None

    async def _load(self) -> None:
        if self._tokenizer is not None:
            return
        from transformers import AutoTokenizer

        health = await self.client.wait_until_ready(timeout_s=60)
        self._model = self.config.tokenizer or health.model
        self._tokenizer = AutoTokenizer.from_pretrained(self._model)

    async def entropy(self, step: Step) -> float:
        await self._load()
        key = digest({"student": self._model, "url": self.config.student_url, "aggregate": self.config.aggregate,
                      "state": step.state_payload(), "action": step.action.model_dump()})
        if (hit := self.cache.get_score(key)) is not None:
            return hit
        tokenizer = self._tokenizer
        messages, _ = request_messages(step.state, step.tools, "text")
        prompt = template_ids(tokenizer, messages)
        completion = tokenizer.encode(action_text(step.action), add_special_tokens=False)
        if tokenizer.eos_token_id is not None:
            completion.append(tokenizer.eos_token_id)
        response = await self.client.score(ScoreRequest(prompt_token_ids=prompt, completion_token_ids=completion))
        if not response.entropies:
            raise RuntimeError("the student's inference server returned no entropies")
        if self.config.aggregate == "max":
            value = max(response.entropies)
        else:
            value = sum(response.entropies) / len(response.entropies)
        self.cache.put_score(key, value)
        return value

    async def aclose(self) -> None:
        await self.client.aclose()


def gate(entropies: list[float], config: VOIConfig) -> list[bool]:
    """Which steps to replay."""
    if config.threshold is not None:
        return [h >= config.threshold for h in entropies]
    if not entropies:
        return []
    keep = max(1, math.ceil(config.top_fraction * len(entropies)))
    cut = sorted(entropies, reverse=True)[keep - 1]
    return [h >= cut for h in entropies]
