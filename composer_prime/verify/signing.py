"""Worker side: sign a rollout batch so the orchestrator can tell who sent it and that nobody changed it."""

from __future__ import annotations

import msgspec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from composer_prime import keys
from composer_prime.verify.rollout_batch import RolloutBatch, SignedBatch, encode_signed


def sign_batch(batch: RolloutBatch, key: Ed25519PrivateKey) -> SignedBatch:
    payload = msgspec.msgpack.encode(batch)
    return SignedBatch(worker_id=batch.worker_id, payload=payload, signature=keys.sign(key, payload))


def signed_bytes(batch: RolloutBatch, key: Ed25519PrivateKey) -> bytes:
    """What a worker uploads to the object store."""
    return encode_signed(sign_batch(batch, key))
