"""The teacher pool: one `Teacher` per OpenAI-compatible endpoint, with retries, budget and cache.

A call (`Teacher.ask`) goes: cache lookup -> wait for a concurrency slot -> reserve the worst-case
cost (budget.py) -> POST {base_url}/chat/completions -> settle the actual cost -> cache the answer.
With `stream = true` the answer comes as server-sent events (`data: {chunk}` lines, usage in the
last chunk, then `data: [DONE]`), assembled into one chat completion; a stream that ends before
`[DONE]` or carries an error chunk is incomplete, and retried like a cut connection.
Retried (up to `retry.max_attempts`): 429, 408, 409, 5xx, timeouts, cut connections (a truncated
body or stream) and 200 responses whose body is not a chat completion (malformed JSON). The wait before
attempt a+1 is Retry-After when the server sent one, else uniform(0, backoff_s * 2**a) ("full
jitter", so that many clients hit by the same 429 do not retry in lockstep), capped at
max_backoff_s. Other 4xx are final. A call that still fails returns a TeacherAnswer with `error`
set (not cached: a rerun tries again). `BudgetExhausted` propagates: the step is left unanswered.

What the budget is charged (budget.py): an answer's own cost; an HTTP error status 0; a connection
that was never made (refused, or timed out while connecting) 0, since no request reached anyone who
could bill it; an outcome the client cannot know (a timeout or cut connection after the request was
sent, a 2xx body that is no completion) the full reservation, kept apart in `unknown_cost_usd`.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import random
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx

from composer_prime.chat import Action, ToolCall, arguments_json
from composer_prime.configs.replay import RetryConfig, TeacherConfig
from composer_prime.errors import UserError
from composer_prime.pairs import TeacherAnswer
from composer_prime.replay.agreement import parse_text_action
from composer_prime.replay.budget import Budget, BudgetExhausted
from composer_prime.replay.cache import AnswerCache
from composer_prime.replay.render import request_messages
from composer_prime.replay.steps import Step, digest

_RETRY_STATUS = {408, 409, 429}


class _Malformed(Exception):
    """A 200 response that is not a chat completion."""


class _Incomplete(Exception):
    """A stream that ended before `data: [DONE]`, or reported an error part-way."""


@dataclass
class TeacherStats:
    answered: int = 0
    """Answers obtained by a paid call in this run."""
    cached: int = 0
    failed: int = 0
    """Calls that got no answer: a final 4xx, or every attempt failed."""
    refused: int = 0
    """Calls the budget refused before anything was sent."""
    attempts: int = 0
    """HTTP requests sent (retries included)."""
    retries: Counter = field(default_factory=Counter)
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    """What the answered calls cost, from their usage."""
    unknown_cost_usd: float = 0.0
    """Charged for attempts whose billing cannot be known (sent, then no readable answer)."""
    latency_s: float = 0.0
    last_error: str | None = None

    def as_dict(self) -> dict:
        return {"answered": self.answered, "cached": self.cached, "failed": self.failed, "refused": self.refused,
                "attempts": self.attempts, "retries": dict(self.retries), "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens, "cost_usd": self.cost_usd,
                "unknown_cost_usd": self.unknown_cost_usd, "last_error": self.last_error,
                "mean_latency_s": self.latency_s / self.answered if self.answered else None}


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def _action_from_response(data: dict) -> tuple[Action, int | None, int | None]:
    try:
        choice = data["choices"][0]
        message = choice["message"]
    except (KeyError, IndexError, TypeError):
        raise _Malformed("response has no choices[0].message") from None
    if not isinstance(message, dict):
        raise _Malformed("choices[0].message is not an object")
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        if function.get("name"):
            calls.append(ToolCall(id=call.get("id"), name=function["name"],
                                  arguments=arguments_json(function.get("arguments"))))
    content = message.get("content")
    action = Action(content=content or None, tool_calls=calls) if calls else parse_text_action(content)
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    return action, usage.get("prompt_tokens"), usage.get("completion_tokens")


async def assemble_stream(lines: AsyncIterator[str]) -> dict:
    """An SSE chat-completion stream as the non-streamed response it stands for: choices[0]'s content
    deltas joined, tool-call deltas merged by their index (id and name come once, arguments in
    pieces), usage from whichever chunk carries it (the last one, with include_usage). Lines other
    than `data:` (SSE comments such as keep-alives, event names, blank separators) are skipped."""
    content: list[str] = []
    calls: dict[int, dict] = {}
    usage, finish = None, None
    async for line in lines:
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            break
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError as exc:
            raise _Malformed(f"stream chunk is not JSON: {exc}") from None
        if not isinstance(chunk, dict):
            raise _Malformed("stream chunk is not an object")
        if chunk.get("error"):
            raise _Incomplete(f"error chunk: {json.dumps(chunk['error'])[:200]}")
        if isinstance(chunk.get("usage"), dict):
            usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if delta.get("content"):
                content.append(delta["content"])
            for call in delta.get("tool_calls") or []:
                slot = calls.setdefault(call.get("index", 0), {"id": None, "name": "", "arguments": ""})
                function = call.get("function") or {}
                slot["id"] = call.get("id") or slot["id"]
                slot["name"] += function.get("name") or ""
                slot["arguments"] += function.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    else:
        raise _Incomplete("stream ended before data: [DONE]")
    tool_calls = [{"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                  for _, c in sorted(calls.items())]
    message = {"role": "assistant", "content": "".join(content) or None, "tool_calls": tool_calls}
    return {"choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage}


class Teacher:
    def __init__(self, config: TeacherConfig, http: httpx.AsyncClient, cache: AnswerCache, budget: Budget,
                 retry: RetryConfig, rng: random.Random | None = None):
        self.config, self.http, self.cache, self.budget, self.retry = config, http, cache, budget, retry
        self.stats = TeacherStats()
        self._slots = asyncio.Semaphore(config.concurrency)
        self._rng = rng or random.Random()
        self._headers = {}
        if config.api_key_env:
            key = os.environ.get(config.api_key_env)
            if not key:
                raise UserError(f"teacher {config.name}: environment variable {config.api_key_env} is not set")
            self._headers["Authorization"] = f"Bearer {key}"
        self._url = config.base_url.rstrip("/") + "/chat/completions"

    @property
    def name(self) -> str:
        return self.config.name

    def body(self, step: Step) -> dict:
        messages, tools = request_messages(step.state, step.tools, self.config.tool_format)
        body = {"model": self.config.model, "messages": messages, "max_tokens": self.config.max_tokens,
                "temperature": self.config.temperature, "stream": self.config.stream}
        if self.config.stream:
            body["stream_options"] = {"include_usage": True}
        if self.config.seed is not None:
            body["seed"] = self.config.seed
        if tools:
            body["tools"] = tools
        return body

    def key(self, body: dict) -> str:
        # How the answer travels is not part of what was asked: a streamed answer serves a later
        # non-streamed run of the same request and the other way round.
        request = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
        return digest({"teacher": self.config.name, "model": self.config.model, "request": request})

    def worst_cost(self, body: dict) -> float:
        prompt_tokens = len(json.dumps(body, ensure_ascii=False).encode())
        return self.cost(prompt_tokens, self.config.max_tokens)

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.config.input_price + output_tokens * self.config.output_price) / 1e6

    def answer_for(self, action: Action | None = None, **fields) -> TeacherAnswer:
        return TeacherAnswer(teacher=self.config.name, model=self.config.model, action=action, **fields)

    def cached(self, step: Step) -> TeacherAnswer | None:
        value = self.cache.get(self.key(self.body(step)))
        return TeacherAnswer.model_validate_json(value) if value is not None else None

    async def ask(self, step: Step) -> tuple[TeacherAnswer, bool]:
        """(answer, from_cache)."""
        body = self.body(step)
        key = self.key(body)
        if (hit := self.cache.get(key)) is not None:
            self.stats.cached += 1
            return TeacherAnswer.model_validate_json(hit), True
        answer = await self._call(body)
        if answer.error is None:
            self.cache.put(key, answer.model_dump_json())
        return answer, False

    async def _call(self, body: dict) -> TeacherAnswer:
        worst = self.worst_cost(body)
        error = "no attempt"
        for attempt in range(self.retry.max_attempts):
            wait: float | None = None
            async with self._slots:
                try:
                    reservation = await self.budget.reserve(worst)
                except BudgetExhausted:  # ends the call here: nothing was sent
                    self.stats.refused += 1
                    raise
                settled = False
                start = time.monotonic()
                self.stats.attempts += 1
                try:
                    response, data_text, streamed = await self._send(body)
                    if response.status_code < 400:
                        data = streamed if streamed is not None else json.loads(data_text)
                        action, input_tokens, output_tokens = _action_from_response(data)
                except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                    await self.budget.settle(reservation, 0.0)  # no connection: nothing was sent, nothing billed
                    settled = True
                    error = f"connect: {type(exc).__name__}: {exc} ({self._url})"[:300]
                    self.stats.retries["connect"] += 1
                except (httpx.TimeoutException, httpx.TransportError, _Incomplete) as exc:
                    await self._charge_unknown(reservation)
                    settled = True
                    kind = ("timeout" if isinstance(exc, httpx.TimeoutException)
                            else "incomplete-stream" if isinstance(exc, _Incomplete) else "transport")
                    error = f"{kind}: {type(exc).__name__}: {exc}"[:300]
                    self.stats.retries[kind] += 1
                except (json.JSONDecodeError, _Malformed) as exc:  # a 2xx body or stream that is no completion
                    await self._charge_unknown(reservation)
                    settled = True
                    error = f"malformed response: {exc}"[:300]
                    self.stats.retries["malformed"] += 1
                else:
                    latency = time.monotonic() - start
                    if response.status_code in _RETRY_STATUS or response.status_code >= 500:
                        await self.budget.settle(reservation, 0.0)
                        settled = True
                        error = f"HTTP {response.status_code}: {data_text[:200]}"
                        self.stats.retries[str(response.status_code)] += 1
                        wait = _retry_after(response)
                    elif response.status_code >= 400:
                        await self.budget.settle(reservation, 0.0)
                        settled = True
                        self.stats.failed += 1
                        self.stats.last_error = f"HTTP {response.status_code}: {data_text[:300]}"
                        return self.answer_for(error=self.stats.last_error, latency_s=latency)
                    else:
                        if input_tokens is None or output_tokens is None:
                            cost = reservation  # no usage reported: charge the worst case
                            input_tokens, output_tokens = input_tokens or 0, output_tokens or 0
                        else:
                            cost = self.cost(input_tokens, output_tokens)
                        await self.budget.settle(reservation, cost)
                        settled = True
                        s = self.stats
                        s.answered += 1
                        s.input_tokens += input_tokens
                        s.output_tokens += output_tokens
                        s.cost_usd += cost
                        s.latency_s += latency
                        return self.answer_for(action, input_tokens=input_tokens, output_tokens=output_tokens,
                                               cost_usd=cost, latency_s=latency)
                finally:
                    if not settled:  # cancelled mid-call: it may have been billed
                        self.budget.charge_now(reservation, reservation)
                        self.stats.unknown_cost_usd += reservation
            if attempt + 1 < self.retry.max_attempts:
                cap = min(self.retry.max_backoff_s, self.retry.backoff_s * 2**attempt)
                delay = min(self.retry.max_backoff_s, wait) if wait is not None else self._rng.uniform(0, cap)
                await asyncio.sleep(delay)
        self.stats.failed += 1
        self.stats.last_error = f"gave up after {self.retry.max_attempts} attempts: {error}"
        return self.answer_for(error=self.stats.last_error)

    async def _charge_unknown(self, reservation: float) -> None:
        """The request left but no answer came back: it may have been billed, so the budget is charged."""
        await self.budget.settle(reservation, reservation)
        self.stats.unknown_cost_usd += reservation

    async def _send(self, body: dict) -> tuple[httpx.Response, str, dict | None]:
        """(response, body text, the assembled completion of a 200 stream or None). The body is read
        here so that a connection cut part-way surfaces as a transport error."""
        if not self.config.stream:
            response = await self.http.post(self._url, json=body, headers=self._headers,
                                            timeout=self.config.timeout_s)
            return response, response.text, None
        async with self.http.stream("POST", self._url, json=body, headers=self._headers,
                                    timeout=self.config.timeout_s) as response:
            if response.status_code != 200:
                await response.aread()
                return response, response.text, None
            return response, "", await assemble_stream(response.aiter_lines())
