"""The coordinator admits by token, binds ids to keys, signs its answers with the run key, limits joins, hands out
assignments, and only takes heartbeats signed by the worker."""

from __future__ import annotations

import asyncio
import secrets
import time

import msgspec
import pytest
import httpx
import json
from fastapi import FastAPI, Request, Response
from fastapi.testclient import TestClient

from composer_prime import keys
from composer_prime.configs.coordinator import AdmissionConfig, AssignmentsConfig, UploadsConfig
from composer_prime.coordinator.app import create_coordinator_app
from composer_prime.coordinator.assign import Assigner
from composer_prime.coordinator.grants import CoordinatorUploads, signed_grant_request
from composer_prime.coordinator.protocol import (AnswerRefused, HeartbeatResponse, JoinResponse, RunInfo,
                                                 assign_message, heartbeat_message, open_answer, worker_id)
from composer_prime.store import Store
from composer_prime.verify.rollout_batch import open_assignment
from composer_prime.verify.worker_registry import WorkerRegistry
from composer_prime.configs.worker import WorkerConfig
from composer_prime.errors import UserError
from composer_prime.utils.serve import ServedApp
from composer_prime.worker.main import Worker, retry

INFO = RunInfo(run_id="r", broadcast_servers=[], upload_max_bytes=64, env_id="e", temperature=1.0, max_tokens=8,
               samples_per_prompt=2, prompts_per_batch=3, current_version=3)


def coordinator(tmp_path, run_key, registry: WorkerRegistry | None = None, admission=AdmissionConfig(),
                assignments=AssignmentsConfig(), announced=lambda: 4) -> tuple[TestClient, WorkerRegistry]:
    registry = registry or WorkerRegistry(tmp_path / "w.json")
    assigner = Assigner(run_key, 50, 3, 2, 1.0, 1.0, 8, assignments)
    app = create_coordinator_app(registry, "token-123", run_key, lambda: INFO, announced,
                                 CoordinatorUploads(Store(str(tmp_path / "store"))), assigner, UploadsConfig(), admission)
    return TestClient(app), registry


def _join(name: str, key) -> dict:
    return {"join_token": "token-123", "name": name, "public_key": keys.public_hex(key), "nonce": secrets.token_hex(16)}


def _beat(wid: str, key, t: float | None = None) -> dict:
    t = time.time() if t is None else t
    return {"worker_id": wid, "time": t, "weight_version": 3, "batches_uploaded": 1,
            "signature": key.sign(heartbeat_message(wid, t, 3, 1)).hex()}


def test_join_heartbeat_and_answers_signed_by_the_run_key(tmp_path):
    run_key = keys.generate_key()
    http, registry = coordinator(tmp_path, run_key)
    key, other = keys.generate_key(), keys.generate_key()
    wid = worker_id("w1", keys.public_hex(key))
    join = _join("w1", key)
    assert http.post("/join", json={**join, "join_token": "nope"}).status_code == 403
    answer = open_answer(run_key.public_key(), http.post("/join", json=join).json(), JoinResponse)
    assert (answer.worker_id, answer.nonce, answer.current_version) == (wid, join["nonce"], 3)
    assert http.post("/join", json=_join("w1", key)).status_code == 200  # a restarted worker with its key rejoins
    beat = _beat(wid, key)
    answer = open_answer(run_key.public_key(), http.post("/heartbeat", json=beat).json(), HeartbeatResponse)
    assert (answer.worker_id, answer.time, answer.current_version, answer.banned) == (wid, beat["time"], 4, False)
    assert http.post("/heartbeat", json=_beat(wid, other)).status_code == 403  # someone else keeping w1 alive
    assert http.post("/heartbeat", json=_beat(wid, key, time.time() - 3600)).status_code == 400  # replayed
    registry.ban(wid, "test")
    assert open_answer(run_key.public_key(), http.post("/heartbeat", json=_beat(wid, key)).json(),
                       HeartbeatResponse).banned
    assert http.post("/join", json=_join("w1", key)).status_code == 403
    assert http.get("/workers").json()[wid]["last_heartbeat"]["batches_uploaded"] == 1
    # An answer someone between the worker and the run made up, or one signed for another kind of message.
    forged = http.post("/join", json=_join("w2", key)).json()
    for bad in ({**forged, "body": forged["body"].replace('"run_id":"r"', '"run_id":"x"')},
                {**forged, "signature": keys.generate_key().sign(b"x").hex()}, {"body": "{}"}):
        with pytest.raises(AnswerRefused):
            open_answer(run_key.public_key(), bad, JoinResponse)
    with pytest.raises(AnswerRefused):
        open_answer(run_key.public_key(), forged, HeartbeatResponse)


def test_ids_are_bound_to_keys_so_names_cannot_be_squatted_or_climb_out(tmp_path):
    """Issue 30: ids were predictable and the first key to claim one owned it, so the real volunteer got 409, fatal
    on its side; `.` and `..` were valid ids and became paths."""
    http, registry = coordinator(tmp_path, keys.generate_key())
    real, squatter = keys.generate_key(), keys.generate_key()
    assert http.post("/join", json=_join("volunteer-1", squatter)).status_code == 200
    assert http.post("/join", json=_join("volunteer-1", real)).status_code == 200
    ids = {worker_id("volunteer-1", keys.public_hex(k)) for k in (real, squatter)}
    assert set(registry.workers) == ids and len(ids) == 2
    for name in (".", "..", "a/b", "../x", "-x", "x" * 42, ""):
        assert http.post("/join", json=_join(name, real)).status_code == 422, name
    assert set(registry.workers) == ids


def test_joins_are_rate_limited_and_the_registry_is_written_only_when_it_changes(tmp_path):
    http, registry = coordinator(tmp_path, keys.generate_key(),
                                 admission=AdmissionConfig(new_workers_per_hour=3, joins_per_host_per_minute=30))
    key = keys.generate_key()
    assert http.post("/join", json=_join("a", key)).status_code == 200
    written = (tmp_path / "w.json").stat().st_ino
    for _ in range(20):  # rejoins of a known key change nothing: no write
        assert http.post("/join", json=_join("a", key)).status_code == 200
    assert (tmp_path / "w.json").stat().st_ino == written
    statuses = [http.post("/join", json=_join(f"n{i}", keys.generate_key())).status_code for i in range(4)]
    assert statuses == [200, 200, 429, 429]  # 3 new identities an hour, "a" included
    busy = [http.post("/join", json=_join("a", key)).status_code for _ in range(15)]
    assert busy.count(429) == 10  # 30 joins a minute from one address: 25 made before, 5 left
    assert len(registry.workers) == 3


def test_a_request_body_over_the_limit_is_refused_unread(tmp_path):
    """Attack 7 of issue 30 on the other routes: /join (no token needed to send one), /heartbeat, /assign and /grant
    parsed any body whole. Headers promising 256 MiB are answered with no body byte sent (nothing waited for it); a
    chunked body is answered once past the limit, unfinished (before, the route waited for its end)."""
    import socket

    from composer_prime.coordinator.limits import MAX_MESSAGE_BYTES

    http, _ = coordinator(tmp_path, keys.generate_key())
    with ServedApp(http.app) as served:
        def status(head: str, body: bytes = b"") -> bytes:
            with socket.create_connection(("127.0.0.1", served.port), timeout=30) as sock:
                sock.sendall(f"{head}\r\nHost: x\r\nContent-Type: application/json\r\n\r\n".encode() + body)
                return sock.recv(4096).split(b"\r\n", 1)[0]

        for route in ("/join", "/heartbeat", "/assign", "/grant"):
            assert status(f"POST {route} HTTP/1.1\r\nContent-Length: {2**28}") == b"HTTP/1.1 413 Request Entity Too Large"
        over = MAX_MESSAGE_BYTES + 1024
        chunked = b"%x\r\n%s\r\n" % (over, b" " * over)  # no closing chunk: the body never ends
        assert status("POST /join HTTP/1.1\r\nTransfer-Encoding: chunked", chunked) == (
            b"HTTP/1.1 413 Request Entity Too Large")
        # A message within the limit is read as before.
        assert httpx.post(f"{served.url}/join", json=_join("w1", keys.generate_key())).status_code == 200


def test_volunteer_tokens_each_admit_one_key_so_a_banned_volunteer_cannot_come_back(tmp_path):
    """Issue 30: with one shared join token a banned worker rejoined under a new id. Tokens given one per volunteer
    (their digests in a file the run reads at every join) each admit the first key that joins with them."""
    import hashlib

    tokens = {name: secrets.token_hex(16) for name in ("ann", "bob")}
    digests = tmp_path / "volunteers.sha256"
    digests.write_text("".join(hashlib.sha256(t.encode()).hexdigest() + "\n" for t in tokens.values()))
    run_key = keys.generate_key()
    registry = WorkerRegistry(tmp_path / "w.json")
    assigner = Assigner(run_key, 50, 3, 2, 1.0, 1.0, 8, AssignmentsConfig())
    http = TestClient(create_coordinator_app(registry, digests, run_key, lambda: INFO, lambda: 4,
                                             CoordinatorUploads(Store(str(tmp_path / "store"))), assigner,
                                             UploadsConfig()))
    ann, other = keys.generate_key(), keys.generate_key()
    assert http.post("/join", json={**_join("ann", ann), "join_token": tokens["ann"]}).status_code == 200
    assert http.post("/join", json={**_join("ann", ann), "join_token": tokens["ann"]}).status_code == 200  # rejoin
    assert http.post("/join", json={**_join("ann", ann), "join_token": "token-123"}).status_code == 403
    registry.ban(worker_id("ann", keys.public_hex(ann)), "test")
    refused = http.post("/join", json={**_join("ann2", other), "join_token": tokens["ann"]})
    assert refused.status_code == 403 and "another key" in refused.json()["detail"]
    assert http.post("/join", json={**_join("bob", other), "join_token": tokens["bob"]}).status_code == 200
    digests.write_text(digests.read_text() + hashlib.sha256(b"carol-token").hexdigest() + "\n")  # one more, live
    assert http.post("/join", json={**_join("carol", keys.generate_key()), "join_token": "carol-token"}).status_code == 200
    assert len(registry.workers) == 3


def test_assignments_are_signed_limited_and_bound_to_their_worker(tmp_path):
    run_key = keys.generate_key()
    announced = [-1]
    http, registry = coordinator(tmp_path, run_key, assignments=AssignmentsConfig(max_open=2, per_hour=3),
                                 announced=lambda: announced[0])
    key, other = keys.generate_key(), keys.generate_key()
    http.post("/join", json=_join("w", key)).raise_for_status()
    wid = worker_id("w", keys.public_hex(key))

    def ask(signer=key):
        t = time.time()
        return http.post("/assign", json={"worker_id": wid, "time": t, "signature": signer.sign(assign_message(wid, t)).hex()})

    assert ask(other).status_code == 403
    assert ask().status_code == 503  # no version announced yet: nothing its batch could be sampled with
    announced[0] = 4
    first = open_assignment(ask().content, run_key.public_key())
    assert first.worker_id == wid and len(first.example_ids) == 3 == len(set(first.example_ids))
    assert (first.samples_per_prompt, first.temperature, first.max_tokens) == (2, 1.0, 8) and 0 <= first.key < 2**64
    assert first.weight_version == 4  # the oldest version its batch may claim (verify/verifier.py: wrong-version)
    second = open_assignment(ask().content, run_key.public_key())
    assert second.key != first.key and second.assignment_id != first.assignment_id
    assert ask().status_code == 429  # two being sampled already
    # An uploaded batch no longer holds a slot, verified or not: a worker never waits on the verifier.
    grant = signed_grant_request(key, wid, first.assignment_id, b"batch").model_dump()
    assert http.post("/grant", json=grant).status_code == 200 and first.assignment_id in registry.workers[wid].assignments
    assert ask().status_code == 200 and ask().status_code == 429  # third this hour, then over the hourly count
    with pytest.raises(Exception):
        open_assignment(msgspec.msgpack.encode({"payload": b"x", "signature": b"y"}), run_key.public_key())


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


def altering_proxy(target: str) -> ServedApp:
    """Someone between a worker and the run on plain HTTP: it forwards every request and, in the join answer,
    swaps the broadcast servers for its own (the run's signature kept)."""
    app = FastAPI()

    @app.api_route("/{path:path}", methods=["GET", "POST", "PUT"])
    async def forward(path: str, request: Request) -> Response:
        async with httpx.AsyncClient() as http:
            answer = await http.request(request.method, f"{target}/{path}", content=await request.body(),
                                        headers={"content-type": request.headers.get("content-type", "")})
        body = answer.content
        if path == "join" and answer.status_code == 200:
            signed = answer.json()
            signed["body"] = signed["body"].replace('"broadcast_servers":[]', '"broadcast_servers":["http://evil"]')
            body = json.dumps(signed).encode()
        return Response(body, status_code=answer.status_code, media_type=answer.headers.get("content-type"))

    return ServedApp(app)


def test_a_worker_trusts_only_answers_its_run_key_signed_and_refuses_an_engine_it_cannot_prove(tmp_path):
    """Issue 30: join and heartbeat answers were unsigned, so whoever could change them on plain HTTP chose the run
    key and broadcast servers a worker trusted. The real worker, in process, against the real coordinator."""
    run_key = keys.generate_key()
    http, _ = coordinator(tmp_path, run_key)
    app = http.app

    def worker(url: str, **overrides) -> Worker:
        config = {"run_url": url, "join_token": "token-123", "name": "vol", "state_dir": tmp_path / "state",
                  "run_public_key": keys.public_hex(run_key), "retry_s": 0.05}
        return Worker(WorkerConfig(**(config | overrides)))

    with ServedApp(app) as served, altering_proxy(served.url) as proxy:
        with pytest.raises(UserError, match="must not trust: a JoinResponse not signed by the run's key"):
            asyncio.run(worker(proxy.url).join())
        with pytest.raises(UserError, match="must not trust"):  # the run's real answer, but another key configured
            asyncio.run(worker(served.url, run_public_key=keys.public_hex(keys.generate_key())).join())
        assert asyncio.run(worker(served.url).join()).broadcast_servers == []
        with pytest.raises(UserError, match="use backend.type = 'transformers'"):  # before it loads anything
            asyncio.run(worker(served.url, backend={"type": "vllm"}).run())
