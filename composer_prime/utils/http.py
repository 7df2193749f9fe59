"""Reading an answer from a server we do not trust: a cap on its size and a deadline on the whole of it.

httpx's timeouts bound each network operation, not an answer: a server that sends a byte every few seconds
never trips them and holds its caller as long as it likes. `get_bounded` reads the body piece by piece and
gives up past `max_bytes` or once `deadline_s` has passed (at most one read timeout later).
"""

from __future__ import annotations

import time

import httpx


class UnfitAnswer(httpx.HTTPError):
    """An answer too large or too slow to take."""


def get_bounded(client: httpx.Client, url: str, max_bytes: int, deadline_s: float) -> bytes:
    """GET `url` with `client` (whose read timeout should not exceed `deadline_s`); the body, or an httpx.HTTPError."""
    deadline = time.monotonic() + deadline_s
    with client.stream("GET", url) as response:
        response.raise_for_status()
        if response.headers.get("content-encoding", "identity") != "identity":
            raise UnfitAnswer(f"{url}: a compressed answer (its size is not the cap's)")
        body = bytearray()
        for chunk in response.iter_raw():
            body += chunk
            if len(body) > max_bytes:
                raise UnfitAnswer(f"{url}: answer over {max_bytes} bytes")
            if time.monotonic() > deadline:
                raise UnfitAnswer(f"{url}: answer not complete after {deadline_s:.0f} s")
        return bytes(body)
