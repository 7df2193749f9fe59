"""A scripted policy behind an OpenAI-compatible `/v1/chat/completions` server (FastAPI + uvicorn).

The server finds the task from the "Task id: ..." line of the first user message, counts the
assistant messages already in the conversation, and answers with the next step of that task's
script as an OpenAI tool call. Scripts: "gold" (look around, write the original source back,
run the failing tests, submit), "noop" (submit at once), or any list of steps given per task.

    with ScriptedServer(rows, script="gold") as server:
        run_rollout(row, tasks_dir, base_url=server.base_url)
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import StreamingResponse

from feature_deletion.task import TaskRow

Step = dict[str, Any]  # {"tool": name, "args": {...}} or {"text": "..."} (a reply without a tool call)


def gold_script(row: TaskRow) -> list[Step]:
    first = next(iter(row.gold_files))
    steps: list[Step] = [
        {"tool": "list_dir", "args": {"path": "."}},
        {"tool": "read_file", "args": {"path": first, "start_line": 1, "end_line": 40}},
        {"tool": "search", "args": {"pattern": "NotImplementedError", "path": "."}},
    ]
    for rel, original in row.gold_files.items():
        broken = row.broken_files.get(rel)
        if broken is not None and broken != original and broken.count(_first_diff(broken, original)) == 1:
            steps.append({"tool": "edit_file", "args": {"path": rel, "old_text": _first_diff(broken, original),
                                                         "new_text": _first_diff_new(broken, original)}})
        steps.append({"tool": "write_file", "args": {"path": rel, "content": original}})
    steps.append({"tool": "run_tests", "args": {"tests": row.f2p[:20]}})
    steps.append({"tool": "submit", "args": {}})
    return steps


def _split(broken: str, original: str) -> tuple[int, int, int]:
    a, b = broken.splitlines(keepends=True), original.splitlines(keepends=True)
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    j = 0
    while j < min(len(a), len(b)) - i and a[-1 - j] == b[-1 - j]:
        j += 1
    return i, len(a) - j, len(b) - j


def _first_diff(broken: str, original: str) -> str:
    i, end_a, _ = _split(broken, original)
    return "".join(broken.splitlines(keepends=True)[i:end_a])


def _first_diff_new(broken: str, original: str) -> str:
    i, _, end_b = _split(broken, original)
    return "".join(original.splitlines(keepends=True)[i:end_b])


SCRIPTS = {"gold": gold_script, "noop": lambda row: [{"tool": "submit", "args": {}}]}


def make_app(scripts: dict[str, list[Step]]):
    app = FastAPI()

    @app.get("/health")
    def health():
        return {"ok": True}

    @app.get("/v1/models")
    def models():
        return {"object": "list", "data": [{"id": "scripted", "object": "model"}]}

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        body = await request.json()
        messages = body.get("messages") or []
        task_id = None
        for m in messages:
            if m.get("role") == "user" and isinstance(m.get("content"), str) and m["content"].startswith("Task id: "):
                task_id = m["content"].split("\n", 1)[0][len("Task id: "):].strip()
                break
        if task_id not in scripts:
            raise HTTPException(404, f"no script for task {task_id!r}")
        step_index = sum(1 for m in messages if m.get("role") == "assistant")
        script = scripts[task_id]
        step = script[step_index] if step_index < len(script) else {"tool": "submit", "args": {}}
        message: dict[str, Any] = {"role": "assistant", "content": step.get("text", "")}
        finish = "stop"
        if "tool" in step:
            args = step.get("raw_args")
            if args is None:
                args = json.dumps(step.get("args", {}))
            message["tool_calls"] = [{"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function",
                                      "function": {"name": step["tool"], "arguments": args}}]
            finish = "tool_calls"
        head = {"id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "created": int(time.time()),
                "model": body.get("model", "scripted")}
        usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        if body.get("stream"):
            return _stream(head, message, finish, usage)
        return {**head, "object": "chat.completion", "usage": usage,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}]}

    return app


def _stream(head: dict[str, Any], message: dict[str, Any], finish: str, usage: dict[str, int]) -> StreamingResponse:
    """The answer as server-sent events (what verifiers' eval client asks for): the whole message in one delta
    (tool calls indexed, as OpenAI streams them), then the finish reason, the usage, and [DONE]."""
    delta = dict(message)
    if "tool_calls" in message:
        delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(message["tool_calls"])]
    chunks = [{"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
              {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
              {"choices": [], "usage": usage}]
    events = [f"data: {json.dumps({**head, 'object': 'chat.completion.chunk', **c})}\n\n" for c in chunks]
    return StreamingResponse(iter([*events, "data: [DONE]\n\n"]), media_type="text/event-stream")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ScriptedServer:
    """uvicorn on 127.0.0.1 in a thread; a context manager that stops it on exit."""

    def __init__(self, rows: list[TaskRow], script: str = "gold", custom: dict[str, list[Step]] | None = None):
        import uvicorn

        scripts = {row.id: SCRIPTS[script](row) for row in rows}
        scripts |= custom or {}
        self.port = _free_port()
        config = uvicorn.Config(make_app(scripts), host="127.0.0.1", port=self.port, log_level="warning",
                                lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self):
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("scripted server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=10)


def main(argv: list[str] | None = None) -> None:
    """`python -m feature_deletion.scripted_agent tasks.jsonl --port 8000 [--script gold]`: serve until killed."""
    import argparse

    import uvicorn

    from feature_deletion.task import load_rows

    parser = argparse.ArgumentParser()
    parser.add_argument("tasks")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--script", default="gold", choices=sorted(SCRIPTS))
    args = parser.parse_args(argv)
    rows, problems = load_rows(args.tasks)
    for p in problems:
        print(p)
    uvicorn.run(make_app({r.id: SCRIPTS[args.script](r) for r in rows}), host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
