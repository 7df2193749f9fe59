"""Publishing and the signed manifest: hashes match the bytes, signatures bind body and version."""

from __future__ import annotations

import hashlib

import msgspec
import pytest

from composer_prime import keys
from composer_prime.broadcast.manifest import (
    BroadcastError, decode_verified, encode, manifest_key, shard_key, stored_versions,
)
from composer_prime.broadcast.publish import publish_version, version_files
from composer_prime.store import Store


def test_shards_tile_the_version_and_hashes_match(published, run_key, tmp_path):
    store = Store(str(tmp_path / "store"))
    manifest = publish_version(published, store, run_key, 3, shard_size=100_000)
    stream = b"".join(p.read_bytes() for p in version_files(published))
    body = manifest.body
    assert body.total_size == len(stream) and body.version == 3
    assert [f.name for f in body.files] == sorted(p.name for p in published.iterdir() if p.name != "STABLE")
    assert hashlib.sha256(stream).hexdigest() == body.version_sha256
    assert len(body.shards) == -(-len(stream) // 100_000)
    for shard in body.shards:
        data = store.read_bytes(shard_key(3, shard.index))
        assert data == stream[shard.offset:shard.offset + shard.size]
        assert hashlib.sha256(data).hexdigest() == shard.sha256
    assert stored_versions(store) == [3]
    assert decode_verified(store.read_bytes(manifest_key(3)), run_key.public_key(), 3) == manifest


def test_tampered_wrong_key_and_replayed_manifests_are_refused(published, run_key, tmp_path):
    store = Store(str(tmp_path / "store"))
    manifest = publish_version(published, store, run_key, 3, shard_size=500_000)
    public = run_key.public_key()
    # A changed shard hash (an attacker serving other bytes) breaks the signature.
    shards = list(manifest.body.shards)
    shards[0] = msgspec.structs.replace(shards[0], sha256="00" * 32)
    tampered = msgspec.structs.replace(manifest, body=msgspec.structs.replace(manifest.body, shards=shards))
    with pytest.raises(BroadcastError, match="signature"):
        decode_verified(encode(tampered), public)
    # Signed by some other key.
    with pytest.raises(BroadcastError, match="signature"):
        decode_verified(encode(manifest), keys.generate_key().public_key())
    # A genuine manifest of version 3 offered as version 4: an old-weights replay.
    with pytest.raises(BroadcastError, match="version 4"):
        decode_verified(encode(manifest), public, version=4)
    with pytest.raises(BroadcastError, match="malformed"):
        decode_verified(b"{not json", public)


def test_keys_round_trip_through_files(tmp_path):
    key = keys.load_or_create_private_key(tmp_path / "run.key")
    assert keys.load_or_create_private_key(tmp_path / "run.key").public_key().public_bytes_raw() == key.public_key().public_bytes_raw()
    assert (tmp_path / "run.key").stat().st_mode & 0o777 == 0o600
    public = keys.load_public_key(tmp_path / "run.key.pub")
    assert keys.verify(public, key.sign(b"msg"), b"msg")
    assert not keys.verify(public, key.sign(b"msg"), b"msh")
    assert keys.public_hex(keys.load_public_key(keys.public_hex(key))) == keys.public_hex(key)
