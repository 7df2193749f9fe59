"""OpenAI-compatible routes over a Backend: /v1/completions, /v1/chat/completions, /v1/models.

`stream = true` sends the answer as server-sent events, one chunk per token that adds text, then
a chunk with the finish reason, a usage chunk when `stream_options.include_usage` asks for one,
and `data: [DONE]`. The backends generate whole answers, so the chunks go out once generation
ends: clients that require streaming work unchanged, but the first token arrives no sooner.
Besides OpenAI's sampling fields, `top_k` and `stop_token_ids` (vLLM's
extensions) are accepted; other unknown fields are ignored, as OpenAI clients send many.
`stop` strings cut the text after generation; the kept token ids end with the one that
completed the stop string. `logprobs` are those of the sampled tokens under the distribution
they were drawn from; alternatives are not computed (`top_logprobs` is null / empty).
A chat request's `model` may be any name: the server has one model.

Tools: a chat request's `tools` reach the model as the rollouts present them (tool_calls.py:
through the template when it renders `tools`, else described in the system prompt), and its
Hermes `<tool_call>` blocks come back as OpenAI `tool_calls` (finish reason `tool_calls`); an
assistant message's `tool_calls` go back into the template as the text the model wrote for them.
So any OpenAI client (verifiers' `vf-eval` among them) runs multi-turn tool rollouts against a
model that has no tool-calling API of its own. A block that cannot be read stays in `content`.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, HTTPException
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from composer_prime.chat import Action, ToolCall, render_tool_calls
from composer_prime.inference.backend import Backend
from composer_prime.inference.protocol import Completion, GenerateRequest
from composer_prime.model.chat_template import template_ids
from composer_prime.tool_calls import native_tool_support, parse_turn, tool_names, with_tools

if TYPE_CHECKING:
    from composer_prime.inference.server import Throughput

_CHAT_MAX_TOKENS = 4096  # OpenAI's chat default is "until the context ends"; backends clamp to the context.


class _SamplingFields(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model: str | None = None
    temperature: float = Field(default=1.0, ge=0.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    top_k: int = -1
    n: int = Field(default=1, ge=1)
    seed: int | None = None
    stop: str | list[str] | None = None
    stop_token_ids: list[int] = Field(default_factory=list)
    stream: bool = False
    stream_options: dict[str, Any] | None = None

    def include_usage(self) -> bool:
        return bool(self.stream and (self.stream_options or {}).get("include_usage"))

    def stops(self) -> list[str]:
        return [self.stop] if isinstance(self.stop, str) else [s for s in self.stop or [] if s]


class CompletionRequest(_SamplingFields):
    prompt: str | list[str] | list[int]
    max_tokens: int = Field(default=16, ge=1)
    logprobs: int | None = Field(default=None, ge=0)


class ChatCompletionRequest(_SamplingFields):
    messages: list[dict[str, Any]] = Field(min_length=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    logprobs: bool = False
    top_logprobs: int | None = Field(default=None, ge=0)
    tools: list[dict[str, Any]] | None = None


class _Choice(BaseModel):
    """One sampled completion after stop strings: the kept text, tokens and log-probs."""

    text: str
    token_ids: list[int]
    logprobs: list[float]
    finish_reason: str


def _cut_at_stop(tokenizer, completion: Completion, stops: list[str]) -> _Choice:
    ids = completion.token_ids
    text = tokenizer.decode(ids, skip_special_tokens=True)
    hits = [(i, s) for s in stops if (i := text.find(s)) >= 0]
    if not hits:
        return _Choice(text=text, token_ids=ids, logprobs=completion.logprobs, finish_reason=completion.finish_reason)
    cut, stop = min(hits)
    kept = next(k for k in range(1, len(ids) + 1)
                if len(tokenizer.decode(ids[:k], skip_special_tokens=True)) >= cut + len(stop))
    return _Choice(text=text[:cut], token_ids=ids[:kept], logprobs=completion.logprobs[:kept], finish_reason="stop")


_SEAM_TOKENS = 6  # earlier tokens decoded with each new one (vLLM's incremental detokenizer does the same)


def _pieces(tokenizer, choice: _Choice) -> Iterator[tuple[str, list[int], list[float]]]:
    """The choice's text cut at token boundaries: (text, token ids, their log-probs) per piece.

    A token ending inside a multi-byte character decodes to U+FFFD until the character is complete,
    so it joins the next piece; the pieces' texts concatenate to exactly `choice.text`. Each step
    decodes the pending tokens with a few before them, not the whole prefix (quadratic in the
    answer's length): the context lets tokenizers that drop a word's leading space at the start of
    a decode, or join bytes across tokens, decode the seam as they would the whole text."""
    text, ids = choice.text, choice.token_ids
    start, first, seen = 0, 0, 0  # seen: length of the context tokens' text, before ids[first:]
    for k in range(1, len(ids) + 1):
        last = k == len(ids)
        window = tokenizer.decode(ids[max(0, first - _SEAM_TOKENS):k], skip_special_tokens=True)
        end = len(text) if last else min(start + len(window) - seen, len(text))
        if not last and (window.endswith("\ufffd") or end <= start):
            continue  # no new text yet: this token joins the next piece
        yield text[start:end], ids[first:k], choice.logprobs[first:k]
        start, first = end, k
        seen = len(tokenizer.decode(ids[max(0, k - _SEAM_TOKENS):k], skip_special_tokens=True))


def _sse(chunks: Iterator[dict[str, Any]]) -> StreamingResponse:
    def events() -> Iterator[str]:
        for chunk in chunks:
            yield f"data: {json.dumps(chunk)}\n\n"
        yield "data: [DONE]\n\n"

    return StreamingResponse(events(), media_type="text/event-stream")


def _text_content(message: dict[str, Any]) -> dict[str, Any]:
    """OpenAI allows `content` as a list of parts; chat templates expect a string."""
    content = message.get("content")
    if not isinstance(content, list):
        return message
    return {**message, "content": "".join(p.get("text", "") for p in content if p.get("type") == "text")}


def _template_message(message: dict[str, Any]) -> dict[str, Any]:
    """A message as the chat template takes it: text content, and an assistant's calls as the text written for them."""
    message = _text_content(message)
    calls = message.get("tool_calls")
    if message.get("role") != "assistant" or not calls:
        return message
    written = render_tool_calls([ToolCall.from_openai(c) for c in calls])
    text = "\n".join(part for part in (message.get("content"), written) if part)
    return {k: v for k, v in message.items() if k != "tool_calls"} | {"content": text}


def chat_prompt_ids(tokenizer, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> list[int]:
    """The tokens a chat request is sampled from: its messages and tools as the rollouts render them."""
    messages, tools = with_tools([_template_message(m) for m in messages], tools, native_tool_support(tokenizer))
    return template_ids(tokenizer, messages, tools)


def _assistant_message(text: str, tools: list[dict[str, Any]] | None) -> tuple[dict[str, Any], bool]:
    """The reply as an OpenAI assistant message, and whether it calls tools."""
    if not tools:
        return {"role": "assistant", "content": text}, False
    turn = parse_turn(text, tool_names(tools), id_prefix=f"call_{uuid.uuid4().hex[:12]}")
    calls = [p.call for p in turn.calls if p.call is not None]
    message = Action(content=turn.content, tool_calls=calls).message().openai()
    return message, bool(calls)


def openai_router(backend: Backend, throughput: Throughput) -> APIRouter:
    router = APIRouter(prefix="/v1")
    tokenizer = backend.tokenizer

    async def sample(prompt_ids: list[int], body: _SamplingFields, max_tokens: int) -> list[_Choice]:
        request = GenerateRequest(
            prompt_token_ids=prompt_ids, n=body.n, max_tokens=max_tokens, temperature=body.temperature,
            top_p=body.top_p, top_k=body.top_k, stop_token_ids=body.stop_token_ids, seed=body.seed,
        )
        try:
            response = await backend.generate(request)
        except ValueError as exc:
            raise HTTPException(status_code=400, detail=str(exc)) from None
        choices = [_cut_at_stop(tokenizer, c, body.stops()) for c in response.completions]
        throughput.add(len(prompt_ids), sum(len(c.token_ids) for c in response.completions))
        return choices

    def token_strings(ids: list[int]) -> list[str]:
        return [tokenizer.decode([t]) for t in ids]

    def usage(prompt_tokens: int, choices: list[_Choice]) -> dict[str, int]:
        completion_tokens = sum(len(c.token_ids) for c in choices)
        return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens}

    @router.get("/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [
            {"id": backend.model_name, "object": "model", "created": 0, "owned_by": "composer-prime"}
        ]}

    @router.post("/completions", response_model=None)
    async def completions(body: CompletionRequest) -> dict[str, Any] | StreamingResponse:
        if isinstance(body.prompt, str):
            prompts = [tokenizer.encode(body.prompt)]
        elif body.prompt and isinstance(body.prompt[0], str):
            prompts = [tokenizer.encode(p) for p in body.prompt]
        else:
            prompts = [body.prompt]
        if any(not p for p in prompts):
            raise HTTPException(status_code=400, detail="prompt is empty")
        results = await asyncio.gather(*(sample(p, body, body.max_tokens) for p in prompts))
        flat = [c for per_prompt in results for c in per_prompt]
        head = {"id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion", "created": int(time.time()),
                "model": backend.model_name}
        total = usage(sum(len(p) for p in prompts), flat)

        def logprobs(ids: list[int], lps: list[float], offset: int) -> dict[str, Any] | None:
            if body.logprobs is None:
                return None
            tokens = token_strings(ids)
            offsets = [offset + sum(len(t) for t in tokens[:i]) for i in range(len(tokens))]
            return {"tokens": tokens, "token_logprobs": lps, "top_logprobs": None, "text_offset": offsets}

        if not body.stream:
            choices = [{"index": i, "text": c.text, "logprobs": logprobs(c.token_ids, c.logprobs, 0),
                        "finish_reason": c.finish_reason} for i, c in enumerate(flat)]
            return {**head, "choices": choices, "usage": total}

        def chunks() -> Iterator[dict[str, Any]]:
            for index, choice in enumerate(flat):
                offset = 0
                for text, ids, lps in _pieces(tokenizer, choice):
                    piece = logprobs(ids, lps, offset)
                    yield {**head, "choices": [{"index": index, "text": text, "logprobs": piece,
                                                "finish_reason": None}]}
                    offset += sum(map(len, piece["tokens"])) if piece else 0
                yield {**head, "choices": [{"index": index, "text": "", "logprobs": None,
                                            "finish_reason": choice.finish_reason}]}
            if body.include_usage():
                yield {**head, "choices": [], "usage": total}

        return _sse(chunks())

    @router.post("/chat/completions", response_model=None)
    async def chat_completions(body: ChatCompletionRequest) -> dict[str, Any] | StreamingResponse:
        try:
            prompt_ids = chat_prompt_ids(tokenizer, body.messages, body.tools)
        except Exception as exc:  # noqa: BLE001 - a template error is the caller's message list
            raise HTTPException(status_code=400, detail=f"chat template failed: {exc}") from None
        max_tokens = body.max_completion_tokens or body.max_tokens or _CHAT_MAX_TOKENS
        results = await sample(list(prompt_ids), body, max_tokens)
        total = usage(len(prompt_ids), results)
        head = {"id": f"chatcmpl-{uuid.uuid4().hex}", "created": int(time.time()), "model": backend.model_name}

        def logprobs(ids: list[int], lps: list[float]) -> dict[str, Any]:
            return {"content": [{"token": token, "logprob": lp, "bytes": list(token.encode()), "top_logprobs": []}
                                for token, lp in zip(token_strings(ids), lps)]}

        replies = [_assistant_message(c.text, body.tools) for c in results]
        finish = ["tool_calls" if calls else c.finish_reason for c, (_, calls) in zip(results, replies)]
        if not body.stream:
            choices = [{"index": i, "message": message,
                        "logprobs": logprobs(c.token_ids, c.logprobs) if body.logprobs else None,
                        "finish_reason": finish[i]} for i, (c, (message, _)) in enumerate(zip(results, replies))]
            return {**head, "object": "chat.completion", "choices": choices, "usage": total}

        head["object"] = "chat.completion.chunk"

        def chunks() -> Iterator[dict[str, Any]]:
            for index, choice in enumerate(results):
                yield {**head, "choices": [{"index": index, "delta": {"role": "assistant", "content": ""},
                                            "logprobs": None, "finish_reason": None}]}
                message, calls = replies[index]
                if calls:  # the calls are known once the answer is whole: they go out in one delta
                    delta = {"content": message["content"],
                             "tool_calls": [{"index": i, **c} for i, c in enumerate(message["tool_calls"])]}
                    yield {**head, "choices": [{"index": index, "delta": delta, "finish_reason": None,
                                                "logprobs": logprobs(choice.token_ids, choice.logprobs)
                                                if body.logprobs else None}]}
                else:
                    for text, ids, lps in _pieces(tokenizer, choice):
                        yield {**head, "choices": [{"index": index, "delta": {"content": text},
                                                    "logprobs": logprobs(ids, lps) if body.logprobs else None,
                                                    "finish_reason": None}]}
                yield {**head, "choices": [{"index": index, "delta": {}, "logprobs": None,
                                            "finish_reason": finish[index]}]}
            if body.include_usage():
                yield {**head, "choices": [], "usage": total}

        return _sse(chunks())

    return router
