"""Publish the trainer's weight versions to a broadcast store as they appear.

    python -m composer_prime.broadcast.watch @ cfg.toml

Watches `<output_dir>/broadcasts/step_N/STABLE` (composer_prime.weights) and shards + signs each new
version into the store, newest first when it falls behind; keeps the newest `keep_last` there. This
is the bridge from an unmodified trainer to origin, relays and workers.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Annotated

from pydantic import Field
from pydantic_config import BaseConfig

from composer_prime import keys
from composer_prime.broadcast.manifest import delete_version, stored_versions
from composer_prime.broadcast.publish import DEFAULT_SHARD_SIZE, publish_version
from composer_prime.cli import run_cli
from composer_prime.configs.shared import StoreConfig
from composer_prime.store import Store
from composer_prime.weights import list_versions, version_dir

logger = logging.getLogger(__name__)


class BroadcastWatchConfig(BaseConfig):
    """Publish each weight version the trainer writes into the broadcast store."""

    output_dir: Annotated[Path, Field(description="The trainer's run directory (versions in broadcasts/step_N).")]
    store: Annotated[StoreConfig, Field(description="Broadcast store, e.g. s3://run/broadcasts.")]
    run_key: Annotated[Path, Field(description="The run's Ed25519 private key file (created if missing).")]
    run_id: Annotated[str, Field(description="Run name written into manifests.")] = "run"
    shard_size: Annotated[int, Field(ge=1024, description="Bytes per shard.")] = DEFAULT_SHARD_SIZE
    keep_last: Annotated[int, Field(ge=1, description="Versions kept in the store.")] = 3
    poll_s: Annotated[float, Field(gt=0, description="Seconds between looks at the run directory.")] = 2.0
    once: Annotated[bool, Field(description="Publish what is there and exit (no watching).")] = False


def publish_new(config: BroadcastWatchConfig, store: Store, key) -> list[int]:
    """Publish every local version newer than the store's newest; returns what was published."""
    have = stored_versions(store)
    newest = have[-1] if have else -1
    published = []
    for version in [v for v in list_versions(config.output_dir) if v > newest][-config.keep_last:]:
        publish_version(version_dir(config.output_dir, version), store, key, version, config.run_id, config.shard_size)
        published.append(version)
        logger.info("published version %d", version)
    for old in stored_versions(store)[:-config.keep_last]:
        delete_version(store, old)
    return published


def main(config: BroadcastWatchConfig) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    key = keys.load_or_create_private_key(config.run_key)
    print(f"run public key: {keys.public_hex(key)}", flush=True)
    store = Store.from_config(config.store)
    while True:
        publish_new(config, store, key)
        if config.once:
            return
        time.sleep(config.poll_s)


def cli() -> None:
    run_cli(BroadcastWatchConfig, main)


if __name__ == "__main__":
    cli()
