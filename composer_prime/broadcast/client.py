"""Fetch a broadcast version from several servers (or straight from a store) and verify it.

- The manifest is taken from the first source whose copy verifies with the run's public key.
- Shards download in parallel threads; shard i starts at source i mod n, so the load spreads.
- A shard arrives in `<dest>/.partial_step_N/<i>.part`; a broken connection leaves the part file,
  and the next attempt (same run or after a restart) asks any source for the rest with
  `Range: bytes=<have>-`.
- No source can hold the client: a versions list or manifest must arrive whole within a deadline and a
  size cap (utils/http.py), and a shard at `min_bytes_per_s` or faster once `grace_s` has passed; a
  source that breaks either is dropped for that attempt and the next one resumes the part file.
- A source that failed or served a shard that failed its hash is moved to the back of every later
  shard's list; a corrupt shard is deleted and comes again from the next source.
- Only when every shard verified are the files assembled into `<dest>/.tmp_step_N`, re-hashed as
  a whole against `version_sha256`, given their STABLE marker and renamed to `<dest>/step_N`.
  A reader that waits for STABLE (composer_prime.weights) never sees a partial or unverified version.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from composer_prime.broadcast.manifest import (MAX_VERSIONS_ANSWER, BroadcastError, SignedManifest, decode_verified,
                                               encode, manifest_key, parse_versions, shard_key, stored_versions)
from composer_prime.store import Store
from composer_prime.utils.fs import atomic_publish_dir, atomic_write_bytes
from composer_prime.utils.http import get_bounded
from composer_prime.weights import STABLE

MANIFEST_COPY = "broadcast_manifest.json"
MAX_MANIFEST_BYTES = 16 * 2**20  # a manifest lists shards and files: thousands of entries at most


class SourceError(Exception):
    """This source could not deliver (unreachable, HTTP error, missing object)."""


class Source:
    """Somewhere versions can be read from."""

    name: str

    def versions(self) -> list[int]:
        raise NotImplementedError

    def manifest_bytes(self, version: int) -> bytes:
        raise NotImplementedError

    def shard(self, version: int, index: int, start: int) -> tuple[int, Iterator[bytes]]:
        """(offset the data starts at, the data): `start` when the source honours it, else 0."""
        raise NotImplementedError

    def close(self) -> None:
        pass


class HttpSource(Source):
    """An origin or relay. `timeout_s` bounds a versions list or a manifest as a whole; a shard must keep arriving
    at `min_bytes_per_s` once `grace_s` has passed since its answer began."""

    def __init__(self, url: str, timeout_s: float = 30.0, min_bytes_per_s: float = 64 * 1024, grace_s: float = 10.0):
        self.name = url.rstrip("/")
        self.timeout_s, self.min_bytes_per_s, self.grace_s = timeout_s, min_bytes_per_s, grace_s
        self._http = httpx.Client(base_url=self.name, timeout=httpx.Timeout(timeout_s, connect=5.0))

    def _get(self, path: str, max_bytes: int) -> bytes:
        try:
            return get_bounded(self._http, path, max_bytes, self.timeout_s)
        except httpx.HTTPError as exc:
            raise SourceError(f"{self.name}{path}: {exc}") from None

    def versions(self) -> list[int]:
        try:
            return parse_versions(self._get("/versions", MAX_VERSIONS_ANSWER))
        except BroadcastError as exc:
            raise SourceError(f"{self.name}: bad /versions answer: {exc}") from None

    def manifest_bytes(self, version: int) -> bytes:
        return self._get(f"/versions/{version}/manifest", MAX_MANIFEST_BYTES)

    def shard(self, version: int, index: int, start: int) -> tuple[int, Iterator[bytes]]:
        headers = {"Range": f"bytes={start}-"} if start > 0 else {}
        request = self._http.build_request("GET", f"/versions/{version}/shards/{index}", headers=headers)
        try:
            response = self._http.send(request, stream=True)
            response.raise_for_status()
        except httpx.HTTPError as exc:
            raise SourceError(f"{self.name} shard {index}: {exc}") from None
        offset = start if response.status_code == 206 else 0

        def body() -> Iterator[bytes]:
            began, received = time.monotonic(), 0
            try:
                for chunk in response.iter_bytes():
                    yield chunk
                    received += len(chunk)
                    elapsed = time.monotonic() - began
                    if elapsed > self.grace_s and received < self.min_bytes_per_s * elapsed:
                        raise SourceError(f"{self.name} shard {index}: {received / elapsed:.0f} B/s, under the "
                                          f"minimum of {self.min_bytes_per_s:.0f}")
            except httpx.HTTPError as exc:
                raise SourceError(f"{self.name} shard {index}: {exc}") from None
            finally:
                response.close()

        return offset, body()

    def close(self) -> None:
        self._http.close()


class StoreSource(Source):
    """Pull straight from the object store (or a shared directory), no server in between."""

    def __init__(self, store: Store):
        self.store = store
        self.name = store.url

    def _read(self, key: str, start: int | None = None) -> bytes:
        try:
            return self.store.read_bytes(key, start=start)
        except (OSError, ValueError) as exc:  # missing objects, S3 errors (botocore errors are OSErrors in s3fs)
            raise SourceError(f"{self.name}/{key}: {exc}") from None

    def versions(self) -> list[int]:
        try:
            return stored_versions(self.store)
        except OSError as exc:
            raise SourceError(f"{self.name}: {exc}") from None

    def manifest_bytes(self, version: int) -> bytes:
        return self._read(manifest_key(version))

    def shard(self, version: int, index: int, start: int) -> tuple[int, Iterator[bytes]]:
        return start, iter([self._read(shard_key(version, index), start=start or None)])


def make_sources(servers: list[str], store: Store | None = None) -> list[Source]:
    sources: list[Source] = [HttpSource(url) for url in servers]
    if store is not None:
        sources.append(StoreSource(store))
    return sources


@dataclass
class FetchReport:
    version: int
    path: Path
    already_present: bool = False
    bytes_by_source: dict[str, int] = field(default_factory=dict)
    corrupt: list[tuple[int, str]] = field(default_factory=list)
    """(shard, source) pairs whose bytes failed their hash."""
    failures: list[tuple[int, str, str]] = field(default_factory=list)
    """(shard, source, reason) for attempts that broke off."""
    resumed_bytes: int = 0
    """Bytes of part files found on disk and kept (not downloaded again)."""
    seconds: float = 0.0


class BroadcastClient:
    def __init__(self, sources: list[Source], public: Ed25519PublicKey, dest_root: Path, parallel: int = 4,
                 max_rounds: int = 3):
        if not sources:
            raise ValueError("a broadcast client needs at least one source")
        self.sources = sources
        self.public = public
        self.dest_root = Path(dest_root)
        self.parallel = parallel
        self.max_rounds = max_rounds
        self._strikes = {s.name: 0 for s in sources}
        self._lock = threading.Lock()

    def close(self) -> None:
        for source in self.sources:
            source.close()

    def latest_version(self) -> int | None:
        """Newest version any source offers with a manifest that verifies (None when none)."""
        offered: set[int] = set()
        for source in self.sources:
            try:
                offered.update(source.versions())
            except SourceError:
                continue
        for version in sorted(offered, reverse=True):
            try:
                self._manifest(version)
                return version
            except BroadcastError:
                continue
        return None

    def _manifest(self, version: int) -> SignedManifest:
        errors = []
        for source in self.sources:
            try:
                return decode_verified(source.manifest_bytes(version), self.public, version)
            except (SourceError, BroadcastError) as exc:
                errors.append(f"{source.name}: {exc}")
        raise BroadcastError(f"no valid manifest for version {version}: {'; '.join(errors)}")

    def fetch(self, version: int | None = None) -> FetchReport:
        """Download, verify and install `version` (default: the newest) under `dest_root/step_N`."""
        started = time.monotonic()
        if version is None:
            version = self.latest_version()
            if version is None:
                raise BroadcastError("no source offers a verifiable version")
        final = self.dest_root / f"step_{version}"
        report = FetchReport(version=version, path=final)
        if (final / STABLE).is_file():
            report.already_present = True
            return report
        manifest = self._manifest(version)
        partial = self.dest_root / f".partial_step_{version}"
        partial.mkdir(parents=True, exist_ok=True)
        with ThreadPoolExecutor(max_workers=self.parallel) as pool:
            results = list(pool.map(lambda s: self._fetch_shard(manifest, s.index, partial, report), manifest.body.shards))
        missing = [index for index, ok in enumerate(results) if not ok]
        if missing:
            raise BroadcastError(f"version {version}: shards {missing} could not be fetched intact from any source")
        self._assemble(manifest, partial, final)
        shutil.rmtree(partial, ignore_errors=True)
        report.seconds = time.monotonic() - started
        return report

    def _order(self, index: int) -> list[Source]:
        # Rotate by shard index to spread load, then put sources that served corrupt data last.
        n = len(self.sources)
        rotated = [self.sources[(index + k) % n] for k in range(n)]
        with self._lock:
            return sorted(rotated, key=lambda s: self._strikes[s.name])

    def _fetch_shard(self, manifest: SignedManifest, index: int, partial: Path, report: FetchReport) -> bool:
        entry = manifest.body.shards[index]
        done, part = partial / f"{index}.ok", partial / f"{index}.part"
        if done.is_file() and _sha256_file(done) == entry.sha256:
            return True
        if part.is_file():
            have = part.stat().st_size
            if have > entry.size:
                part.unlink()
            elif have:
                with self._lock:
                    report.resumed_bytes += have
        for _ in range(self.max_rounds):
            for source in self._order(index):
                have = part.stat().st_size if part.is_file() else 0
                if have < entry.size:
                    try:
                        self._download(source, manifest.body.version, index, part, have, entry.size, report)
                    except SourceError as exc:
                        with self._lock:
                            report.failures.append((index, source.name, str(exc)))
                            self._strikes[source.name] += 1  # slow or down: the others first from now on
                        continue  # keep the part file: the next source resumes it
                if part.stat().st_size == entry.size and _sha256_file(part) == entry.sha256:
                    part.replace(done)
                    return True
                part.unlink(missing_ok=True)  # corrupt (or over-long): start over from another source
                with self._lock:
                    report.corrupt.append((index, source.name))
                    self._strikes[source.name] += 1
        return False

    def _download(self, source: Source, version: int, index: int, part: Path, have: int, size: int,
                  report: FetchReport) -> None:
        offset, body = source.shard(version, index, have)
        with open(part, "r+b" if part.exists() else "wb") as f:
            f.seek(offset)
            f.truncate(offset)  # a source that ignored Range sends from 0
            written = offset
            try:
                for chunk in body:
                    f.write(chunk)
                    written += len(chunk)
                    with self._lock:
                        report.bytes_by_source[source.name] = report.bytes_by_source.get(source.name, 0) + len(chunk)
                    if written > size:
                        break  # longer than the manifest says: corrupt, stop reading
            finally:
                if close := getattr(body, "close", None):
                    close()  # releases the HTTP connection when we stopped early

    def _assemble(self, manifest: SignedManifest, partial: Path, final: Path) -> None:
        body = manifest.body
        tmp = final.with_name(f".tmp_{final.name}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        whole = hashlib.sha256()
        stream = _stream_shards(partial, len(body.shards))
        pending = b""
        for entry in body.files:
            file_hash = hashlib.sha256()
            with open(tmp / entry.name, "wb") as out:
                remaining = entry.size
                while remaining:
                    if not pending:
                        pending = next(stream)
                    piece, pending = pending[:remaining], pending[remaining:]
                    out.write(piece)
                    file_hash.update(piece)
                    whole.update(piece)
                    remaining -= len(piece)
            if file_hash.hexdigest() != entry.sha256:
                shutil.rmtree(tmp, ignore_errors=True)
                raise BroadcastError(f"version {body.version}: file {entry.name} does not match its hash")
        if whole.hexdigest() != body.version_sha256:
            shutil.rmtree(tmp, ignore_errors=True)
            raise BroadcastError(f"version {body.version}: assembled bytes do not match the version hash")
        atomic_write_bytes(tmp / MANIFEST_COPY, encode(manifest))
        (tmp / STABLE).write_text(json.dumps({"version": body.version, "version_sha256": body.version_sha256,
                                              "time": time.time()}))
        atomic_publish_dir(tmp, final)


def _stream_shards(partial: Path, count: int) -> Iterator[bytes]:
    for index in range(count):
        with open(partial / f"{index}.ok", "rb") as f:
            while chunk := f.read(1024 * 1024):
                yield chunk


def _sha256_file(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()
