"""What a volunteer worker uploads: a batch of rollouts answering one assignment, signed.

Wire format: msgpack through msgspec, typed and versioned (no pickle); unknown fields are refused. The
worker's signature covers the exact `payload` bytes (the encoded RolloutBatch), so verification needs no
canonical re-encoding. The batch carries its assignment as the coordinator issued it (signed with the
run's key): which examples to sample, how many samples each, and the key of the sampling noise
(verify/sampled.py). Sample j answers example `example_ids[j // samples_per_prompt]` and is drawn
with noise (key, j).
"""

from __future__ import annotations

import msgspec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from composer_prime import keys

ROLLOUT_SCHEMA = 2  # 2: answers a signed assignment
ASSIGNMENT_SCHEMA = 2  # 2: records the weight version announced when it was issued


class RolloutSample(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    """The sampler's log-prob of each completion token at the run's temperature."""
    reward: float = 0.0
    example_id: int = -1
    """Which prompt of the environment this answers (for grouping into advantages)."""
    proofs: list[bytes] = []
    """TOPLOC proofs of prompt + completion (verify/toploc.py); empty unless the run asks for them."""


class RolloutBatch(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    worker_id: str
    batch_id: str
    """The assignment's id: a re-upload after a disconnect lands on the same key and is recognised."""
    assignment: bytes
    """The SignedAssignment this batch answers, as the coordinator issued it."""
    weight_version: int
    temperature: float
    samples: list[RolloutSample]
    schema_version: int = ROLLOUT_SCHEMA


class SignedBatch(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    worker_id: str
    payload: bytes
    """msgspec.msgpack.encode(RolloutBatch)."""
    signature: bytes
    """Ed25519 over `payload` with the worker's key."""
    schema_version: int = ROLLOUT_SCHEMA


class Assignment(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    assignment_id: str
    worker_id: str
    example_ids: list[int]
    samples_per_prompt: int
    key: int
    """64-bit key of the batch's Gumbel noise (inference/sampling.py: gumbel_noise)."""
    temperature: float
    top_p: float
    max_tokens: int
    weight_version: int
    """The version the run announced when it issued this: the oldest a batch answering it may be sampled with
    (verify/verifier.py: `wrong-version`)."""
    expires_at: float
    """UNIX time after which no upload grant is given for it."""
    schema_version: int = ASSIGNMENT_SCHEMA

    @property
    def num_samples(self) -> int:
        return len(self.example_ids) * self.samples_per_prompt


class SignedAssignment(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    payload: bytes
    """msgspec.msgpack.encode(Assignment)."""
    signature: bytes
    """Ed25519 over `assignment_message(payload)` with the run's key."""


class AssignmentRefused(Exception):
    """Not an assignment the run issued (the message says why)."""


def assignment_message(payload: bytes) -> bytes:
    return f"composer-prime/assignment/v{ASSIGNMENT_SCHEMA}/".encode() + payload


def sign_assignment(assignment: Assignment, key: Ed25519PrivateKey) -> bytes:
    payload = msgspec.msgpack.encode(assignment)
    return msgspec.msgpack.encode(SignedAssignment(payload=payload, signature=key.sign(assignment_message(payload))))


def open_assignment(data: bytes, public: Ed25519PublicKey) -> Assignment:
    """The assignment in `data` once the run's signature on it checks; else AssignmentRefused."""
    try:
        signed = msgspec.msgpack.decode(data, type=SignedAssignment)
        if not keys.verify(public, signed.signature, assignment_message(signed.payload)):
            raise AssignmentRefused("not signed by the run's key")
        assignment = msgspec.msgpack.decode(signed.payload, type=Assignment)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise AssignmentRefused(f"undecodable ({exc})") from None
    if assignment.schema_version != ASSIGNMENT_SCHEMA:
        raise AssignmentRefused(f"schema v{assignment.schema_version}, this run reads v{ASSIGNMENT_SCHEMA}")
    return assignment


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
