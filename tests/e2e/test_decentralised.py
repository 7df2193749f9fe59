"""The decentralised run end to end, every part a real process on 127.0.0.1:

2 trainer sites (Streaming DiLoCo through torchft, a lighthouse), broadcast.watch publishing the lead
site's versions into a real S3 server (seaweedfs), an origin and a relay serving them, the orchestrator
admitting volunteers and verifying their rollouts, 2 honest workers and a malicious one. Mid-run the
non-lead site is killed and restarted; it heals from the lead. Before the workers start, every shard
the relay cached is corrupted: workers must catch it and fetch those shards again from the origin.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import httpx
import pytest
import tomli_w

from composer_prime.broadcast import keys
from composer_prime.broadcast.client import BroadcastClient, HttpSource
from composer_prime.broadcast.local_s3 import start_local_s3
from composer_prime.diloco.lighthouse import start_lighthouse
from composer_prime.utils.metrics import read_metrics
from composer_prime.utils.net import free_port
from composer_prime.utils.processes import spawn, stop
from composer_prime.weights import list_versions

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
WARMSTART = REPO / "configs" / "quickstart" / "warmstart"
STEPS = 12
TOKEN = "e2e-join-token"


def _toml(path: Path, config: dict) -> Path:
    path.write_text(tomli_w.dumps(config))
    return path


def _wait(what: str, condition, children, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        dead = [c for c in children if c.poll() not in (None, 0)]
        assert not dead, f"{what}: {[(c.name, c.log_tail(15)) for c in dead]}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def test_two_sites_workers_relay_and_a_malicious_volunteer(tmp_path):
    logs, run = tmp_path / "logs", tmp_path / "run"
    s3 = start_local_s3(tmp_path / "s3", bucket="run")
    env = {**s3.env, "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}
    store = {"url": "s3://run", "endpoint_url": s3.endpoint_url}
    run_key = keys.load_or_create_private_key(tmp_path / "run.key")
    run_public = keys.public_hex(run_key)
    lighthouse_port, origin_port, relay_port, coordinator_port = (free_port() for _ in range(4))
    origin, relay = f"http://127.0.0.1:{origin_port}", f"http://127.0.0.1:{relay_port}"
    children = []

    def start(name: str, argv: list[str]):
        child = spawn(name, [sys.executable, *argv], logs, env=env)
        children.append(child)
        return child

    def trainer_site(name: str, shard: int) -> Path:
        out = run if shard == 0 else tmp_path / name
        return _toml(tmp_path / f"{name}.toml", {
            "model": {"path": str(WARMSTART)}, "output_dir": str(out), "max_steps": STEPS, "num_threads": 1,
            "optim": {"lr": 1e-3, "max_norm": 1.0}, "keep_weight_versions": 8, "batch_timeout_s": 600.0,
            "ckpt": {"interval": 4, "keep_last": 2}, "log": {"progress": False}, "publish_weights": shard == 0,
            "data": {"dir": str(run), "shard": shard, "shards": 2},
            "diloco": {"mode": "torchft", "site_id": name, "lighthouse": f"http://127.0.0.1:{lighthouse_port}",
                       "sync_every": 2, "fragments": 2, "min_replicas": 2, "timeout_s": 120.0,
                       "outer": {"lr": 1.0, "momentum": 0.0, "nesterov": False}},
        })

    try:
        children.append(start_lighthouse(f"127.0.0.1:{lighthouse_port}", 2, logs))
        site_a = start("site-a", ["-m", "composer_prime.trainer.main", "@", str(trainer_site("a", 0))])
        site_b_config = trainer_site("b", 1)
        site_b = start("site-b", ["-m", "composer_prime.trainer.main", "@", str(site_b_config)])
        start("watch", ["-m", "composer_prime.broadcast.watch", "@", str(_toml(tmp_path / "watch.toml", {
            "output_dir": str(run), "store": {**store, "url": "s3://run/broadcasts"},
            "run_key": str(tmp_path / "run.key"), "poll_s": 0.3, "keep_last": 8}))])
        start("origin", ["-m", "composer_prime.broadcast.serve", "@", str(_toml(tmp_path / "origin.toml", {
            "role": "origin", "port": origin_port, "store": {**store, "url": "s3://run/broadcasts"}}))])
        start("relay", ["-m", "composer_prime.broadcast.serve", "@", str(_toml(tmp_path / "relay.toml", {
            "role": "relay", "port": relay_port, "upstreams": [origin], "cache_dir": str(tmp_path / "relay-cache"),
            "run_public_key": run_public}))])
        start("orchestrator", ["-m", "composer_prime.orchestrator.main", "@", str(_toml(tmp_path / "orch.toml", {
            "model": {"path": str(WARMSTART)}, "output_dir": str(run), "max_steps": STEPS, "batch_size": 64,
            "group_size": 8, "seq_len": 512, "micro_batch_rows": 4, "train_world_size": 2, "async_level": 1,
            "max_off_policy_steps": 3, "env": {"id": "reverse-text"}, "eval": {"num_examples": 0},
            "sampling": {"temperature": 1.0, "max_tokens": 16}, "advantage": {"std_normalize": True},
            "log": {"progress": False}, "source": "workers",
            "workers": {"port": coordinator_port, "join_token": TOKEN, "run_public_key": run_public, "store": store,
                        "broadcast_servers": [relay, origin], "prompts_per_batch": 4, "poll_s": 0.3,
                        "verify": {"max_staleness": 3, "ban_min_samples": 16}},
        }))])

        # Version 0 reaches the store; a first client through the relay fills its cache, which is then corrupted.
        _wait("version 0 on the origin", lambda: _versions(origin) == [0], children, 180)
        warm = BroadcastClient([HttpSource(relay)], run_key.public_key(), tmp_path / "warm")
        warm.fetch(0)
        warm.close()
        cached = sorted((tmp_path / "relay-cache" / "step_0" / "shards").iterdir())
        for shard in cached:
            shard.write_bytes(b"\0" * shard.stat().st_size)

        run_url = f"http://127.0.0.1:{coordinator_port}"
        for name in ("honest-1", "honest-2"):
            start(name, ["-m", "composer_prime.worker.main", "@", str(_toml(tmp_path / f"{name}.toml", {
                "run_url": run_url, "join_token": TOKEN, "worker_id": name, "state_dir": str(tmp_path / name),
                "heartbeat_s": 0.5, "num_threads": 1, "retry_s": 0.5, "max_batches_per_version": 1}))])
        start("malicious", [str(REPO / "tests" / "worker" / "malicious.py"), "--run-url", run_url, "--join-token",
                            TOKEN, "--worker-id", "mallory", "--victim", "honest-1", "--model", str(WARMSTART),
                            "--state-dir", str(tmp_path / "mallory"), "--batches", "8"])

        # Kill the non-lead site after its step-4 checkpoint; the lead then waits in its quorum until it is back.
        _wait("site b at step 5", lambda: any(r.get("step", 0) >= 5 for r in read_metrics(tmp_path / "b", "trainer")),
              children, 600)
        stop([site_b], grace_s=0)
        children.remove(site_b)
        site_b2 = start("site-b-restarted", ["-m", "composer_prime.trainer.main", "@", str(site_b_config)])
        _wait("both sites done", lambda: site_a.poll() == 0 and site_b2.poll() == 0, children, 900)
    finally:
        stop(children)
        s3.stop()

    # Every honest batch accepted; the malicious worker's samples all rejected, and it is banned.
    workers = json.loads((run / "workers" / "registry.json").read_text())
    for name in ("honest-1", "honest-2"):
        stats = workers[name]["stats"]
        assert stats["batches_accepted"] > 0 and stats["batches_rejected"] == 0 and stats["samples_rejected"] == 0, stats
    sent = json.loads((tmp_path / "mallory" / "sent.json").read_text())
    assert all(sent.values()), sent  # every attack was tried
    assert workers["mallory"]["stats"]["samples_accepted"] <= 0.01 * sum(sent.values()), (workers["mallory"], sent)
    assert workers["mallory"]["banned"]
    # The corrupted relay shards were caught by hash and fetched again.
    worker_logs = "".join((logs / f"{n}.log").read_text() for n in ("honest-1", "honest-2"))
    assert "failed its hash; fetched again elsewhere" in worker_logs
    # The killed site healed from the lead; both trained every step to the end; only the lead published.
    assert "healing is required" in (logs / "site-b-restarted.log").read_text()
    assert list_versions(run)[-1] == STEPS and not list_versions(tmp_path / "b")
    steps = [r["step"] for r in read_metrics(run, "orchestrator") if "reward/mean" in r]
    assert steps == list(range(1, STEPS + 1))


def _versions(url: str) -> list[int]:
    try:
        return httpx.get(f"{url}/versions", timeout=5).json()
    except httpx.HTTPError:
        return []
