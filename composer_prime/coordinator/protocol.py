"""Worker <-> coordinator HTTP protocol (JSON, pydantic). Bump PROTOCOL_VERSION on incompatible changes.

Identity: a worker's id is `<name>-<fingerprint>`, the fingerprint being the first 20 hex digits of the SHA-256
of its public key (`worker_id`). The id is a function of the key, so nobody can claim another volunteer's id
(that takes an 80-bit second preimage), and a name like `.` or `..` never becomes a path.

Answers: the join and heartbeat answers are signed with the run's key (`SignedAnswer`), which every worker
knows from its own config, and echo the request's nonce or time: whoever sits between a worker and the
coordinator on plain HTTP can neither choose the keys and servers a worker trusts nor replay an old answer.
"""

from __future__ import annotations

import hashlib
from typing import Any, TypeVar

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from composer_prime import keys
from composer_prime.configs.coordinator import WORKER_NAME
from composer_prime.configs.verify import ProofSpec

PROTOCOL_VERSION = 3  # v3: ids bound to keys, signed answers, assigned batches (examples + sampling noise key)
MAX_CLOCK_SKEW_S = 120.0
WORKER_ID = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,40}-[0-9a-f]{20}$"
HEX_SIGNATURE = r"^[0-9a-f]{128}$"
T = TypeVar("T", bound=BaseModel)


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")


def worker_id(name: str, public_key_hex: str) -> str:
    """The id a worker of this name and key has in every run (module docstring)."""
    fingerprint = hashlib.sha256(keys.parse_public_key(public_key_hex).public_bytes_raw()).hexdigest()[:20]
    return f"{name}-{fingerprint}"


class JoinRequest(Message):
    join_token: str = Field(max_length=256)
    name: str = Field(pattern=WORKER_NAME, description="The volunteer's chosen name; its id adds its key's fingerprint.")
    public_key: str = Field(pattern=r"^[0-9a-f]{64}$",
                            description="The worker's Ed25519 public key, hex; it signs every batch and heartbeat.")
    nonce: str = Field(pattern=r"^[0-9a-f]{32}$", description="Echoed in the signed answer: an old answer is refused.")
    protocol_version: int = PROTOCOL_VERSION


class RunInfo(Message):
    """What every worker of the run needs to take part."""

    run_id: str
    broadcast_servers: list[str] = Field(description="Origin and relays to pull weights from.")
    upload_max_bytes: int = Field(description="Largest batch the run grants an upload for (POST /grant).")
    env_id: str
    env_args: dict[str, Any] = Field(default={}, description="The run's environment args: example ids index its split.")
    temperature: float
    top_p: float = 1.0
    max_tokens: int
    samples_per_prompt: int
    prompts_per_batch: int
    current_version: int
    proofs: ProofSpec | None = Field(default=None, description="Attach TOPLOC proofs built this way to every sample.")
    prove_sampling: bool = Field(default=True, description="Draw every token by Gumbel-max with the assignment's "
                                                           "noise key (engines that cannot are refused).")


class JoinResponse(RunInfo):
    worker_id: str = Field(description="The worker's id in the run (`worker_id(name, public_key)`).")
    nonce: str


class Heartbeat(Message):
    worker_id: str = Field(pattern=WORKER_ID)
    time: float
    weight_version: int
    batches_uploaded: int
    signature: str = Field(pattern=HEX_SIGNATURE,
                           description="Ed25519 over `heartbeat_message(...)`, hex: nobody else can keep a worker alive.")


class HeartbeatResponse(Message):
    worker_id: str
    time: float = Field(description="The heartbeat's own time, echoed.")
    current_version: int
    banned: bool


class SignedAnswer(Message):
    body: str = Field(description="The answer, JSON.")
    signature: str = Field(pattern=HEX_SIGNATURE, description="Ed25519 over `answer_message(kind, body)` with the run key.")


class AnswerRefused(Exception):
    """An answer the run's key did not sign, or not for this request."""


def answer_message(kind: str, body: str) -> bytes:
    return f"composer-prime/answer/v{PROTOCOL_VERSION}/{kind}/".encode() + body.encode()


def sign_answer(key: Ed25519PrivateKey, answer: BaseModel) -> SignedAnswer:
    body = answer.model_dump_json()
    return SignedAnswer(body=body, signature=key.sign(answer_message(type(answer).__name__, body)).hex())


def open_answer(public: Ed25519PublicKey, data: Any, kind: type[T]) -> T:
    """The `kind` answer in the JSON `data`, once its signature checks with the run's key; else AnswerRefused."""
    try:
        signed = SignedAnswer.model_validate(data)
        if not keys.verify(public, bytes.fromhex(signed.signature), answer_message(kind.__name__, signed.body)):
            raise AnswerRefused(f"a {kind.__name__} not signed by the run's key")
        return kind.model_validate_json(signed.body)
    except ValidationError as exc:
        raise AnswerRefused(f"not a signed {kind.__name__}: {exc.errors()[0]['msg']}") from None


def heartbeat_message(worker_id: str, time: float, weight_version: int, batches_uploaded: int) -> bytes:
    return f"heartbeat/{worker_id}/{time!r}/{weight_version}/{batches_uploaded}".encode()


class AssignRequest(Message):
    worker_id: str = Field(pattern=WORKER_ID)
    time: float
    signature: str = Field(pattern=HEX_SIGNATURE, description="Ed25519 over `assign_message(...)`, hex.")


def assign_message(worker_id: str, time: float) -> bytes:
    return f"assign/{worker_id}/{time!r}".encode()


def rollout_key(worker_id: str, batch_id: str) -> str:
    """Where a batch lives in the store: the same key on every retry, so an upload is idempotent."""
    return f"rollouts/{worker_id}/{batch_id}.msgpack"
