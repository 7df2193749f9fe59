"""Upload grants: a volunteer holds no store credential; the coordinator grants it one upload at a time.

A registered worker asks `POST /grant` for one batch (its id, size and MD5, signed with its key), and
gets a URL it can PUT exactly those bytes to, under its own prefix `rollouts/<worker_id>/`, for
`grant_ttl_s` seconds. The batch id must be one of its open assignments (coordinator/assign.py): no
upload without an assignment, none after it expired. What enforces each limit:

  S3-compatible stores (`PresignedPuts`): a SigV4 presigned PUT made with the coordinator's own
    credential, Content-Length and Content-MD5 among its signed headers. The store itself refuses
    another key or prefix, another method (GET, DELETE), other bytes or another size, and a replay
    after expiry; the coordinator's credential covers `rollouts/` only (infra/README.md).
  Plain directories (`CoordinatorUploads`): the worker PUTs to the coordinator, which checks an HMAC
    over the same fields (a secret of this process) and the declared length before it reads a byte of
    the body, then reads at most the granted size, and writes the store itself.
  The coordinator enforces the rest: the size cap (`max_bytes`, checked before a grant is signed) and
  the count (`grants_per_hour` per worker); a banned or unknown worker gets none.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
import os
import time
from typing import Protocol
from urllib.parse import urlencode

import httpx
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fastapi import FastAPI, HTTPException, Request
from pydantic import BaseModel, Field

from composer_prime import keys
from composer_prime.configs.shared import StoreConfig
from composer_prime.store import Store, storage_options
from composer_prime.errors import UserError
from composer_prime.configs.coordinator import UploadsConfig
from composer_prime.verify.worker_registry import WorkerRegistry
from composer_prime.coordinator.limits import SlidingWindow
from composer_prime.coordinator.protocol import HEX_SIGNATURE, MAX_CLOCK_SKEW_S, WORKER_ID, rollout_key

_BATCH_ID = r"^[0-9a-f]{32}$"  # an assignment id
_MD5_B64 = r"^[A-Za-z0-9+/]{22}==$"


class GrantRequest(BaseModel):
    worker_id: str = Field(pattern=WORKER_ID)
    batch_id: str = Field(pattern=_BATCH_ID)
    size: int = Field(ge=1, description="Exact byte count of the batch.")
    md5: str = Field(pattern=_MD5_B64, description="Base64 MD5 of the batch (the Content-MD5 header).")
    time: float
    signature: str = Field(pattern=HEX_SIGNATURE,
                           description="Ed25519 over `grant_message(...)`, hex: only the worker gets its grants.")


class UploadGrant(BaseModel):
    url: str = Field(description="Where to PUT the batch: a presigned store URL, or a path on the coordinator.")
    headers: dict[str, str] = Field(description="Headers the PUT must carry (signed into the URL).")
    expires_at: float


def content_md5(data: bytes) -> str:
    return base64.b64encode(hashlib.md5(data).digest()).decode()  # noqa: S324 - the store's integrity header


def grant_message(worker_id: str, batch_id: str, size: int, md5: str, at: float) -> bytes:
    return f"grant/{worker_id}/{batch_id}/{size}/{md5}/{at!r}".encode()


class Granter(Protocol):
    def issue(self, key: str, size: int, md5: str, ttl_s: int) -> UploadGrant: ...


class PresignedPuts:
    """Grants on an S3-compatible store, presigned with this process's credential for `config`."""

    def __init__(self, config: StoreConfig):
        import botocore.session  # only here: s3 runs only
        from botocore.config import Config

        self.bucket, _, prefix = config.url.removeprefix("s3://").partition("/")
        self.prefix = f"{prefix.strip('/')}/" if prefix.strip("/") else ""
        options = storage_options(config)
        self.client = botocore.session.get_session().create_client(
            "s3", endpoint_url=config.endpoint_url, aws_access_key_id=options.get("key"),
            aws_secret_access_key=options.get("secret"), region_name=os.environ.get("AWS_REGION", "us-east-1"),
            config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))

    def issue(self, key: str, size: int, md5: str, ttl_s: int) -> UploadGrant:
        params = {"Bucket": self.bucket, "Key": self.prefix + key, "ContentLength": size, "ContentMD5": md5}
        url = self.client.generate_presigned_url("put_object", Params=params, ExpiresIn=ttl_s)
        return UploadGrant(url=url, headers={"Content-MD5": md5}, expires_at=time.time() + ttl_s)


class CoordinatorUploads:
    """Grants on a plain directory: PUT /upload/<worker_id>/<batch_id> on the coordinator, which writes it."""

    def __init__(self, store: Store):
        self.store = store
        self.secret = os.urandom(32)  # grants die with this process; a worker's retry asks for a new one

    def _token(self, key: str, size: int, md5: str, expires: int) -> str:
        return hmac.new(self.secret, f"{key}|{size}|{md5}|{expires}".encode(), hashlib.sha256).hexdigest()

    def issue(self, key: str, size: int, md5: str, ttl_s: int) -> UploadGrant:
        expires = math.ceil(time.time() + ttl_s)  # int() would cut up to a second off the grant
        _, worker_id, name = key.split("/")
        query = urlencode({"size": size, "md5": md5, "expires": expires, "token": self._token(key, size, md5, expires)})
        return UploadGrant(url=f"/upload/{worker_id}/{name.removesuffix('.msgpack')}?{query}",
                           headers={"Content-MD5": md5}, expires_at=expires)

    def check(self, key: str, size: int, md5: str, expires: int, token: str) -> None:
        """Refuse a PUT that no grant of this process allows: before a byte of its body is read."""
        if not hmac.compare_digest(token, self._token(key, size, md5, expires)):
            raise HTTPException(403, "not a grant for this key, size and digest")
        if time.time() > expires:
            raise HTTPException(403, "grant expired")

    def accept(self, key: str, size: int, md5: str, data: bytes) -> None:
        if len(data) != size or content_md5(data) != md5:
            raise HTTPException(400, "body is not the size and digest granted")
        self.store.write_bytes(key, data)


def make_granter(config: StoreConfig) -> Granter:
    return PresignedPuts(config) if config.url.startswith("s3://") else CoordinatorUploads(Store.from_config(config))


def add_grant_routes(app: FastAPI, registry: WorkerRegistry, granter: Granter, config: UploadsConfig) -> None:
    book = SlidingWindow(config.grants_per_hour)

    @app.post("/grant")
    async def grant(request: GrantRequest) -> UploadGrant:
        public = registry.public_key(request.worker_id)
        message = grant_message(request.worker_id, request.batch_id, request.size, request.md5, request.time)
        if public is None or not keys.verify(public, bytes.fromhex(request.signature), message):
            raise HTTPException(403, "unknown worker or bad grant signature")
        if registry.workers[request.worker_id].banned:
            raise HTTPException(403, "worker is banned")
        if abs(time.time() - request.time) > MAX_CLOCK_SKEW_S:
            raise HTTPException(400, "grant request time too far from the coordinator's clock (replayed?)")
        if request.size > config.max_bytes:
            raise HTTPException(413, f"batch of {request.size} bytes is over the run's limit of {config.max_bytes}")
        if not registry.is_open(request.worker_id, request.batch_id, time.time()):
            raise HTTPException(403, "no open assignment of this worker has this id (expired, answered or never issued)")
        if not book.take(request.worker_id, time.monotonic()):
            raise HTTPException(429, f"more than {config.grants_per_hour} upload grants in an hour")
        registry.mark_granted(request.worker_id, request.batch_id)
        return granter.issue(rollout_key(request.worker_id, request.batch_id), request.size, request.md5,
                             config.grant_ttl_s)

    if isinstance(granter, CoordinatorUploads):
        @app.put("/upload/{worker_id}/{batch_id}")
        async def upload(worker_id: str, batch_id: str, size: int, md5: str, expires: int, token: str,
                         request: Request) -> dict:
            # Token, expiry and length before the body: nobody makes this process read what no grant allows.
            key = rollout_key(worker_id, batch_id)
            granter.check(key, size, md5, expires, token)
            if request.headers.get("content-length") != str(size):
                raise HTTPException(400, "body is not the size granted")
            body = bytearray()
            async for chunk in request.stream():
                body += chunk
                if len(body) > size:
                    raise HTTPException(400, "body is longer than granted")
            granter.accept(key, size, md5, bytes(body))
            return {"stored": True}


def signed_grant_request(key: Ed25519PrivateKey, worker_id: str, batch_id: str, data: bytes) -> GrantRequest:
    md5, now = content_md5(data), time.time()
    signature = key.sign(grant_message(worker_id, batch_id, len(data), md5, now)).hex()
    return GrantRequest(worker_id=worker_id, batch_id=batch_id, size=len(data), md5=md5, time=now, signature=signature)


class GrantRefused(Exception):
    """The run grants no upload for this batch, now or later (its assignment was answered or expired, or the
    worker is banned): retrying cannot help."""


async def upload_batch(http: httpx.AsyncClient, key: Ed25519PrivateKey, worker_id: str, batch_id: str,
                       data: bytes) -> None:
    """Worker side: a grant for this batch from the coordinator (`http`), then the PUT it allows. Any failure
    raises; the caller's retry asks for a fresh grant (an expired one is refused by the store)."""
    response = await http.post("/grant", json=signed_grant_request(key, worker_id, batch_id, data).model_dump())
    if response.status_code == 413:  # this batch will never fit
        raise UserError(f"run refused batch {batch_id}: {response.json().get('detail')}")
    if response.status_code == 403:
        raise GrantRefused(f"run refused to grant batch {batch_id}: {response.json().get('detail')}")
    response.raise_for_status()
    grant = UploadGrant.model_validate(response.json())
    put = await http.put(grant.url, content=data, headers=grant.headers)  # a store URL is absolute
    put.raise_for_status()
