"""The run side of volunteer membership: admit workers, register their keys, take heartbeats.

POST /join       join token + worker id + public key -> what the worker needs to take part
POST /heartbeat  signed liveness; answers the current weight version and whether the worker is banned
GET  /workers    registry summary (per-worker accept/reject counts, bans, last heartbeat)
POST /grant      signed request for one batch upload under the worker's prefix (coordinator/grants.py)

A worker id is bound to the first key it joined with (WorkerRegistry), so a restarted worker keeps
its identity by keeping its key file, and nobody else can take the id over.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from collections.abc import Callable

from fastapi import FastAPI, HTTPException

from composer_prime import keys
from composer_prime.configs.coordinator import UploadsConfig
from composer_prime.verify.worker_registry import WorkerRegistry
from composer_prime.coordinator.grants import Granter, add_grant_routes
from composer_prime.coordinator.protocol import (MAX_CLOCK_SKEW_S, PROTOCOL_VERSION, Heartbeat, HeartbeatResponse,
                                                 JoinRequest, JoinResponse, heartbeat_message)


def create_coordinator_app(registry: WorkerRegistry, join_token: str, run_info: Callable[[], JoinResponse],
                           current_version: Callable[[], int], granter: Granter, uploads: UploadsConfig) -> FastAPI:
    """`run_info()` gives the join answer (current version included); `current_version()` the newest version
    the workers can fetch; `granter` signs their uploads within `uploads`' limits."""
    app = FastAPI(title="composer-prime run coordinator")
    add_grant_routes(app, registry, granter, uploads)
    last_seen: dict[str, dict] = {}

    @app.post("/join")
    async def join(request: JoinRequest) -> JoinResponse:
        if request.protocol_version != PROTOCOL_VERSION:
            raise HTTPException(400, f"coordinator speaks protocol v{PROTOCOL_VERSION}")
        if not hmac.compare_digest(request.join_token.encode(), join_token.encode()):
            raise HTTPException(403, "bad join token")
        try:
            registry.register(request.worker_id, request.public_key)
        except ValueError as exc:
            raise HTTPException(409, str(exc)) from None
        if registry.workers[request.worker_id].banned:
            raise HTTPException(403, "worker is banned")
        return await asyncio.to_thread(run_info)

    @app.post("/heartbeat")
    async def heartbeat(beat: Heartbeat) -> HeartbeatResponse:
        public = registry.public_key(beat.worker_id)
        message = heartbeat_message(beat.worker_id, beat.time, beat.weight_version, beat.batches_uploaded)
        if public is None or not keys.verify(public, bytes.fromhex(beat.signature), message):
            raise HTTPException(403, "unknown worker or bad heartbeat signature")
        if abs(time.time() - beat.time) > MAX_CLOCK_SKEW_S:
            raise HTTPException(400, "heartbeat time too far from the coordinator's clock (replayed?)")
        last_seen[beat.worker_id] = {"time": beat.time, "weight_version": beat.weight_version,
                                     "batches_uploaded": beat.batches_uploaded}
        announced = await asyncio.to_thread(current_version)  # may ask the broadcast servers (coordinator/announce.py)
        return HeartbeatResponse(current_version=announced, banned=registry.workers[beat.worker_id].banned)

    @app.get("/workers")
    async def workers() -> dict:
        summary = registry.summary()
        return {w: {**s, "last_heartbeat": last_seen.get(w)} for w, s in summary.items()}

    return app
