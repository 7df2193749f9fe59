"""Fetch one version as its own process: `python -m composer_prime.broadcast.fetch @ cfg.toml`.

Prints one JSON line (the FetchReport) on success. Rerunning after a kill resumes the part files.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated

from pydantic import Field
from pydantic_config import BaseConfig

from composer_prime import keys
from composer_prime.broadcast.client import BroadcastClient, make_sources
from composer_prime.broadcast.manifest import BroadcastError
from composer_prime.cli import run_cli
from composer_prime.configs.shared import StoreConfig
from composer_prime.errors import UserError
from composer_prime.store import Store


class BroadcastFetchConfig(BaseConfig):
    """Download, verify and install one weight version."""

    servers: Annotated[list[str], Field(description="Origin and relay URLs to fetch from, in preference order.")] = []
    store: Annotated[StoreConfig | None, Field(description="Also (or only) read straight from this store.")] = None
    run_public_key: Annotated[str, Field(description="The run's Ed25519 public key: hex, or a file holding it.")]
    dest: Annotated[Path, Field(description="Versions are installed as <dest>/step_N (a broadcasts/ directory).")]
    version: Annotated[int | None, Field(ge=0, description="Version to fetch; None: the newest any source offers.")] = None
    parallel: Annotated[int, Field(ge=1, description="Shards downloaded at once.")] = 4


def main(config: BroadcastFetchConfig) -> None:
    if not config.servers and config.store is None:
        raise UserError("give servers, a store, or both")
    store = Store.from_config(config.store) if config.store else None
    client = BroadcastClient(make_sources(config.servers, store), keys.load_public_key(config.run_public_key),
                             config.dest, parallel=config.parallel)
    try:
        report = client.fetch(config.version)
    except BroadcastError as exc:
        raise UserError(str(exc)) from None
    finally:
        client.close()
    print(json.dumps(dataclasses.asdict(report), default=str), flush=True)


def cli() -> None:
    run_cli(BroadcastFetchConfig, main)


if __name__ == "__main__":
    cli()
