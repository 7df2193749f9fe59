"""The decentralised run end to end, every part a real process on 127.0.0.1 (tests/e2e/cluster.py):

2 trainer sites (Streaming DiLoCo through torchft, a lighthouse), broadcast.watch publishing the lead
site's versions into a real S3 server (seaweedfs), an origin and a relay serving them, the orchestrator
admitting volunteers and verifying their rollouts (with TOPLOC proofs when the extra is installed),
2 honest workers and a malicious one. Mid-run the
non-lead site is killed and restarted; it heals from the lead. Before the workers start, every shard
the relay cached is corrupted: workers must catch it and fetch those shards again from the origin.
"""

from __future__ import annotations

import importlib.util
import json

import pytest
from cluster import REPO, TOKEN, WARMSTART, LocalRun

from composer_prime.broadcast.client import BroadcastClient, HttpSource
from composer_prime.utils.metrics import read_metrics
from composer_prime.utils.processes import stop
from composer_prime.weights import list_versions

pytestmark = pytest.mark.slow
STEPS = 12
TOPLOC = importlib.util.find_spec("toploc") is not None  # the optional extra (CI installs it)


def test_two_sites_workers_relay_and_a_malicious_volunteer(tmp_path):
    cluster = LocalRun(tmp_path, STEPS, sites=2, toploc=TOPLOC)
    try:
        cluster.start()
        # Version 0 reaches the store; a first client through the relay fills its cache, which is then corrupted.
        cluster.wait("version 0 on the origin", lambda: cluster.origin_versions() == [0], 180)
        warm = BroadcastClient([HttpSource(cluster.relay)], cluster.run_key.public_key(), tmp_path / "warm")
        warm.fetch(0)
        warm.close()
        for shard in (tmp_path / "relay-cache" / "step_0" / "shards").iterdir():
            shard.write_bytes(b"\0" * shard.stat().st_size)

        for index, name in enumerate(("honest-1", "honest-2")):
            cluster.start_worker(name, seed=index)
        cluster.spawn("malicious", [str(REPO / "tests" / "worker" / "malicious.py"), "--run-url", cluster.run_url,
                                    "--join-token", TOKEN, "--worker-id", "mallory", "--victim", "honest-1",
                                    "--model", str(WARMSTART), "--state-dir", str(tmp_path / "mallory"),
                                    "--batches", "8"])

        # Kill the non-lead site after its step-4 checkpoint; the lead then waits in its quorum until it is back.
        cluster.wait("site b at step 5",
                     lambda: any(r.get("step", 0) >= 5 for r in read_metrics(tmp_path / "b", "trainer")), 600)
        stop([cluster.trainers["b"]], grace_s=0)
        cluster.children.remove(cluster.trainers["b"])
        cluster.start_trainer("b", log_name="site-b-restarted")
        cluster.wait("both sites done", cluster.trainers_done, 900)
    finally:
        cluster.stop()

    # Every honest batch accepted; the malicious worker's samples all rejected, and it is banned.
    workers = json.loads((tmp_path / "run" / "workers" / "registry.json").read_text())
    for name in ("honest-1", "honest-2"):
        stats = workers[name]["stats"]
        assert stats["batches_accepted"] > 0 and stats["batches_rejected"] == 0 and stats["samples_rejected"] == 0, stats
    sent = json.loads((tmp_path / "mallory" / "sent.json").read_text())
    assert all(sent.values()), sent  # every attack was tried
    assert workers["mallory"]["stats"]["samples_accepted"] <= 0.01 * sum(sent.values()), (workers["mallory"], sent)
    assert workers["mallory"]["banned"]
    # Before the ban (96 samples) the first three attacks met their own checks (with proofs: fabricated log-probs,
    # proofs from other weights, a stale version); the forged batch never counts against anyone.
    expected = {"logprob-mismatch", "stale", "toploc-mismatch"} if TOPLOC else {"logprob-mismatch", "stale"}
    assert workers["mallory"]["stats"]["reasons"].keys() >= expected, workers["mallory"]
    assert workers["honest-1"]["stats"]["reasons"] == {}
    # The corrupted relay shards were caught by hash and fetched again.
    logs = tmp_path / "logs"
    assert "failed its hash; fetched again elsewhere" in "".join(
        (logs / f"{n}.log").read_text() for n in ("honest-1", "honest-2"))
    # The killed site healed from the lead; both trained every step to the end; only the lead published.
    assert "healing is required" in (logs / "site-b-restarted.log").read_text()
    assert list_versions(tmp_path / "run")[-1] == STEPS and not list_versions(tmp_path / "b")
    steps = [r["step"] for r in read_metrics(tmp_path / "run", "orchestrator") if "reward/mean" in r]
    assert steps == list(range(1, STEPS + 1))
