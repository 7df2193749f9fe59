"""The coordinator announces the newest version workers can fetch from the broadcast servers, not its own folder's;
and no broadcast server, however it answers, stalls a join or a heartbeat (issue 30: a relay answering `/versions`
with a non-list made every join and heartbeat fail; one that trickled or never finished held them all)."""

from __future__ import annotations

import asyncio
import threading

from fastapi import FastAPI
from fastapi.responses import Response, StreamingResponse

from composer_prime.coordinator.announce import HeldVersion
from composer_prime.utils.net import free_port
from composer_prime.utils.serve import ServedApp


def _server(versions: list[int]) -> ServedApp:
    app = FastAPI()

    @app.get("/versions")
    async def listed() -> list[int]:
        return versions

    return ServedApp(app)


def hostile(release: threading.Event) -> ServedApp:
    """/nonsense: a dict; /huge: 1 MiB of list; /trickle: a byte every 0.2 s; /hang: headers, then nothing until
    `release`."""
    app = FastAPI()

    @app.get("/nonsense/versions")
    async def nonsense() -> Response:
        return Response(b'{"versions": [99]}', media_type="application/json")

    @app.get("/huge/versions")
    async def huge() -> Response:
        return Response(b"[" + b"1," * 2**19 + b"1]", media_type="application/json")

    @app.get("/trickle/versions")
    async def trickle() -> StreamingResponse:
        async def body():
            for piece in b"[99" + b" " * 2000 + b"]":  # valid, and 99 would count, after 400 s
                yield bytes([piece])
                await asyncio.sleep(0.2)

        return StreamingResponse(body(), media_type="application/json")

    @app.get("/hang/versions")
    async def hang() -> StreamingResponse:
        async def body():
            yield b"["
            while not release.is_set():
                await asyncio.sleep(0.05)
            yield b"99]"

        return StreamingResponse(body(), media_type="application/json")

    return ServedApp(app)


def test_the_announcement_is_what_a_server_holds_and_the_verifier_trusts():
    local = [3]
    with _server([0, 1]) as origin, _server([0]) as relay:
        down = f"http://127.0.0.1:{free_port()}"
        held = HeldVersion([down, relay.url, origin.url], lambda: local[0])
        held.refresh()
        assert held() == 1  # v2 and v3 are in the trainer's folder, not yet in the store the origin serves
        only_relay = HeldVersion([relay.url], lambda: local[0])
        only_relay.refresh()
        assert only_relay() == 0
        local[0] = 0
        assert held() == 0  # never newer than the verifier can check
    no_answer = HeldVersion([down], lambda: 5)
    no_answer.refresh()
    assert no_answer() == -1  # no server answers: nothing to fetch yet
    assert HeldVersion([], lambda: 5)() == 5  # no broadcast servers: the run's own folder is what workers see


def test_hostile_servers_count_as_listing_nothing_and_never_hold_the_caller():
    release = threading.Event()
    with _server([0, 1]) as origin, hostile(release) as bad:
        servers = [f"{bad.url}/{route}" for route in ("nonsense", "huge", "trickle", "hang")] + [origin.url]
        held = HeldVersion(servers, lambda: 50, deadline_s=1.0, interval_s=0.1)
        held.refresh()  # returns: the hanging server is still hanging (`release` is not set)
        assert not release.is_set() and held() == 1  # none of the hostile answers counted (99 would be)
        with held:  # refreshed in the background from now on: a call never waits for a server
            for _ in range(50):
                assert held() == 1
        release.set()
