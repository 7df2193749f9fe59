"""Origin, relay and client over real HTTP on 127.0.0.1."""

from __future__ import annotations

import hashlib

import httpx
import pytest
import torch

from composer_prime import keys
from composer_prime.broadcast.client import BroadcastClient, HttpSource, StoreSource
from composer_prime.broadcast.manifest import BroadcastError
from composer_prime.broadcast.publish import publish_version
from composer_prime.broadcast.server import create_origin_app, create_relay_app
from composer_prime.store import Store
from composer_prime.weights import STABLE, list_versions, load_version_state_dict

SHARD = 100_000


def _same_version(a, b) -> None:
    names = sorted(p.name for p in a.iterdir() if p.name != STABLE)
    assert names and all((b / n).read_bytes() == (a / n).read_bytes() for n in names)
    ref, got = load_version_state_dict(a), load_version_state_dict(b)
    assert ref.keys() == got.keys() and all(torch.equal(ref[k], got[k]) for k in ref)


def test_relay_caches_verified_shards_and_clients_get_identical_weights(published, run_key, tmp_path, serve):
    store = Store(str(tmp_path / "store"))
    manifest = publish_version(published, store, run_key, 3, shard_size=SHARD)
    origin = serve(create_origin_app(store))
    relay = serve(create_relay_app([origin.url], tmp_path / "relay-cache", run_key.public_key()))

    client = BroadcastClient([HttpSource(relay.url)], run_key.public_key(), tmp_path / "w1" / "broadcasts")
    assert client.latest_version() == 3
    report = client.fetch()
    client.close()
    assert report.version == 3 and not report.corrupt
    _same_version(published, report.path)
    assert list_versions(tmp_path / "w1") == [3]  # installed where composer_prime.weights looks
    relay_stats = httpx.get(f"{relay.url}/stats").json()
    # The relay pulled each shard once and served every byte of the version.
    assert relay_stats["bytes_fetched_upstream"] == manifest.body.total_size == relay_stats["bytes_served"]
    assert not list((tmp_path / "w1" / "broadcasts").glob(".*"))  # no partial or temporary leftovers


def test_corrupted_shard_on_relay_is_detected_and_fetched_elsewhere(published, run_key, tmp_path, serve):
    store = Store(str(tmp_path / "store"))
    manifest = publish_version(published, store, run_key, 3, shard_size=SHARD)
    origin = serve(create_origin_app(store))
    relay = serve(create_relay_app([origin.url], tmp_path / "relay-cache", run_key.public_key()))
    warm = BroadcastClient([HttpSource(relay.url)], run_key.public_key(), tmp_path / "warm")
    warm.fetch(3)
    warm.close()
    # Flip one byte of a cached shard: the relay now serves bad bytes for shard 4 (and never re-checks).
    cached = tmp_path / "relay-cache" / "step_3" / "shards" / "4"
    data = bytearray(cached.read_bytes())
    data[1000] ^= 0xFF
    cached.write_bytes(bytes(data))

    # Relay first for every shard, so shard 4 is certainly asked of it first.
    client = BroadcastClient([HttpSource(relay.url), HttpSource(origin.url)], run_key.public_key(),
                             tmp_path / "w2", parallel=3)
    client._order = lambda index: list(client.sources) if client._strikes[relay.url] == 0 else client.sources[::-1]
    report = client.fetch(3)
    client.close()
    assert report.corrupt == [(4, relay.url)]
    assert report.bytes_by_source[origin.url] >= manifest.body.shards[4].size  # refetched from the origin
    _same_version(published, report.path)


def test_manifest_signed_by_another_key_is_refused_and_nothing_installed(published, run_key, tmp_path, serve):
    store = Store(str(tmp_path / "store"))
    publish_version(published, store, keys.generate_key(), 3, shard_size=SHARD)  # not the run key
    origin = serve(create_origin_app(store))
    client = BroadcastClient([HttpSource(origin.url)], run_key.public_key(), tmp_path / "w")
    assert client.latest_version() is None
    with pytest.raises(BroadcastError, match="signature"):
        client.fetch(3)
    client.close()
    assert not (tmp_path / "w" / "step_3").exists()
    assert not httpx.get(f"{origin.url}/stats").json()["shards_served"]  # no shard fetched on a bad manifest


def test_unreachable_server_is_skipped(published, run_key, tmp_path, serve):
    store = Store(str(tmp_path / "store"))
    publish_version(published, store, run_key, 3, shard_size=SHARD)
    origin = serve(create_origin_app(store))
    dead = "http://127.0.0.1:9"  # discard port: nothing listens
    client = BroadcastClient([HttpSource(dead), HttpSource(origin.url)], run_key.public_key(), tmp_path / "w")
    report = client.fetch()
    client.close()
    assert report.failures and all(src == dead for _, src, _ in report.failures)
    _same_version(published, report.path)


def test_range_requests_are_honoured(published, run_key, tmp_path, serve):
    store = Store(str(tmp_path / "store"))
    manifest = publish_version(published, store, run_key, 3, shard_size=SHARD)
    origin = serve(create_origin_app(store))
    full = httpx.get(f"{origin.url}/versions/3/shards/2").content
    part = httpx.get(f"{origin.url}/versions/3/shards/2", headers={"Range": "bytes=4000-"})
    assert part.status_code == 206 and part.content == full[4000:]
    assert part.headers["content-range"] == f"bytes 4000-{len(full) - 1}/{len(full)}"
    assert hashlib.sha256(full).hexdigest() == manifest.body.shards[2].sha256
    assert httpx.get(f"{origin.url}/versions/3/shards/2", headers={"Range": "bytes=999999999-"}).status_code == 416


def test_partial_shard_on_disk_is_resumed_not_refetched(published, run_key, tmp_path, serve):
    store = Store(str(tmp_path / "store"))
    manifest = publish_version(published, store, run_key, 3, shard_size=SHARD)
    origin = serve(create_origin_app(store))
    dest = tmp_path / "w"
    # What a download killed mid-shard leaves: the first 30 kB of shard 1 in its part file.
    partial = dest / ".partial_step_3"
    partial.mkdir(parents=True)
    (partial / "1.part").write_bytes(store.read_bytes("step_3/shards/1")[:30_000])
    client = BroadcastClient([HttpSource(origin.url)], run_key.public_key(), dest)
    report = client.fetch(3)
    client.close()
    assert report.resumed_bytes == 30_000
    assert sum(report.bytes_by_source.values()) == manifest.body.total_size - 30_000
    _same_version(published, report.path)


def test_store_source_pulls_without_a_server(published, run_key, tmp_path):
    store = Store(str(tmp_path / "store"))
    publish_version(published, store, run_key, 3, shard_size=SHARD)
    client = BroadcastClient([StoreSource(store)], run_key.public_key(), tmp_path / "w")
    report = client.fetch()
    _same_version(published, report.path)
    assert client.fetch(3).already_present


def test_a_slow_source_is_dropped_for_a_fast_one_and_nonsense_answers_are_skipped(published, run_key, tmp_path, serve):
    """Issue 30: a slow relay serving shards stalled the client indefinitely (no deadline, no minimum rate), until
    the run banned the honest workers behind it for stale batches. Here the relay sends 20 kB/s in all and the
    origin is unthrottled: the relay falls under the minimum rate, the client resumes from the origin, and the
    version arrives intact. A server whose /versions is not a version list counts as listing nothing."""
    from fastapi import FastAPI
    from fastapi.responses import Response

    store = Store(str(tmp_path / "store"))
    manifest = publish_version(published, store, run_key, 3, shard_size=SHARD)
    origin = serve(create_origin_app(store))
    slow = serve(create_relay_app([origin.url], tmp_path / "relay-cache", run_key.public_key(), egress_bytes_per_s=20_000))
    nonsense = FastAPI()
    nonsense.get("/versions")(lambda: Response(b'{"versions": [7]}', media_type="application/json"))
    liar = serve(nonsense)
    client = BroadcastClient([HttpSource(slow.url, min_bytes_per_s=100_000, grace_s=0.5), HttpSource(liar.url),
                              HttpSource(origin.url)], run_key.public_key(), tmp_path / "w", parallel=2)
    client._order = lambda index: sorted(client.sources, key=lambda s: client._strikes[s.name])  # the relay first
    assert client.latest_version() == 3
    report = client.fetch(3)
    client.close()
    slow_failures = [reason for _, source, reason in report.failures if source == slow.url]
    assert slow_failures and all("under the minimum" in reason for reason in slow_failures)
    assert report.bytes_by_source[origin.url] > manifest.body.total_size / 2
    _same_version(published, report.path)
