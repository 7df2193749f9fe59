"""Limits on what callers can make the coordinator do: sliding-window rate limits for its routes (grants,
assignments, joins), and a cap on the bytes of a request body it reads."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from starlette.exceptions import HTTPException
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_MESSAGE_BYTES = 64 * 2**10  # a join, heartbeat, assignment or grant request is a few hundred bytes


class SlidingWindow:
    """At most `limit` events per key in any `window_s` seconds.

    Keys whose window emptied are forgotten once more than `max_keys` are held, so a caller that makes up
    keys (client addresses) cannot grow this without bound."""

    def __init__(self, limit: int, window_s: float = 3600.0, max_keys: int = 100_000):
        self.limit, self.window_s, self.max_keys = limit, window_s, max_keys
        self.events: dict[str, deque[float]] = {}

    def take(self, key: str, now: float) -> bool:
        """Count one event for `key` at `now` (monotonic seconds); False (and not counted) when over the limit."""
        if len(self.events) > self.max_keys:
            self.events = {k: t for k, t in self.events.items() if t and t[-1] > now - self.window_s}
        times = self.events.setdefault(key, deque())
        while times and times[0] <= now - self.window_s:
            times.popleft()
        if len(times) >= self.limit:
            return False
        times.append(now)
        return True


class BodyLimit:
    """ASGI middleware: a request body over `max_bytes(path)` is refused (413) before the route parses it.

    FastAPI reads a body whole before validating it, and uvicorn sets no limit, so anyone who can reach the
    port (no join token is needed to send one) could make the process hold gigabytes. A declared
    Content-Length over the limit is answered at once, unread; a chunked body is cut off at the limit."""

    def __init__(self, app: ASGIApp, max_bytes: Callable[[str], int]):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_bytes(scope["path"])
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and int(declared) > limit:  # uvicorn has refused a non-numeric one already
            await PlainTextResponse(f"request body over {limit} bytes", 413)(scope, receive, send)
            return
        read = 0

        async def bounded() -> Message:
            nonlocal read
            message = await receive()
            read += len(message.get("body", b""))
            if read > limit:  # the route's body read raises this as it is: FastAPI re-raises HTTPExceptions
                raise HTTPException(413, f"request body over {limit} bytes")
            return message

        await self.app(scope, bounded, send)
