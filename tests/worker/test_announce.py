"""The coordinator announces the newest version workers can fetch from the broadcast servers, not its own folder's."""

from __future__ import annotations

from fastapi import FastAPI

from composer_prime.utils.net import free_port
from composer_prime.utils.serve import ServedApp
from composer_prime.coordinator.announce import HeldVersion


def _server(versions: list[int]) -> ServedApp:
    app = FastAPI()

    @app.get("/versions")
    async def listed() -> list[int]:
        return versions

    return ServedApp(app)


def test_the_announcement_is_what_a_server_holds_and_the_verifier_trusts():
    local = [3]
    origin_versions, relay_versions = [0, 1], [0]
    with _server(origin_versions) as origin, _server(relay_versions) as relay:
        down = f"http://127.0.0.1:{free_port()}"
        held = HeldVersion([down, relay.url, origin.url], lambda: local[0])
        assert held() == 1  # v2 and v3 are in the trainer's folder, not yet in the store the origin serves
        assert HeldVersion([relay.url], lambda: local[0])() == 0
        local[0] = 0
        assert held() == 0  # never newer than the verifier can check
    assert HeldVersion([down], lambda: 5)() == -1  # no server answers: nothing to fetch yet
    assert HeldVersion([], lambda: 5)() == 5  # no broadcast servers: the run's own folder is what workers see
