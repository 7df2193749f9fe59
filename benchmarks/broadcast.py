"""Delivering one weight version to 4 clients: origin + relay (sharded, verified) vs plain HTTP.

Both arms run in the same invocation against servers whose uplink is capped at the same
`--egress-mbps` (all connections of one server together): on one machine loopback bandwidth is
practically unlimited, so a cap per server is what makes "sites behind slow links" measurable.

  broadcast:  origin + 1 relay (relay pulls from the origin); each client fetches shards in parallel
              from both (BroadcastClient: rotated per shard, hash-checked, assembled, STABLE written).
  plain:      one server (the same origin code, the version as a single shard); each client does
              one plain HTTP GET of all the bytes, no verification.

Time = from start until the last of the 4 clients holds the version. Clients are threads of this
process (downloads and sha256 release the GIL). Prints a JSON line with both times and the ratio
broadcast / plain (below 1: the relay's uplink adds capacity; ideal with 1 relay and 4 clients is
(4 + 1) / (2 * 4) = 0.625, since the relay's own copy also crosses the origin's uplink).

    uv run python benchmarks/broadcast.py [--size-mb 8 --egress-mbps 4 --clients 4 --shard-kb 512]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import torch

from composer_prime import keys
from composer_prime.broadcast.client import BroadcastClient, HttpSource
from composer_prime.broadcast.publish import publish_version
from composer_prime.broadcast.server import create_origin_app, create_relay_app
from composer_prime.store import Store
from composer_prime.utils.serve import ServedApp
from composer_prime.weights import publish_weights


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=8.0)
    parser.add_argument("--egress-mbps", type=float, default=4.0, help="Per-server uplink cap, MB/s.")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--shard-kb", type=int, default=512)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        numel = int(args.size_mb * 1e6 / 4)
        state = {"weight": torch.randn(numel, generator=torch.Generator().manual_seed(0))}
        version_dir = publish_weights(tmp / "trainer", 1, state, "{}")
        key = keys.generate_key()
        egress = args.egress_mbps * 1e6
        sharded, whole = Store(str(tmp / "sharded")), Store(str(tmp / "whole"))
        manifest = publish_version(version_dir, sharded, key, 1, shard_size=args.shard_kb * 1024)
        publish_version(version_dir, whole, key, 1, shard_size=manifest.body.total_size)
        total = manifest.body.total_size

        # Arm 1: origin + relay, verifying clients.
        origin = ServedApp(create_origin_app(sharded, egress)).start()
        relay = ServedApp(create_relay_app([origin.url], tmp / "relay-cache", key.public_key(), egress)).start()

        def broadcast_client(i: int) -> float:
            client = BroadcastClient([HttpSource(origin.url), HttpSource(relay.url)], key.public_key(),
                                     tmp / f"client{i}", parallel=4)
            client.fetch(1)
            client.close()
            return time.monotonic()

        start = time.monotonic()
        with ThreadPoolExecutor(args.clients) as pool:
            broadcast_s = max(pool.map(broadcast_client, range(args.clients))) - start
        origin_bytes = httpx.get(f"{origin.url}/stats").json()["bytes_served"]
        relay_bytes = httpx.get(f"{relay.url}/stats").json()["bytes_served"]
        origin.stop()
        relay.stop()

        # Arm 2: one plain server, one GET of all the bytes per client.
        plain = ServedApp(create_origin_app(whole, egress)).start()

        def plain_client(_: int) -> float:
            data = httpx.get(f"{plain.url}/versions/1/shards/0", timeout=600).content
            assert len(data) == total
            return time.monotonic()

        start = time.monotonic()
        with ThreadPoolExecutor(args.clients) as pool:
            plain_s = max(pool.map(plain_client, range(args.clients))) - start
        plain.stop()

    print(json.dumps({
        "version_bytes": total, "clients": args.clients, "egress_MBps_per_server": args.egress_mbps,
        "shards": len(manifest.body.shards), "broadcast_s": round(broadcast_s, 2), "plain_s": round(plain_s, 2),
        "ratio_broadcast_over_plain": round(broadcast_s / plain_s, 3),
        "origin_bytes_served": origin_bytes, "relay_bytes_served": relay_bytes,
    }))


if __name__ == "__main__":
    main()
