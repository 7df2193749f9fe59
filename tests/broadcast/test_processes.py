"""Broadcast across real processes: a killed download resumes; versions go through a real S3 server."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import httpx
import pytest
import tomli_w
import torch

from composer_prime import keys
from composer_prime.broadcast.client import BroadcastClient, HttpSource, StoreSource
from local_s3 import start_local_s3
from composer_prime.broadcast.manifest import stored_versions
from composer_prime.broadcast.publish import publish_version
from composer_prime.broadcast.server import create_origin_app
from composer_prime.store import Store
from composer_prime.utils.net import free_port
from composer_prime.utils.processes import spawn, stop
from composer_prime.weights import load_version_state_dict

pytestmark = pytest.mark.slow


def _toml(path, data) -> str:
    path.write_text(tomli_w.dumps(data))
    return str(path)


def _wait_http(url: str, child, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert child.poll() is None, child.log_tail(5)
        try:
            httpx.get(url, timeout=1).raise_for_status()
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise TimeoutError(url)


def test_killed_download_resumes_where_it_stopped(published, run_key, tmp_path):
    store = Store(str(tmp_path / "store"))
    manifest = publish_version(published, store, run_key, 3, shard_size=100_000)
    port = free_port()
    origin_cfg = _toml(tmp_path / "origin.toml", {"role": "origin", "port": port, "store": {"url": str(tmp_path / "store")},
                                                  "egress_bytes_per_s": 250_000.0})  # ~5 s for the version
    origin = spawn("origin", [sys.executable, "-m", "composer_prime.broadcast.serve", "@", origin_cfg], tmp_path / "logs")
    url = f"http://127.0.0.1:{port}"
    dest = tmp_path / "worker" / "broadcasts"
    fetch_cfg = _toml(tmp_path / "fetch.toml", {"servers": [url], "run_public_key": keys.public_hex(run_key),
                                                "dest": str(dest), "version": 3, "parallel": 2})
    argv = [sys.executable, "-m", "composer_prime.broadcast.fetch", "@", fetch_cfg]
    try:
        _wait_http(f"{url}/health", origin)
        first = spawn("fetch-1", argv, tmp_path / "logs")
        partial = dest / ".partial_step_3"
        deadline = time.monotonic() + 60
        while len(list(partial.glob("*.ok"))) < 3:
            assert first.poll() is None, first.log_tail(5)
            assert time.monotonic() < deadline
            time.sleep(0.05)
        stop([first], grace_s=0)  # SIGKILL-equivalent: no chance to clean up
        assert not (dest / "step_3").exists()  # nothing half-installed
        on_disk = sum(p.stat().st_size for p in partial.iterdir() if p.suffix in (".ok", ".part"))
        assert 0 < on_disk < manifest.body.total_size

        second = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert second.returncode == 0, second.stderr
        report = json.loads(second.stdout.strip().splitlines()[-1])
        # Only the missing bytes travel again: whole shards kept, part files continued with Range.
        assert sum(report["bytes_by_source"].values()) == manifest.body.total_size - on_disk
        ref, got = load_version_state_dict(published), load_version_state_dict(dest / "step_3")
        assert all(torch.equal(ref[k], got[k]) for k in ref)
    finally:
        stop([origin])


def test_versions_through_a_real_s3_server(published, run_key, tmp_path, serve):
    s3 = start_local_s3(tmp_path / "s3", bucket="run")
    try:
        store = Store("s3://run/broadcasts", endpoint_url=s3.endpoint_url, key=s3.access_key, secret=s3.secret_key)
        manifest = publish_version(published, store, run_key, 3, shard_size=300_000)
        assert stored_versions(store) == [3]
        # Straight from the object store ...
        direct = BroadcastClient([StoreSource(store)], run_key.public_key(), tmp_path / "direct")
        report = direct.fetch()
        assert report.version == 3 and sum(report.bytes_by_source.values()) == manifest.body.total_size
        # ... and through an origin whose store is the S3 bucket.
        origin = serve(create_origin_app(store))
        via = BroadcastClient([HttpSource(origin.url)], run_key.public_key(), tmp_path / "via")
        via_report = via.fetch(3)
        via.close()
        for path in (report.path, via_report.path):
            got = load_version_state_dict(path)
            ref = load_version_state_dict(published)
            assert all(torch.equal(ref[k], got[k]) for k in ref)
        # Credentials are enforced: the wrong secret cannot read the bucket.
        intruder = Store("s3://run/broadcasts", endpoint_url=s3.endpoint_url, key=s3.access_key, secret="wrong",
                         skip_instance_cache=True)
        with pytest.raises(PermissionError):
            intruder.read_bytes("step_3/manifest.json")
    finally:
        s3.stop()
