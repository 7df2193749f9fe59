"""Real HTTP servers on 127.0.0.1 for the replay tests and benchmarks/replay_voi.py.

- `model_variant`: a local tiny model: the committed quickstart warm start (it reverses letters,
  imperfectly), optionally with seeded Gaussian noise on its weights, so several teachers are
  different models that mostly agree, and a heavily perturbed one disagrees.
- `ServerThread`: uvicorn in a thread serving an app built inside the thread's own event loop
  (our inference server's `create_app(TransformersBackend(...))`, or the fault server).
- `Counting`: ASGI middleware that counts POSTs per request state (sha256 of the JSON `messages`),
  tracks calls in flight and their maximum, can add a delay, and records the `usage` it returned.
- `fault_app`: an OpenAI-compatible chat server that answers correctly (it reverses the letters
  of the last user message) after injecting, per state, a scripted sequence of faults:
  429 + Retry-After, 500, a slow answer, malformed JSON, a truncated body; asked to stream, it
  answers in server-sent events (one chunk per word, usage last) and its faults become a stream
  cut mid-way, one that ends without [DONE], a malformed chunk and an error chunk.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import string
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path

import torch
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from transformers import AutoModelForCausalLM, AutoTokenizer

from noise import add_weight_noise_
from composer_prime.utils.net import free_port

ROOT = Path(__file__).resolve().parents[2]
WARMSTART = ROOT / "configs" / "quickstart" / "warmstart"


def model_variant(out: Path, noise: float = 0.0, seed: int = 0) -> Path:
    """The warm start with N(0, (noise * std of each tensor)^2) added to every weight."""
    if (out / "config.json").exists():
        return out
    model = AutoModelForCausalLM.from_pretrained(WARMSTART, dtype=torch.float32)
    if noise:
        add_weight_noise_(model, noise, seed)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(WARMSTART).save_pretrained(out)
    return out


def state_key(body: bytes) -> str:
    try:
        messages = json.loads(body).get("messages")
    except (json.JSONDecodeError, AttributeError):
        messages = None
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:16]


class Counting:
    """ASGI middleware: POST counts per state, in-flight maximum, an optional delay, returned usage."""

    def __init__(self, app, delay_s: float = 0.0, path: str = "/v1/chat/completions"):
        self.app, self.delay_s, self.path = app, delay_s, path
        self.counts: Counter = Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        self.usages: list[dict] = []

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] != self.path:
            return await self.app(scope, receive, send)
        messages, body = [], b""
        while True:
            message = await receive()
            messages.append(message)
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if message["type"] == "http.disconnect":
            # The client died before its body arrived whole (a test SIGKILLs a replay mid-send): no call was
            # made, and the cut body would count as a 51st state.
            return
        self.counts[state_key(body)] += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        replay = iter(messages)

        async def replayed():
            return next(replay, None) or await receive()

        chunks = []

        async def capture(message):
            if message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
            await send(message)

        try:
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            await self.app(scope, replayed, capture)
        finally:
            self.in_flight -= 1
            try:
                usage = json.loads(b"".join(chunks)).get("usage")
                if usage:
                    self.usages.append(usage)
            except (json.JSONDecodeError, AttributeError):
                pass


class ServerThread:
    """uvicorn on 127.0.0.1:<free port> in a daemon thread; `build` makes the app inside its loop and
    returns (app, async cleanup)."""

    def __init__(self, build: Callable[[], Awaitable[tuple[object, Callable[[], Awaitable[None]] | None]]]):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._build = build
        self._ready = threading.Event()
        self.error: BaseException | None = None
        self.server: uvicorn.Server | None = None
        self._thread = threading.Thread(target=self._main, daemon=True)

    def _main(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:  # noqa: BLE001 - reported by start()
            self.error = exc
            self._ready.set()

    async def _serve(self) -> None:
        app, cleanup = await self._build()
        self.app = app
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="error",
                                                   timeout_graceful_shutdown=1))
        serving = asyncio.create_task(self.server.serve())
        while not self.server.started and not serving.done():
            await asyncio.sleep(0.01)
        self._ready.set()
        try:
            await serving
        finally:
            if cleanup is not None:
                await cleanup()

    def start(self) -> ServerThread:
        self._thread.start()
        self._ready.wait(120)
        if self.error is not None or self.server is None or not self.server.started:
            raise RuntimeError(f"test server did not start: {self.error!r}")
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.should_exit = True
        self._thread.join(30)


def teacher(name: str, url: str, **fields) -> dict:
    """A teacher pool entry for a server of ours at `url` (a `[[teachers]]` table of ReplayConfig)."""
    return {"name": name, "model": name, "base_url": url + "/v1", "tool_format": "text", "max_tokens": 24,
            "concurrency": 8, **fields}


def inference_server(model_dir: Path, delay_s: float = 0.0, max_batch_size: int = 16) -> ServerThread:
    """Our inference server over `model_dir`, wrapped in `Counting` (reachable as `.app`)."""

    async def build():
        from composer_prime.configs.shared import ModelConfig
        from composer_prime.configs.inference import TransformersBackendConfig
        from composer_prime.inference.server import create_app
        from composer_prime.inference.transformers_backend import TransformersBackend

        backend = TransformersBackend(ModelConfig(path=str(model_dir), dtype="float32", device="cpu"),
                                      TransformersBackendConfig(max_batch_size=max_batch_size, num_threads=1), seed=0)
        return Counting(create_app(backend), delay_s=delay_s), backend.close

    return ServerThread(build).start()


# --- the fault-injecting teacher ------------------------------------------------------------------

FAULTS = ("429", "400", "500", "slow", "malformed", "truncated", "ok")


def reverse_answer(messages: list[dict]) -> str:
    last = next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), "")
    return " ".join(reversed("".join(last.split())))


def fault_app(script: list[str], *, retry_after_s: float = 0.2, slow_s: float = 3.0,
              tokens_per_char: float = 0.25, strict_tools: bool = False) -> FastAPI:
    """Attempt i (per state) answers with `script[i]` (then "ok" for ever). The good answer reverses
    the letters of the last user message; usage counts prompt characters * tokens_per_char.
    `strict_tools` refuses, as Anthropic's API does, a conversation with tool calls but no `tools`."""
    app = FastAPI()
    attempts: Counter = Counter()
    app.state.attempts = attempts

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        raw = await request.body()
        body = json.loads(raw)
        if strict_tools and not body.get("tools") and any(m.get("tool_calls") for m in body["messages"]):
            return JSONResponse({"error": {"message": "Requests which include `tool_use` or `tool_result` blocks "
                                                      "must define tools."}}, status_code=400)
        key = state_key(raw)
        fault = script[attempts[key]] if attempts[key] < len(script) else "ok"
        attempts[key] += 1
        if fault == "429":
            return JSONResponse({"error": {"message": "rate limited"}}, status_code=429,
                                headers={"Retry-After": str(retry_after_s)})
        if fault == "400":
            return JSONResponse({"error": {"message": "bad request"}}, status_code=400)
        if fault == "500":
            return JSONResponse({"error": {"message": "upstream exploded"}}, status_code=500)
        if fault == "slow":
            await asyncio.sleep(slow_s)
        text = reverse_answer(body["messages"])
        prompt_tokens = max(1, int(len(json.dumps(body["messages"])) * tokens_per_char))
        completion_tokens = min(body.get("max_tokens") or 16, len(text.split()) + 1)
        if body.get("stream"):
            return StreamingResponse(sse(text, body.get("model"), prompt_tokens, completion_tokens, fault),
                                     media_type="text/event-stream")
        if fault == "malformed":
            return Response(b'{"id": "chatcmpl-x", "choices": [{"message": {"content": "a b', media_type="application/json")
        payload = json.dumps({
            "id": f"chatcmpl-{random.random()}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model"), "choices": [{"index": 0, "finish_reason": "stop",
                                                     "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }).encode()
        if fault == "truncated":
            async def cut():
                yield payload[: len(payload) // 2]
                raise RuntimeError("connection cut mid-body")  # uvicorn aborts the chunked response
            return StreamingResponse(cut(), media_type="application/json")
        return Response(payload, media_type="application/json")

    return app


async def sse(text: str, model: str | None, prompt_tokens: int, completion_tokens: int, fault: str):
    """A chat-completion stream as OpenAI sends it: a role chunk, content deltas, a finish chunk, a usage
    chunk with no choices (include_usage), then [DONE]; keep-alive comments in between."""
    def event(choices: list, **extra) -> bytes:
        return f"data: {json.dumps({'id': 'chatcmpl-s', 'object': 'chat.completion.chunk', 'model': model, 'choices': choices, **extra})}\n\n".encode()

    words = text.split(" ")
    events = [b": keep-alive\n\n", event([{"index": 0, "delta": {"role": "assistant", "content": ""}}])]
    events += [event([{"index": 0, "delta": {"content": w if i == 0 else " " + w}}]) for i, w in enumerate(words)]
    events += [event([{"index": 0, "delta": {}, "finish_reason": "stop"}]),
               event([], usage={"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                                "total_tokens": prompt_tokens + completion_tokens}),
               b"data: [DONE]\n\n"]
    half = len(events) // 2
    if fault == "malformed":
        events.insert(half, b'data: {"choices": [{"delta": {"content": "a b\n\n')
    if fault == "error-chunk":
        events[half:] = [b'data: {"error": {"message": "upstream provider failed", "code": 502}}\n\n']
    for i, chunk in enumerate(events):
        if i == half and fault == "truncated":
            raise RuntimeError("connection cut mid-stream")  # uvicorn aborts the chunked response
        if i == half and fault == "unfinished":
            return  # a clean end of the body, but no [DONE]
        yield chunk
        await asyncio.sleep(0)


def fault_server(script: list[str], delay_s: float = 0.0, **options) -> ServerThread:
    async def build():
        return Counting(fault_app(script, **options), delay_s=delay_s), None

    return ServerThread(build).start()


def reverse_prompts(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 8))) for _ in range(n)]


def student_trace(student_url: str, output_dir: Path, n: int = 50, seed: int = 0, temperature: float = 1.0) -> Path:
    """A real composer-prime trace file: the student (served at `student_url`) answers `n` reverse-text
    prompts, sampled at `temperature`, written as RolloutTraces to <output_dir>/traces/step_0.jsonl."""
    import httpx

    from composer_prime.traces import RolloutTrace, write_traces

    traces = []
    with httpx.Client(base_url=student_url, timeout=120) as http:
        for i, prompt in enumerate(reverse_prompts(n, seed)):
            messages = [{"role": "system", "content": "Reverse the letters."}, {"role": "user", "content": prompt}]
            reply = http.post("/v1/chat/completions", json={"messages": messages, "max_tokens": 24,
                                                            "temperature": temperature, "seed": seed * 1000 + i})
            reply.raise_for_status()
            text = reply.json()["choices"][0]["message"]["content"]
            target = " ".join(reversed("".join(prompt.split())))
            traces.append(RolloutTrace(
                id=f"step0/{i}/0", env_id="reverse-text", example_id=f"train-{prompt.replace(' ', '')}", step=0,
                weight_version=0, messages=messages + [{"role": "assistant", "content": text}],
                reward=float("".join(text.split()) == "".join(target.split())),
            ))
    return write_traces(output_dir, 0, traces)
