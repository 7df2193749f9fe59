"""The orchestrator's seal on a step in the run store: a remote trainer site trains only on what it signed.

A step in the store is `steps/step_<N>/rank_<r>.msgpack` for every rank plus the `COMPLETE` marker;
the marker holds a `StepSeal`: the step number, the SHA-256 of every rank's bytes, and the
orchestrator's Ed25519 signature over both. Anyone else who can write to the store (a volunteer
with a leaked credential, a misconfigured role) can write a step and its marker but not the seal,
so a site that checks the seal before training takes nothing that did not come from the orchestrator.
The step number is signed too, so a genuine older step copied under a newer number is refused.
"""

from __future__ import annotations

import hashlib

import msgspec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from composer_prime import keys

SEAL_SCHEMA = 1


class StepSeal(msgspec.Struct, forbid_unknown_fields=True):
    step: int
    rank_sha256: list[str]
    signature: str
    """Ed25519 over `seal_message(step, rank_sha256)`, hex."""
    schema_version: int = SEAL_SCHEMA


class StepRefused(Exception):
    """A step in the store that must not be trained on; the message is the reason."""


def seal_message(step: int, rank_sha256: list[str]) -> bytes:
    return f"composer-prime/step/v{SEAL_SCHEMA}/{step}/{','.join(rank_sha256)}".encode()


def seal_step(key: Ed25519PrivateKey, step: int, rank_bytes: list[bytes]) -> bytes:
    """The COMPLETE marker's bytes for a step whose ranks' batches are `rank_bytes`."""
    digests = [hashlib.sha256(data).hexdigest() for data in rank_bytes]
    signature = key.sign(seal_message(step, digests)).hex()
    return msgspec.json.encode(StepSeal(step=step, rank_sha256=digests, signature=signature))


def check_rank(public: Ed25519PublicKey, marker: bytes, step: int, rank: int, world_size: int, data: bytes) -> None:
    """Raise StepRefused unless `data` is rank `rank` of step `step` as the orchestrator sealed it."""
    try:
        seal = msgspec.json.decode(marker, type=StepSeal)
        signature = bytes.fromhex(seal.signature)
    except (msgspec.DecodeError, ValueError) as exc:
        raise StepRefused(f"step {step}: unreadable seal ({exc})") from None
    if seal.schema_version != SEAL_SCHEMA:
        raise StepRefused(f"step {step}: seal schema v{seal.schema_version}, this site reads v{SEAL_SCHEMA}")
    if not keys.verify(public, signature, seal_message(seal.step, seal.rank_sha256)):
        raise StepRefused(f"step {step}: the seal's signature is not the orchestrator's")
    if seal.step != step:
        raise StepRefused(f"step {step}: the seal is the orchestrator's for step {seal.step}")
    if len(seal.rank_sha256) != world_size:
        raise StepRefused(f"step {step}: sealed for {len(seal.rank_sha256)} ranks, this run has {world_size}")
    if hashlib.sha256(data).hexdigest() != seal.rank_sha256[rank]:
        raise StepRefused(f"step {step}: rank {rank}'s batch is not the one the orchestrator sealed")
