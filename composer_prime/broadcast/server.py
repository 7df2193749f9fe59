"""Origin and relay HTTP servers for broadcast versions.

Routes (both roles):
  GET /health                      role and versions held
  GET /versions                    complete versions this server can serve, ascending
  GET /versions/{N}/manifest       the signed manifest bytes
  GET /versions/{N}/shards/{i}     shard bytes; honours `Range: bytes=a-[b]` (206) so clients resume
  GET /stats                       bytes served and fetched, for tests and benchmarks

The origin serves a Store (the trainer's publish target). A relay has no store of its own: it
pulls manifests and shards from its upstreams (origin or other relays) on first request, checks
the manifest signature and each shard's sha256 before caching, and serves its cache afterwards.
Clients check every shard again: a relay is as untrusted as any other server.

`egress_bytes_per_s` throttles what a server sends, all connections together, to emulate a site's
uplink on one machine (tests and benchmarks/broadcast.py); 0 means unthrottled.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import time
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from fastapi import FastAPI, HTTPException, Request, Response
from fastapi.responses import StreamingResponse

from composer_prime.broadcast.manifest import (BroadcastError, SignedManifest, decode_verified, encode, manifest_key,
                                               parse_versions, shard_key, stored_versions)
from composer_prime.store import Store
from composer_prime.utils.fs import atomic_write_bytes

_RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")
_SEND_CHUNK = 64 * 1024


class Egress:
    """A shared token bucket: sends are spaced so the server's total rate stays at `rate` bytes/s."""

    def __init__(self, rate: float):
        self.rate = rate
        self._next = 0.0
        self._lock = asyncio.Lock()

    async def consume(self, n: int) -> None:
        if self.rate <= 0:
            return
        async with self._lock:
            now = time.monotonic()
            self._next = max(now, self._next) + n / self.rate
            delay = self._next - now  # earlier sends queued ahead of this chunk, then the chunk itself
        await asyncio.sleep(delay)


@dataclass
class Stats:
    bytes_served: int = 0
    shards_served: int = 0
    bytes_fetched_upstream: int = 0
    upstream_rejects: int = 0


def _serve_bytes(data: bytes, request: Request, egress: Egress, stats: Stats) -> Response:
    start, end, status, headers = 0, len(data), 200, {"Accept-Ranges": "bytes"}
    if header := request.headers.get("range"):
        match = _RANGE.match(header.strip())
        if not match or int(match.group(1)) > len(data):
            raise HTTPException(416, f"unsatisfiable range {header!r} for {len(data)} bytes")
        start = int(match.group(1))
        end = min(len(data), int(match.group(2)) + 1) if match.group(2) else len(data)
        status = 206
        headers["Content-Range"] = f"bytes {start}-{max(start, end - 1)}/{len(data)}"
    body = memoryview(data)[start:end]
    headers["Content-Length"] = str(len(body))
    stats.shards_served += 1

    async def chunks():
        for offset in range(0, len(body), _SEND_CHUNK):
            chunk = body[offset:offset + _SEND_CHUNK]
            await egress.consume(len(chunk))
            stats.bytes_served += len(chunk)
            yield bytes(chunk)

    return StreamingResponse(chunks(), status_code=status, headers=headers, media_type="application/octet-stream")


def _common_routes(app: FastAPI, role: str, versions, stats: Stats) -> None:
    @app.get("/health")
    async def health() -> dict:
        return {"status": "ok", "role": role, "versions": await versions()}

    @app.get("/versions")
    async def list_versions() -> list[int]:
        return await versions()

    @app.get("/stats")
    async def get_stats() -> dict[str, int]:
        return asdict(stats)


def create_origin_app(store: Store, egress_bytes_per_s: float = 0.0) -> FastAPI:
    """Serve the versions of `store` as published (the origin does not re-verify its own store)."""
    app = FastAPI(title="composer-prime broadcast origin")
    stats, egress = Stats(), Egress(egress_bytes_per_s)

    async def versions() -> list[int]:
        return await asyncio.to_thread(stored_versions, store)

    _common_routes(app, "origin", versions, stats)

    async def read(key: str) -> bytes:
        try:
            return await asyncio.to_thread(store.read_bytes, key)
        except FileNotFoundError:
            raise HTTPException(404, f"{key} not found") from None

    @app.get("/versions/{version}/manifest")
    async def manifest(version: int) -> Response:
        return Response(await read(manifest_key(version)), media_type="application/json")

    @app.get("/versions/{version}/shards/{index}")
    async def shard(version: int, index: int, request: Request) -> Response:
        return _serve_bytes(await read(shard_key(version, index)), request, egress, stats)

    return app


class _RelayCache:
    """Verified manifests and shards pulled from upstream, kept on local disk."""

    def __init__(self, upstreams: list[str], cache_dir: Path, public: Ed25519PublicKey, stats: Stats):
        self.upstreams = [u.rstrip("/") for u in upstreams]
        self.dir = Path(cache_dir)
        self.public = public
        self.stats = stats
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(60.0, connect=5.0))
        self.manifests: dict[int, SignedManifest] = {}
        self._locks: dict[tuple[int, int], asyncio.Lock] = {}

    async def upstream_versions(self) -> list[int]:
        found: set[int] = set()
        for upstream in self.upstreams:
            try:
                response = await self.http.get(f"{upstream}/versions")
                response.raise_for_status()
                found.update(parse_versions(response.content))
            except (httpx.HTTPError, BroadcastError):
                continue  # an unreachable upstream, or one answering nonsense, is skipped; another may answer
        cached = {int(p.name.split("_")[1]) for p in self.dir.glob("step_*") if (p / "manifest.json").is_file()}
        return sorted(found | cached)

    async def manifest(self, version: int) -> SignedManifest:
        if version in self.manifests:
            return self.manifests[version]
        path = self.dir / f"step_{version}" / "manifest.json"
        if path.is_file():
            manifest = decode_verified(path.read_bytes(), self.public, version)
        else:
            manifest = None
            for upstream in self.upstreams:
                try:
                    response = await self.http.get(f"{upstream}/versions/{version}/manifest")
                    response.raise_for_status()
                    manifest = decode_verified(response.content, self.public, version)
                    break
                except httpx.HTTPError:
                    continue
                except BroadcastError:
                    self.stats.upstream_rejects += 1
                    continue
            if manifest is None:
                raise HTTPException(404, f"no upstream has a valid manifest of version {version}")
            atomic_write_bytes(path, encode(manifest))
        self.manifests[version] = manifest
        return manifest

    async def shard(self, version: int, index: int) -> bytes:
        manifest = await self.manifest(version)
        if not 0 <= index < len(manifest.body.shards):
            raise HTTPException(404, f"version {version} has no shard {index}")
        expected = manifest.body.shards[index].sha256
        path = self.dir / f"step_{version}" / "shards" / str(index)
        # One upstream fetch per shard even when many clients ask for it at once.
        async with self._locks.setdefault((version, index), asyncio.Lock()):
            if path.is_file():
                return path.read_bytes()  # served as cached; clients verify (and so catch a corrupted cache)
            for upstream in self.upstreams:
                try:
                    response = await self.http.get(f"{upstream}/versions/{version}/shards/{index}")
                    response.raise_for_status()
                except httpx.HTTPError:
                    continue
                self.stats.bytes_fetched_upstream += len(response.content)
                if hashlib.sha256(response.content).hexdigest() != expected:
                    self.stats.upstream_rejects += 1
                    continue
                atomic_write_bytes(path, response.content)
                return response.content
        raise HTTPException(502, f"no upstream served a valid shard {index} of version {version}")


def create_relay_app(upstreams: list[str], cache_dir: Path, public: Ed25519PublicKey,
                     egress_bytes_per_s: float = 0.0) -> FastAPI:
    stats, egress = Stats(), Egress(egress_bytes_per_s)
    cache = _RelayCache(upstreams, cache_dir, public, stats)

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        yield
        await cache.http.aclose()

    app = FastAPI(title="composer-prime broadcast relay", lifespan=lifespan)
    _common_routes(app, "relay", cache.upstream_versions, stats)

    @app.get("/versions/{version}/manifest")
    async def manifest(version: int) -> Response:
        return Response(encode(await cache.manifest(version)), media_type="application/json")

    @app.get("/versions/{version}/shards/{index}")
    async def shard(version: int, index: int, request: Request) -> Response:
        return _serve_bytes(await cache.shard(version, index), request, egress, stats)

    return app
