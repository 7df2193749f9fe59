"""The run side of volunteer membership: admit workers, register their keys, take heartbeats, assign batches.

POST /join       join token + name + public key + nonce -> what the worker needs to take part (signed, run key)
POST /heartbeat  signed liveness; answers the current weight version and whether the worker is banned (signed)
POST /assign     signed request for the next batch to sample: examples, noise key, the announced version (assign.py)
GET  /workers    registry summary (per-worker accept/reject counts, bans, last heartbeat)
POST /grant      signed request for one batch upload under the worker's prefix (coordinator/grants.py)

A worker's id is its name plus its key's fingerprint (protocol.worker_id): a restarted worker keeps its
identity by keeping its key file, and nobody else can take the id over. A run admits by one shared token,
or by tokens given one per volunteer (`volunteer_tokens`: a file of their SHA-256 digests), each of which
admits the first key that joins with it and no other: a banned volunteer cannot come back under a new key.
Joins are rate-limited per client address and, for new identities, for the whole run; the registry is
written only when a join adds one. No route reads a body over its limit (coordinator/limits.py).
No route waits on a third party: the announced version is read from a value kept fresh in the background
(coordinator/announce.py).
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fastapi import FastAPI, HTTPException, Request, Response

from composer_prime import keys
from composer_prime.configs.coordinator import AdmissionConfig, UploadsConfig
from composer_prime.coordinator.assign import Assigner
from composer_prime.coordinator.grants import Granter, add_grant_routes
from composer_prime.coordinator.limits import MAX_MESSAGE_BYTES, BodyLimit, SlidingWindow
from composer_prime.coordinator.protocol import (MAX_CLOCK_SKEW_S, PROTOCOL_VERSION, AssignRequest, Heartbeat,
                                                 HeartbeatResponse, JoinRequest, JoinResponse, RunInfo, SignedAnswer,
                                                 assign_message, heartbeat_message, sign_answer, worker_id)
from composer_prime.verify.worker_registry import WorkerRegistry


def create_coordinator_app(registry: WorkerRegistry, join_token: str | Path, run_key: Ed25519PrivateKey,
                           run_info: Callable[[], RunInfo], current_version: Callable[[], int], granter: Granter,
                           assigner: Assigner, uploads: UploadsConfig, admission: AdmissionConfig = AdmissionConfig()
                           ) -> FastAPI:
    """`join_token`: the shared token, or the Path of the volunteer tokens' digests. `run_info()` gives the join
    answer's run part; `current_version()` the newest version the workers can fetch (it must not block);
    `granter` signs their uploads within `uploads`' limits; `run_key` signs every answer."""
    app = FastAPI(title="composer-prime run coordinator")
    # An upload's body is checked against its grant by the route itself (coordinator/grants.py).
    app.add_middleware(BodyLimit, max_bytes=lambda path: uploads.max_bytes if path.startswith("/upload/")
                       else MAX_MESSAGE_BYTES)
    add_grant_routes(app, registry, granter, uploads)
    last_seen: dict[str, dict] = {}
    joins_by_host = SlidingWindow(admission.joins_per_host_per_minute, window_s=60.0)
    new_workers = SlidingWindow(admission.new_workers_per_hour)
    limits = assigner.config
    assigned = SlidingWindow(limits.per_hour)

    def signed_in(public_hex: str, signature: str, message: bytes) -> bool:
        return keys.verify(keys.parse_public_key(public_hex), bytes.fromhex(signature), message)

    def worker_entry(wid: str, signature: str, message: bytes, at: float):
        entry = registry.workers.get(wid)
        if entry is None or not signed_in(entry.public_key, signature, message):
            raise HTTPException(403, "unknown worker or bad signature")
        if abs(time.time() - at) > MAX_CLOCK_SKEW_S:
            raise HTTPException(400, "request time too far from the coordinator's clock (replayed?)")
        return entry

    def admitted(token: str, wid: str) -> str:
        """The digest a worker's registration records (empty for a shared token); 403 unless the token admits `wid`."""
        if isinstance(join_token, str):
            if not hmac.compare_digest(token.encode(), join_token.encode()):
                raise HTTPException(403, "bad join token")
            return ""
        digest = hashlib.sha256(token.encode()).hexdigest()
        if digest not in join_token.read_text().split():
            raise HTTPException(403, "bad join token")
        if registry.token_holder(digest) not in (None, wid):
            raise HTTPException(403, "this volunteer's token already admitted another key")
        return digest

    @app.post("/join")
    async def join(request: JoinRequest, http: Request) -> SignedAnswer:
        if not joins_by_host.take(http.client.host if http.client else "?", time.monotonic()):
            raise HTTPException(429, f"more than {admission.joins_per_host_per_minute} joins from this address in a minute")
        if request.protocol_version != PROTOCOL_VERSION:
            raise HTTPException(400, f"coordinator speaks protocol v{PROTOCOL_VERSION}")
        wid = worker_id(request.name, request.public_key)
        token = admitted(request.join_token, wid)
        if wid not in registry.workers and not new_workers.take("new", time.monotonic()):
            raise HTTPException(429, f"the run admits at most {admission.new_workers_per_hour} new workers an hour")
        registry.register(wid, request.public_key, token)  # the id is the key's: no other key holds it
        if registry.workers[wid].banned:
            raise HTTPException(403, "worker is banned")
        answer = JoinResponse(**run_info().model_dump(), worker_id=wid, nonce=request.nonce)
        return sign_answer(run_key, answer)

    @app.post("/heartbeat")
    async def heartbeat(beat: Heartbeat) -> SignedAnswer:
        message = heartbeat_message(beat.worker_id, beat.time, beat.weight_version, beat.batches_uploaded)
        entry = worker_entry(beat.worker_id, beat.signature, message, beat.time)
        last_seen[beat.worker_id] = {"time": beat.time, "weight_version": beat.weight_version,
                                     "batches_uploaded": beat.batches_uploaded}
        return sign_answer(run_key, HeartbeatResponse(worker_id=beat.worker_id, time=beat.time,
                                                      current_version=current_version(), banned=entry.banned))

    @app.post("/assign")
    async def assign(request: AssignRequest) -> Response:
        entry = worker_entry(request.worker_id, request.signature, assign_message(request.worker_id, request.time),
                             request.time)
        if entry.banned:
            raise HTTPException(403, "worker is banned")
        version = current_version()
        if version < 0:  # no broadcast server lists a version now: nothing a batch could be sampled with
            raise HTTPException(503, "no weight version is announced yet; ask again shortly")
        if registry.sampling(request.worker_id, time.time()) >= limits.max_open:
            raise HTTPException(429, f"a worker samples at most {limits.max_open} assignments at once")
        if not assigned.take(request.worker_id, time.monotonic()):
            raise HTTPException(429, f"more than {limits.per_hour} assignments in an hour")
        return Response(assigner.issue(registry, request.worker_id, version), media_type="application/msgpack")

    @app.get("/workers")
    async def workers() -> dict:
        summary = registry.summary()
        return {w: {**s, "last_heartbeat": last_seen.get(w)} for w, s in summary.items()}

    return app
