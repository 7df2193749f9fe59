"""Worker <-> coordinator HTTP protocol (JSON, pydantic). Bump PROTOCOL_VERSION on incompatible changes."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from composer_prime.configs.verify import ProofSpec

PROTOCOL_VERSION = 2  # v2: uploads through grants (coordinator/grants.py), no store in the join answer
MAX_CLOCK_SKEW_S = 120.0


class JoinRequest(BaseModel):
    join_token: str
    worker_id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9._-]+$")
    public_key: str = Field(description="The worker's Ed25519 public key, hex; it signs every batch and heartbeat.")
    protocol_version: int = PROTOCOL_VERSION


class JoinResponse(BaseModel):
    run_id: str
    run_public_key: str = Field(description="Verifies weight manifests.")
    broadcast_servers: list[str] = Field(description="Origin and relays to pull weights from.")
    upload_max_bytes: int = Field(description="Largest batch the run grants an upload for (POST /grant).")
    env_id: str
    env_args: dict[str, Any] = Field(default={}, description="The run's environment args: example ids index its split.")
    temperature: float
    max_tokens: int
    samples_per_prompt: int
    prompts_per_batch: int
    current_version: int
    proofs: ProofSpec | None = Field(default=None, description="Attach TOPLOC proofs built this way to every sample.")


class Heartbeat(BaseModel):
    worker_id: str
    time: float
    weight_version: int
    batches_uploaded: int
    signature: str = Field(description="Ed25519 over `heartbeat_message(...)`, hex: nobody else can keep a worker alive.")


class HeartbeatResponse(BaseModel):
    current_version: int
    banned: bool


def heartbeat_message(worker_id: str, time: float, weight_version: int, batches_uploaded: int) -> bytes:
    return f"heartbeat/{worker_id}/{time!r}/{weight_version}/{batches_uploaded}".encode()


def rollout_key(worker_id: str, batch_id: str) -> str:
    """Where a batch lives in the store: the same key on every retry, so an upload is idempotent."""
    return f"rollouts/{worker_id}/{batch_id}.msgpack"
