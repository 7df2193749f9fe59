"""Publish a weight version into a broadcast store: shard it, hash it, sign the manifest.

Input is a complete `broadcasts/step_N/` directory as `composer_prime.weights.publish_weights`
writes it (the STABLE marker is left out: the client writes its own after verifying). Files are
streamed in chunks, so a model larger than memory publishes too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from composer_prime.broadcast.manifest import (FileEntry, ManifestBody, ShardEntry, SignedManifest, encode,
                                               manifest_key, shard_key, sign_manifest)
from composer_prime.store import Store
from composer_prime.weights import STABLE, require_stable

DEFAULT_SHARD_SIZE = 4 * 1024 * 1024
_CHUNK = 1024 * 1024


def version_files(version_dir: Path) -> list[Path]:
    """The files that make up a version, in stream order (name order; STABLE is the reader's own)."""
    version_dir = require_stable(version_dir)
    return sorted((p for p in version_dir.iterdir() if p.is_file() and p.name != STABLE), key=lambda p: p.name)


def _chunks(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            yield chunk


def publish_version(
    version_dir: Path, store: Store, key: Ed25519PrivateKey, version: int, run_id: str = "run",
    shard_size: int = DEFAULT_SHARD_SIZE,
) -> SignedManifest:
    """Write `version_dir` into `store` as shards plus a signed manifest (written last)."""
    if shard_size <= 0:
        raise ValueError("shard_size must be positive")
    files: list[FileEntry] = []
    shards: list[ShardEntry] = []
    whole = hashlib.sha256()
    buffer = bytearray()
    offset = 0

    def flush(data: bytes) -> None:
        start = shards[-1].offset + shards[-1].size if shards else 0
        store.write_bytes(shard_key(version, len(shards)), data)
        shards.append(ShardEntry(index=len(shards), offset=start, size=len(data), sha256=hashlib.sha256(data).hexdigest()))

    for path in version_files(version_dir):
        file_hash = hashlib.sha256()
        size = 0
        for chunk in _chunks(path):
            file_hash.update(chunk)
            whole.update(chunk)
            size += len(chunk)
            buffer += chunk
            while len(buffer) >= shard_size:
                flush(bytes(buffer[:shard_size]))
                del buffer[:shard_size]
        files.append(FileEntry(name=path.name, offset=offset, size=size, sha256=file_hash.hexdigest()))
        offset += size
    if buffer:
        flush(bytes(buffer))
    body = ManifestBody(version=version, run_id=run_id, shard_size=shard_size, total_size=offset, files=files,
                        shards=shards, version_sha256=whole.hexdigest())
    manifest = sign_manifest(body, key)
    store.write_bytes(manifest_key(version), encode(manifest))
    return manifest
