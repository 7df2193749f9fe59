"""Run a coordinator as its own process: `python -m composer_prime.worker.serve @ cfg.toml`.

The current weight version is the newest in the broadcast store, so the coordinator needs no link
to the trainer beyond the store that broadcast.watch fills.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import uvicorn
from pydantic import Field
from pydantic_config import BaseConfig

from composer_prime.broadcast import keys
from composer_prime.broadcast.store import Store, StoreConfig
from composer_prime.cli import run_cli
from composer_prime.utils.net import bind
from composer_prime.verify.registry import WorkerRegistry
from composer_prime.worker.coordinator import create_coordinator_app
from composer_prime.worker.protocol import JoinResponse


class CoordinatorConfig(BaseConfig):
    """The run's front door for volunteer workers."""

    host: Annotated[str, Field(description="Interface to bind (0.0.0.0 to admit workers from other hosts).")] = "127.0.0.1"
    port: Annotated[int, Field(ge=0, le=65535, description="TCP port.")] = 8700
    join_token: Annotated[str, Field(min_length=8, description="Secret volunteers need to join.")]
    registry: Annotated[Path, Field(description="Worker registry file (keys, bans, counts).")] = Path("outputs/workers.json")
    run_id: Annotated[str, Field(description="Run name.")] = "run"
    run_public_key: Annotated[str, Field(description="The run's public key (hex or file) that signs manifests.")]
    broadcast_servers: Annotated[list[str], Field(description="Origin and relay URLs as workers can reach them.")] = []
    store: Annotated[StoreConfig, Field(description="Run store root: broadcasts/ and rollouts/ live under it.")]
    env_id: Annotated[str, Field(description="Environment workers run.")] = "reverse-text"
    temperature: Annotated[float, Field(gt=0, description="Sampling temperature.")] = 1.0
    max_tokens: Annotated[int, Field(ge=1, description="Most completion tokens.")] = 64
    samples_per_prompt: Annotated[int, Field(ge=1, description="Completions per prompt (group size).")] = 8
    prompts_per_batch: Annotated[int, Field(ge=1, description="Prompts per uploaded batch.")] = 4


def main(config: CoordinatorConfig) -> None:
    broadcasts = Store(f"{config.store.url.rstrip('/')}/broadcasts", config.store.endpoint_url)

    def current_version() -> int:
        versions = broadcasts.versions()
        return versions[-1] if versions else 0

    def run_info() -> JoinResponse:
        return JoinResponse(
            run_id=config.run_id, run_public_key=keys.public_hex(keys.load_public_key(config.run_public_key)),
            broadcast_servers=config.broadcast_servers, store_url=config.store.url,
            store_endpoint_url=config.store.endpoint_url, env_id=config.env_id, temperature=config.temperature,
            max_tokens=config.max_tokens, samples_per_prompt=config.samples_per_prompt,
            prompts_per_batch=config.prompts_per_batch, current_version=current_version())

    app = create_coordinator_app(WorkerRegistry(config.registry), config.join_token, run_info, current_version)
    sock = bind(config.host, config.port)
    print(f"coordinator on http://{config.host}:{sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


def cli() -> None:
    run_cli(CoordinatorConfig, main)


if __name__ == "__main__":
    cli()
