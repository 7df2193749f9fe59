"""The signed manifest of one broadcast weight version.

A version directory (`broadcasts/step_N/`: safetensors, config, tokenizer assets) is read as one
byte stream, its files back to back in name order, and cut into fixed-size shards. The manifest
lists each file's place in the stream, each shard's sha256, the whole stream's sha256 and the
version number, and is signed with the run's Ed25519 key. A client that holds only the run's
public key can then trust bytes from any server: each shard is checked on arrival, the whole
version after assembly.

Wire format: JSON through msgspec, typed and versioned. The signature covers the canonical
encoding of `body` (msgspec writes struct fields in declaration order, so decoding and
re-encoding gives the signed bytes back).

In a Store a version is `step_<N>/shards/<index>` and `step_<N>/manifest.json`. Shards are written
first and the manifest last, so a version with a manifest is complete; and readers verify every
shard anyway, so a half-written shard is a detected error, never a loaded one.
"""

from __future__ import annotations

import re

import msgspec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from composer_prime import keys
from composer_prime.store import Store

MANIFEST_SCHEMA = 1
MANIFEST_FILE = "manifest.json"
_STEP = re.compile(r"^step_(\d+)$")


class BroadcastError(Exception):
    """A version could not be fetched or verified (bad signature, corrupt data, no server had it)."""


class FileEntry(msgspec.Struct, frozen=True):
    name: str
    offset: int
    """Byte offset of the file in the version stream."""
    size: int
    sha256: str


class ShardEntry(msgspec.Struct, frozen=True):
    index: int
    offset: int
    size: int
    sha256: str


class ManifestBody(msgspec.Struct, frozen=True):
    version: int
    run_id: str
    shard_size: int
    total_size: int
    files: list[FileEntry]
    shards: list[ShardEntry]
    version_sha256: str
    """sha256 of the whole stream (all files back to back)."""
    schema_version: int = MANIFEST_SCHEMA


class SignedManifest(msgspec.Struct, frozen=True):
    body: ManifestBody
    signature: str
    """Ed25519 signature of `canonical(body)`, hex."""
    public_key: str
    """The signer's public key, hex: informational, clients check against the key they were given."""


def canonical(body: ManifestBody) -> bytes:
    return msgspec.json.encode(body)


def sign_manifest(body: ManifestBody, key: Ed25519PrivateKey) -> SignedManifest:
    return SignedManifest(body=body, signature=key.sign(canonical(body)).hex(), public_key=keys.public_hex(key))


def encode(manifest: SignedManifest) -> bytes:
    return msgspec.json.encode(manifest)


def decode_verified(data: bytes, public: Ed25519PublicKey, version: int | None = None) -> SignedManifest:
    """Parse a manifest and check its signature against the run key (and its version number)."""
    try:
        manifest = msgspec.json.decode(data, type=SignedManifest)
        signature = bytes.fromhex(manifest.signature)
    except (msgspec.DecodeError, msgspec.ValidationError, ValueError) as exc:
        raise BroadcastError(f"malformed manifest: {exc}") from None
    if manifest.body.schema_version != MANIFEST_SCHEMA:
        raise BroadcastError(f"manifest schema v{manifest.body.schema_version}, this client reads v{MANIFEST_SCHEMA}")
    if not keys.verify(public, signature, canonical(manifest.body)):
        raise BroadcastError(f"manifest of version {manifest.body.version}: signature does not verify with the run key")
    if version is not None and manifest.body.version != version:
        # A validly signed manifest of another version served under this name: a replay of old weights.
        raise BroadcastError(f"asked for version {version}, manifest is signed for version {manifest.body.version}")
    _check_layout(manifest.body)
    return manifest


def _check_layout(body: ManifestBody) -> None:
    # Signed, so not hostile; but a client must never write outside the version dir or loop forever.
    offset = 0
    for position, shard in enumerate(body.shards):
        if shard.index != position or shard.offset != offset or shard.size <= 0:
            raise BroadcastError("manifest shards do not tile the version stream")
        offset += shard.size
    if offset != body.total_size:
        raise BroadcastError("manifest shards do not add up to the version size")
    for entry in body.files:
        if "/" in entry.name or entry.name in ("", ".", "..") or entry.offset + entry.size > body.total_size:
            raise BroadcastError(f"manifest file entry {entry.name!r} is not a plain file inside the version")


def manifest_key(version: int) -> str:
    return f"step_{version}/{MANIFEST_FILE}"


def shard_key(version: int, index: int) -> str:
    return f"step_{version}/shards/{index}"


MAX_VERSIONS_ANSWER = 64 * 1024  # bytes: a /versions answer lists a few hundred numbers at most


def parse_versions(data: bytes) -> list[int]:
    """A server's /versions answer: a JSON list of non-negative integers, ascending; anything else raises
    BroadcastError. Servers are untrusted: an answer is data to validate, never a value to use as it is."""
    if len(data) > MAX_VERSIONS_ANSWER:
        raise BroadcastError(f"a versions answer of {len(data)} bytes")
    try:
        versions = msgspec.json.decode(data, type=list[int])
    except msgspec.DecodeError as exc:
        raise BroadcastError(f"not a list of versions: {exc}") from None
    if any(v < 0 for v in versions) or versions != sorted(set(versions)):
        raise BroadcastError("not an ascending list of distinct non-negative versions")
    return versions


def stored_versions(store: Store) -> list[int]:
    """Versions with a manifest (complete), ascending."""
    store.fs.invalidate_cache()  # s3fs caches listings: a new version must show up on the next call
    found = [(int(m.group(1)), name) for name in store.list("") if (m := _STEP.match(name))]
    return sorted(v for v, name in found if store.exists(f"{name}/{MANIFEST_FILE}"))


def delete_version(store: Store, version: int) -> None:
    # Manifest first: from then on readers no longer consider the version.
    if store.exists(manifest_key(version)):
        store.fs.rm_file(store.path(manifest_key(version)))
    if store.local:
        if store.exists(f"step_{version}"):
            store.fs.rm(store.path(f"step_{version}"), recursive=True)
        return
    # One DELETE per object: a role scoped to broadcasts/ may delete under it, while S3's bulk delete
    # (what a recursive rm sends) is authorised on the whole bucket.
    for path in store.fs.find(store.path(f"step_{version}")):
        store.fs.rm_file(path)
