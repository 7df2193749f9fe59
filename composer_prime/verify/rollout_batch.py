"""What a volunteer worker uploads: a batch of rollouts, signed.

Wire format: msgpack through msgspec, typed and versioned (no pickle). The signature covers the
exact `payload` bytes (the encoded RolloutBatch), so verification needs no canonical re-encoding.
"""

from __future__ import annotations

import msgspec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

ROLLOUT_SCHEMA = 1


class RolloutSample(msgspec.Struct, frozen=True):
    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    """The sampler's log-prob of each completion token at `RolloutBatch.temperature`."""
    reward: float = 0.0
    example_id: int = -1
    """Which prompt of the environment this answers (for grouping into advantages)."""
    proofs: list[bytes] = []
    """TOPLOC proofs of prompt + completion (verify/toploc.py); empty unless the run asks for them."""


class RolloutBatch(msgspec.Struct, frozen=True):
    worker_id: str
    batch_id: str
    """Unique per batch (the worker chooses it before sampling and reuses it on retries), so a
    re-upload after a disconnect is recognised as a duplicate, never counted twice."""
    weight_version: int
    temperature: float
    samples: list[RolloutSample]
    schema_version: int = ROLLOUT_SCHEMA


class SignedBatch(msgspec.Struct, frozen=True):
    worker_id: str
    payload: bytes
    """msgspec.msgpack.encode(RolloutBatch)."""
    signature: bytes
    """Ed25519 over `payload` with the worker's key."""
    schema_version: int = ROLLOUT_SCHEMA


def sign_batch(batch: RolloutBatch, key: Ed25519PrivateKey) -> SignedBatch:
    payload = msgspec.msgpack.encode(batch)
    return SignedBatch(worker_id=batch.worker_id, payload=payload, signature=key.sign(payload))


def signed_bytes(batch: RolloutBatch, key: Ed25519PrivateKey) -> bytes:
    """What a worker uploads to the object store."""
    return encode_signed(sign_batch(batch, key))


def encode_signed(batch: SignedBatch) -> bytes:
    return msgspec.msgpack.encode(batch)


def decode_signed(data: bytes) -> SignedBatch:
    return msgspec.msgpack.decode(data, type=SignedBatch)


def decode_batch(payload: bytes) -> RolloutBatch:
    return msgspec.msgpack.decode(payload, type=RolloutBatch)
