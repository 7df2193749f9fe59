"""OpenAI-compatible routes over a Backend: /v1/completions, /v1/chat/completions, /v1/models.

Non-streaming. Besides OpenAI's sampling fields, `top_k` and `stop_token_ids` (vLLM's
extensions) are accepted; other unknown fields are ignored, as OpenAI clients send many.
`stop` strings cut the text after generation; the kept token ids end with the one that
completed the stop string. `logprobs` are those of the sampled tokens under the distribution
they were drawn from; alternatives are not computed (`top_logprobs` is null / empty).
A chat request's `model` may be any name: the server has one model.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, ConfigDict, Field

from composer_prime.inference.backend import Backend
from composer_prime.inference.protocol import Completion, GenerateRequest

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


def _text_content(message: dict[str, Any]) -> dict[str, Any]:
    """OpenAI allows `content` as a list of parts; chat templates expect a string."""
    content = message.get("content")
    if not isinstance(content, list):
        return message
    return {**message, "content": "".join(p.get("text", "") for p in content if p.get("type") == "text")}


def openai_router(backend: Backend, throughput: Throughput) -> APIRouter:
    router = APIRouter(prefix="/v1")
    tokenizer = backend.tokenizer

    async def sample(prompt_ids: list[int], body: _SamplingFields, max_tokens: int) -> list[_Choice]:
        if body.stream:
            raise HTTPException(status_code=400, detail="streaming is not supported; send stream=false")
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

    @router.post("/completions")
    async def completions(body: CompletionRequest) -> dict[str, Any]:
        if isinstance(body.prompt, str):
            prompts = [tokenizer.encode(body.prompt)]
        elif body.prompt and isinstance(body.prompt[0], str):
            prompts = [tokenizer.encode(p) for p in body.prompt]
        else:
            prompts = [body.prompt]
        if any(not p for p in prompts):
            raise HTTPException(status_code=400, detail="prompt is empty")
        results = await asyncio.gather(*(sample(p, body, body.max_tokens) for p in prompts))
        choices: list[dict[str, Any]] = []
        for choice in (c for per_prompt in results for c in per_prompt):
            logprobs = None
            if body.logprobs is not None:
                tokens = token_strings(choice.token_ids)
                offsets = [sum(len(t) for t in tokens[:i]) for i in range(len(tokens))]
                logprobs = {"tokens": tokens, "token_logprobs": choice.logprobs, "top_logprobs": None,
                            "text_offset": offsets}
            choices.append({"index": len(choices), "text": choice.text, "logprobs": logprobs,
                            "finish_reason": choice.finish_reason})
        return {
            "id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion", "created": int(time.time()),
            "model": backend.model_name, "choices": choices,
            "usage": usage(sum(len(p) for p in prompts), [c for per_prompt in results for c in per_prompt]),
        }

    @router.post("/chat/completions")
    async def chat_completions(body: ChatCompletionRequest) -> dict[str, Any]:
        try:
            messages = [_text_content(m) for m in body.messages]
            prompt_ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        except Exception as exc:  # noqa: BLE001 - a template error is the caller's message list
            raise HTTPException(status_code=400, detail=f"chat template failed: {exc}") from None
        max_tokens = body.max_completion_tokens or body.max_tokens or _CHAT_MAX_TOKENS
        results = await sample(list(prompt_ids), body, max_tokens)
        choices = []
        for index, choice in enumerate(results):
            logprobs = None
            if body.logprobs:
                logprobs = {"content": [
                    {"token": token, "logprob": lp, "bytes": list(token.encode()), "top_logprobs": []}
                    for token, lp in zip(token_strings(choice.token_ids), choice.logprobs)
                ]}
            choices.append({"index": index, "message": {"role": "assistant", "content": choice.text},
                            "logprobs": logprobs, "finish_reason": choice.finish_reason})
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
            "model": backend.model_name, "choices": choices, "usage": usage(len(prompt_ids), results),
        }

    return router
