"""Run a broadcast origin or relay as its own process: `python -m composer_prime.broadcast.serve @ cfg.toml`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import uvicorn
from pydantic import Field
from pydantic_config import BaseConfig

from composer_prime import keys
from composer_prime.broadcast.server import create_origin_app, create_relay_app
from composer_prime.cli import run_cli
from composer_prime.configs.shared import StoreConfig
from composer_prime.errors import UserError
from composer_prime.store import Store
from composer_prime.utils.net import KEEP_ALIVE_S, bind


class BroadcastServerConfig(BaseConfig):
    """One origin or relay of a run's weight broadcast."""

    role: Annotated[Literal["origin", "relay"], Field(description="origin: serve a store; relay: pull from upstreams and cache.")]
    host: Annotated[str, Field(description="Interface to bind; 127.0.0.1 unless the server must be reachable from other hosts.")] = "127.0.0.1"
    port: Annotated[int, Field(ge=0, le=65535, description="TCP port.")] = 8600
    store: Annotated[StoreConfig | None, Field(description="The origin's store (where the trainer publishes).")] = None
    upstreams: Annotated[list[str], Field(description="A relay's upstream servers (origin or relays), tried in order.")] = []
    cache_dir: Annotated[Path | None, Field(description="A relay's cache of verified manifests and shards.")] = None
    run_public_key: Annotated[
        str | None, Field(description="The run's Ed25519 public key (hex or a file holding it); a relay checks manifests with it.")
    ] = None
    egress_bytes_per_s: Annotated[
        float, Field(ge=0, description="Cap on bytes/s sent, all connections together (emulates a site uplink); 0: none.")
    ] = 0.0


def main(config: BroadcastServerConfig) -> None:
    if config.role == "origin":
        if config.store is None:
            raise UserError("an origin needs [store] url")
        app = create_origin_app(Store.from_config(config.store), config.egress_bytes_per_s)
    else:
        if not config.upstreams or config.cache_dir is None or config.run_public_key is None:
            raise UserError("a relay needs upstreams, cache_dir and run_public_key")
        app = create_relay_app(config.upstreams, config.cache_dir, keys.load_public_key(config.run_public_key),
                               config.egress_bytes_per_s)
    sock = bind(config.host, config.port)
    print(f"broadcast {config.role} serving on http://{config.host}:{sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_keep_alive=KEEP_ALIVE_S)).run(sockets=[sock])


def cli() -> None:
    run_cli(BroadcastServerConfig, main)


if __name__ == "__main__":
    cli()
