"""Volunteers upload through grants, holding no store credential (coordinator/grants.py), on a real seaweedfs with
one identity per run role (broadcast/store_roles.py): every attack a volunteer has on the store is refused."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from fastapi.testclient import TestClient
from store_attacks import Target, attack_store

from composer_prime import keys
from local_s3 import start_local_s3
from composer_prime.broadcast.manifest import delete_version
from composer_prime.configs.shared import StoreConfig
from composer_prime.store import Store
from composer_prime.errors import UserError
from composer_prime.configs.coordinator import UploadsConfig
from composer_prime.utils.serve import ServedApp
from composer_prime.verify.worker_registry import WorkerRegistry
from composer_prime.configs.coordinator import AssignmentsConfig
from composer_prime.coordinator.app import create_coordinator_app
from composer_prime.coordinator.assign import Assigner
from composer_prime.coordinator.grants import (CoordinatorUploads, GrantRefused, PresignedPuts, signed_grant_request,
                                               upload_batch)
from composer_prime.coordinator.protocol import RunInfo, rollout_key, worker_id
from composer_prime.verify.rollout_batch import open_assignment

INFO = RunInfo(run_id="r", broadcast_servers=[], upload_max_bytes=4096, env_id="e", temperature=1.0, max_tokens=8,
               samples_per_prompt=1, prompts_per_batch=1, current_version=0)
RUN_KEY = keys.generate_key()


def app_for(registry, granter, uploads):
    assigner = Assigner(RUN_KEY, 10, 1, 1, 1.0, 1.0, 8, AssignmentsConfig(max_open=10))
    return create_coordinator_app(registry, "token-123", RUN_KEY, lambda: INFO, lambda: 0, granter, assigner, uploads)


def registered(registry, name: str):
    key = keys.generate_key()
    wid = worker_id(name, keys.public_hex(key))
    registry.register(wid, keys.public_hex(key))
    return wid, key


def assigned(registry, wid: str) -> str:
    """An open assignment of `wid`: the only batch id it is granted uploads for."""
    assigner = Assigner(RUN_KEY, 10, 1, 1, 1.0, 1.0, 8, AssignmentsConfig(max_open=10))
    return open_assignment(assigner.issue(registry, wid, 0), RUN_KEY.public_key()).assignment_id
ROLES = ("orchestrator", "coordinator", "publisher", "origin", "site_b")


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    server = start_local_s3(tmp_path_factory.mktemp("s3"), bucket="run", roles=ROLES)
    try:
        yield server
    finally:
        server.stop()


def _upload(run_url: str, key, worker_id: str, batch_id: str, data: bytes) -> None:
    async def go():
        async with httpx.AsyncClient(base_url=run_url, timeout=30) as http:
            await upload_batch(http, key, worker_id, batch_id, data)

    asyncio.run(go())


def _role_store(s3, role: str, monkeypatch, url: str = "s3://run") -> Store:
    for name, value in s3.role_env(role).items():
        monkeypatch.setenv(name, value)
    return Store(url, s3.endpoint_url, role=role)


def test_each_role_can_do_its_part_and_nothing_else(s3, monkeypatch):
    admin = Store("s3://run", s3.endpoint_url, key=s3.access_key, secret=s3.secret_key)
    admin.write_bytes("rollouts/w/b.msgpack", b"batch")
    site, publisher = _role_store(s3, "site_b", monkeypatch), _role_store(s3, "publisher", monkeypatch)
    versions = _role_store(s3, "publisher", monkeypatch, "s3://run/broadcasts")
    orchestrator, origin = _role_store(s3, "orchestrator", monkeypatch), _role_store(s3, "origin", monkeypatch)
    orchestrator.write_bytes("steps/step_1/COMPLETE", b"seal")
    publisher.write_bytes("broadcasts/step_0/shards/0", b"shard")
    assert site.read_bytes("steps/step_1/COMPLETE") == b"seal" and site.exists("steps/step_1/COMPLETE")
    assert origin.read_bytes("broadcasts/step_0/shards/0") == b"shard"
    for store, key in ((site, "steps/step_2/COMPLETE"), (origin, "broadcasts/step_1/manifest.json"),
                       (publisher, "steps/step_2/COMPLETE"), (orchestrator, "broadcasts/step_1/manifest.json"),
                       (orchestrator, "rollouts/w/b.msgpack")):
        with pytest.raises(PermissionError):
            store.write_bytes(key, b"forged")
    for store, key in ((site, "rollouts/w/b.msgpack"), (origin, "steps/step_1/COMPLETE"),
                       (publisher, "rollouts/w/b.msgpack")):
        with pytest.raises(PermissionError):
            store.read_bytes(key)
    delete_version(versions, 0)  # the publisher prunes old versions
    assert not admin.exists("broadcasts/step_0/shards/0")


def test_a_volunteer_uploads_its_own_batches_and_every_attack_on_the_store_is_refused(s3, monkeypatch, tmp_path):
    for name, value in s3.role_env("coordinator").items():
        monkeypatch.setenv(name, value)
    admin = Store("s3://run", s3.endpoint_url, key=s3.access_key, secret=s3.secret_key)
    admin.write_bytes("broadcasts/step_0/shards/0", b"shard")
    registry = WorkerRegistry(tmp_path / "registry.json")
    (honest, hkey), (mallory, mkey) = registered(registry, "honest"), registered(registry, "mallory")
    uploads = UploadsConfig(max_bytes=4096, grant_ttl_s=2, grants_per_hour=100)
    granter = PresignedPuts(StoreConfig(url="s3://run", endpoint_url=s3.endpoint_url, role="coordinator"))
    with ServedApp(app_for(registry, granter, uploads)) as served:
        batch = assigned(registry, honest)
        _upload(served.url, hkey, honest, batch, b"honest batch")
        assert admin.read_bytes(rollout_key(honest, batch)) == b"honest batch"
        before = {k: admin.read_bytes(k) for k in (rollout_key(honest, batch), "broadcasts/step_0/shards/0")}
        counts = attack_store(Target(run_url=served.url, store_url=f"{s3.endpoint_url}/run", worker_id=mallory,
                                     key=mkey, victim_key=rollout_key(honest, batch),
                                     shard_key="broadcasts/step_0/shards/0", step=7, grant_ttl_s=2, max_bytes=4096))
        with pytest.raises(UserError, match="over the run's limit of 4096"):  # the worker's own side of the cap
            _upload(served.url, hkey, honest, assigned(registry, honest), b"x" * 5000)
        with pytest.raises(GrantRefused, match="no open assignment"):  # a batch id the run never assigned
            _upload(served.url, hkey, honest, "0" * 32, b"x")
    assert set(counts) == {"forged step + marker", "overwrite another worker's batch", "delete a weight shard",
                           "upload outside its prefix", "exceed its size limit", "replay an expired grant"}
    assert all(c["attempts"] > 0 and c["refused"] == c["attempts"] for c in counts.values()), counts
    admin.fs.invalidate_cache()
    assert {k: admin.read_bytes(k) for k in before} == before
    assert "step_7" not in admin.list("steps") and set(admin.list("broadcasts/step_0/shards")) == {"0"}
    # "w" is the role test's batch, there when that test ran first.
    assert admin.list(f"rollouts/{mallory}") and set(admin.list("rollouts")) - {"w"} == {honest, mallory}
    assert admin.list(f"rollouts/{honest}") == [f"{batch}.msgpack"]
    # The coordinator's role deletes what it processed (verify/inbox.py), and nothing outside rollouts/.
    coordinator = Store("s3://run", s3.endpoint_url, role="coordinator")
    coordinator.delete(rollout_key(honest, batch))
    with pytest.raises(PermissionError):
        coordinator.delete("broadcasts/step_0/shards/0")
    admin.fs.invalidate_cache()
    assert not admin.exists(rollout_key(honest, batch)) and admin.exists("broadcasts/step_0/shards/0")


def test_grants_are_counted_per_worker_and_refused_to_strangers(tmp_path):
    registry = WorkerRegistry()
    wid, key = registered(registry, "w1")
    granter = CoordinatorUploads(Store(str(tmp_path / "store")))
    http = TestClient(app_for(registry, granter, UploadsConfig(max_bytes=64, grant_ttl_s=3, grants_per_hour=2)))
    batch, other = assigned(registry, wid), assigned(registry, wid)
    request = signed_grant_request(key, wid, batch, b"batch").model_dump()
    assert http.post("/grant", json={**request, "signature": "00" * 64}).status_code == 403
    assert http.post("/grant", json={**request, "signature": "zz"}).status_code == 422  # not a 500
    stranger = signed_grant_request(keys.generate_key(), "w2-" + "0" * 20, batch, b"batch").model_dump()
    assert http.post("/grant", json=stranger).status_code == 403
    assert http.post("/grant", json={**request, "time": request["time"] - 3600}).status_code == 403  # signed time
    grant = http.post("/grant", json=request).json()
    # Through the coordinator (a plain directory store): the bytes granted land, anything else is refused.
    assert http.put(grant["url"], content=b"other", headers=grant["headers"]).status_code == 400
    assert http.put(grant["url"].replace(batch, other), content=b"batch").status_code == 403
    assert http.put(grant["url"].replace(f"/{wid}/", "/w2/"), content=b"batch").status_code == 403
    assert http.put(grant["url"], content=b"batch", headers=grant["headers"]).json() == {"stored": True}
    assert (tmp_path / "store" / "rollouts" / wid / f"{batch}.msgpack").read_bytes() == b"batch"
    again = signed_grant_request(key, wid, other, b"batch").model_dump()
    assert http.post("/grant", json=again).status_code == 200  # the second grant this hour
    assert http.post("/grant", json=again).status_code == 429  # the third is over the count
    time.sleep(max(0.0, grant["expires_at"] - time.time()) + 1.1)
    assert http.put(grant["url"], content=b"batch", headers=grant["headers"]).status_code == 403  # expired
    registry.ban(wid, "test")
    assert http.post("/grant", json=request).status_code == 403


def test_an_upload_is_refused_before_its_body_is_read(tmp_path):
    """Issue 30: the plain-directory /upload read the whole body before checking the token (256 MiB with a bogus
    token took the server from 66 to 578 MB). Here the headers promise 256 MiB and no body byte is sent: the
    answer must come anyway, so nothing waited for (or read) the body."""
    import socket

    registry = WorkerRegistry()
    wid, key = registered(registry, "w1")
    granter = CoordinatorUploads(Store(str(tmp_path / "store")))
    with ServedApp(app_for(registry, granter, UploadsConfig(max_bytes=2**30))) as served:
        batch = assigned(registry, wid)
        grant = httpx.post(f"{served.url}/grant", json=signed_grant_request(key, wid, batch, b"b" * 2**28).model_dump())
        url = grant.json()["url"]
        # A bogus token with the granted length; the real grant with a lying length. (The length is not read off the
        # URL: a real token can begin with "0", and then the server rightly waits for the granted body.)
        for path, length in ((url.replace("token=", "token=0"), 2**28), (url, 2**28 + 1)):
            with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
                sock.sendall(f"PUT {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n".encode())
                status = sock.recv(4096).split(b"\r\n", 1)[0]
            assert status in (b"HTTP/1.1 403 Forbidden", b"HTTP/1.1 400 Bad Request"), status
