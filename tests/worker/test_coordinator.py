"""The coordinator admits by token, binds ids to keys, and only takes heartbeats signed by the worker."""

from __future__ import annotations

import asyncio
import time

from fastapi.testclient import TestClient

from composer_prime import keys
from composer_prime.store import Store
from composer_prime.configs.coordinator import UploadsConfig
from composer_prime.verify.worker_registry import WorkerRegistry
from composer_prime.coordinator.app import create_coordinator_app
from composer_prime.coordinator.grants import CoordinatorUploads
from composer_prime.worker.main import retry
from composer_prime.coordinator.protocol import JoinResponse, heartbeat_message

INFO = JoinResponse(run_id="r", run_public_key="00" * 32, broadcast_servers=[], upload_max_bytes=64, env_id="e",
                    temperature=1.0, max_tokens=8, samples_per_prompt=1, prompts_per_batch=1, current_version=3)


def _beat(worker: str, key, t: float | None = None) -> dict:
    t = time.time() if t is None else t
    return {"worker_id": worker, "time": t, "weight_version": 3, "batches_uploaded": 1,
            "signature": key.sign(heartbeat_message(worker, t, 3, 1)).hex()}


def test_join_and_heartbeats(tmp_path):
    registry = WorkerRegistry(tmp_path / "w.json")
    http = TestClient(create_coordinator_app(registry, "token-123", lambda: INFO, lambda: 4,
                                             CoordinatorUploads(Store(str(tmp_path / "store"))), UploadsConfig()))
    key, other = keys.generate_key(), keys.generate_key()
    join = {"join_token": "token-123", "worker_id": "w1", "public_key": keys.public_hex(key)}
    assert http.post("/join", json={**join, "join_token": "nope"}).status_code == 403
    assert http.post("/join", json=join).json()["current_version"] == 3
    assert http.post("/join", json=join).status_code == 200  # a restarted worker with its key rejoins
    assert http.post("/join", json={**join, "public_key": keys.public_hex(other)}).status_code == 409  # id taken
    assert http.post("/heartbeat", json=_beat("w1", key)).json() == {"current_version": 4, "banned": False}
    assert http.post("/heartbeat", json=_beat("w1", other)).status_code == 403  # someone else keeping w1 alive
    assert http.post("/heartbeat", json=_beat("w1", key, time.time() - 3600)).status_code == 400  # replayed
    registry.ban("w1", "test")
    assert http.post("/heartbeat", json=_beat("w1", key)).json()["banned"] is True
    assert http.post("/join", json=join).status_code == 403
    assert http.get("/workers").json()["w1"]["last_heartbeat"]["batches_uploaded"] == 1


def test_retry_backs_off_until_the_call_succeeds():
    attempts = []

    async def flaky():
        attempts.append(time.monotonic())
        if len(attempts) < 3:
            raise ConnectionError("down")
        return "ok"

    assert asyncio.run(retry("flaky", flaky, first_s=0.05)) == "ok"
    gaps = [b - a for a, b in zip(attempts, attempts[1:])]
    assert len(attempts) == 3 and gaps[1] > 1.5 * gaps[0] * 0.9  # doubling back-off
