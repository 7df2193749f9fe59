"""The decentralised run end to end, every part a real process on 127.0.0.1 (tests/e2e/cluster.py):

2 trainer sites (Streaming DiLoCo through torchft, a lighthouse), broadcast.watch publishing the lead
site's versions into a real S3 server (seaweedfs), an origin and a relay serving them, the orchestrator
admitting volunteers and verifying their rollouts (with TOPLOC proofs when the extra is installed),
2 honest workers and a malicious one. Mid-run the
non-lead site is killed and restarted; it heals from the lead. Before the workers start, every shard
the relay cached is corrupted: workers must catch it and fetch those shards again from the origin.

Every process holds only its role's store key; the workers hold none and upload through grants. A
second malicious worker turns on the store itself (tests/worker/store_attacks.py: a forged step with
its marker, another worker's batch, a weight shard, outside its prefix, an expired grant, too many
bytes): the store or the coordinator refuses every attempt. And with the orchestrator's key, as if it
leaked, a forged step 3 is written ahead of the real one: the remote site refuses it (not sealed) and
trains the orchestrator's.
"""

from __future__ import annotations

import importlib.util
import json
import re

import httpx
import pytest
from cluster import GRANT_TTL_S, MAX_BATCH_BYTES, REPO, TOKEN, LocalRun
from store_attacks import Target, attack_store

from composer_prime.batch import store_batch_key, store_complete_key
from composer_prime import keys
from composer_prime.broadcast.client import BroadcastClient, HttpSource
from composer_prime.store import Store
from composer_prime.utils.metrics import read_metrics
from composer_prime.utils.processes import stop
from composer_prime.verify.step_seal import seal_step
from composer_prime.weights import list_versions
from composer_prime.coordinator.protocol import JoinRequest, worker_id

# About 6 min on 2 quiet cores: the suite-wide 600 s would kill it on a slower CI host.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]
STEPS = 12
FORGED = 3  # the step forged ahead of the orchestrator: early, so the site meets it before the real one
TOPLOC = importlib.util.find_spec("toploc") is not None  # the optional extra (CI installs it)


def accepted_per_batch(log: str, worker: str) -> dict[str, int]:
    """Samples the verifier accepted from each of `worker`'s batches, from its verdict lines (verifier._record)."""
    accepted: dict[str, int] = {}
    for batch, count in re.findall(rf"worker {re.escape(worker)} batch (\w+): (\d+) accepted", log):
        accepted[batch] = accepted.get(batch, 0) + int(count)
    return accepted


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

        honest = {name: cluster.worker_id(name) for name in ("honest-1", "honest-2")}
        mallory = cluster.worker_id("mallory")  # its key, in its state dir, made before it starts
        for index, name in enumerate(honest):
            cluster.start_worker(name, seed=index)
        cluster.spawn("malicious", [str(REPO / "tests" / "worker" / "malicious.py"), "--run-url", cluster.run_url,
                                    "--join-token", TOKEN, "--name", "mallory", "--victim", honest["honest-1"],
                                    "--run-public-key", keys.public_hex(cluster.run_key),
                                    "--state-dir", str(tmp_path / "mallory"),
                                    "--verify-config", json.dumps(cluster.verify_config()),
                                    "--batches", "8"])

        # With the orchestrator's key (leaked), a forged step lands ahead of the real one; its seal is eve's.
        admin = Store("s3://run", cluster.s3.endpoint_url, key=cluster.s3.access_key, secret=cluster.s3.secret_key)
        key, secret = cluster.s3.roles["orchestrator"]
        leaked = Store("s3://run", cluster.s3.endpoint_url, key=key, secret=secret)
        eve = keys.generate_key()
        forged = b"a forged batch"
        leaked.write_bytes(store_batch_key(FORGED, 1), forged)
        leaked.write_bytes(store_complete_key(FORGED), seal_step(eve, FORGED, [forged, forged]))

        # Eve, a volunteer like any other, joins and turns on the store once honest-1 has a batch verified.
        cluster.wait("an honest batch verified", lambda: cluster.workers().get(honest["honest-1"], {}).get(
            "batches_accepted", 0), 600)
        httpx.post(f"{cluster.run_url}/join", json=JoinRequest(
            join_token=TOKEN, name="eve", public_key=keys.public_hex(eve), nonce="0" * 32).model_dump()).raise_for_status()
        eve_id = worker_id("eve", keys.public_hex(eve))
        # Processed batches are deleted: the victim is honest-1's prefix (nothing eve writes may land there).
        victim = f"rollouts/{honest['honest-1']}/{'0' * 32}.msgpack"
        shard = "broadcasts/step_0/shards/0"
        before = admin.read_bytes(shard)
        attacks = attack_store(Target(run_url=cluster.run_url, store_url=f"{cluster.s3.endpoint_url}/run",
                                      worker_id=eve_id, key=eve, victim_key=victim, shard_key=shard, step=STEPS + 1,
                                      grant_ttl_s=GRANT_TTL_S, max_bytes=MAX_BATCH_BYTES))
        admin.fs.invalidate_cache()
        untouched = (admin.read_bytes(shard) == before and not admin.exists(victim)
                     and not admin.list(f"steps/step_{STEPS + 1}")
                     and set(admin.list("rollouts")) <= {eve_id, mallory, *honest.values()})
        (tmp_path / "store-attacks.json").write_text(json.dumps(attacks, indent=1))

        # Kill the non-lead site after its step-4 checkpoint; the lead then waits in its quorum until it is back.
        cluster.wait("site b at step 5",
                     lambda: any(r.get("step", 0) >= 5 for r in read_metrics(tmp_path / "b", "trainer")), 600)
        stop([cluster.trainers["b"]], grace_s=0)
        cluster.children.remove(cluster.trainers["b"])
        cluster.start_trainer("b", log_name="site-b-restarted")
        cluster.wait("both sites done", cluster.trainers_done, 900)
    finally:
        cluster.stop()

    # Every attack on the store refused, and nothing it aimed at changed.
    assert all(c["attempts"] > 0 and c["refused"] == c["attempts"] for c in attacks.values()), attacks
    assert len(attacks) == 6 and untouched
    # The forged step was refused (eve's seal) and the orchestrator's trained in its place.
    logs = tmp_path / "logs"
    assert f"refused step {FORGED} from s3://run: step {FORGED}: the seal's signature is not the orchestrator's" in (
        logs / "site-b.log").read_text()
    assert (tmp_path / "b" / "rollouts" / f"step_{FORGED}" / "rank_1.msgpack").read_bytes() == (
        tmp_path / "run" / "rollouts" / f"step_{FORGED}" / "rank_1.msgpack").read_bytes()

    # Every honest sample accepted (none rejected, no batch dropped); of the malicious worker's, none but the ones
    # that are no forgery (fabricated near-certainty where the model is near-certain), and it is banned.
    workers = json.loads((tmp_path / "run" / "workers" / "registry.json").read_text())
    for wid in honest.values():
        stats = workers[wid]["stats"]
        assert stats["batches_accepted"] > 0 and stats["batches_rejected"] == 0 and stats["samples_rejected"] == 0, stats
        assert stats["batches_dropped"] == 0 and stats["reasons"] == {}, stats
    sent = json.loads((tmp_path / "mallory" / "sent.json").read_text())
    assert all(attack["samples"] for attack in sent.values()), sent  # every attack was tried
    verdicts = accepted_per_batch((logs / "orchestrator.log").read_text(), mallory)
    assert sum(verdicts.values()) == workers[mallory]["stats"]["samples_accepted"], (verdicts, workers[mallory])
    true_claims = {batch: (name, n) for name, attack in sent.items() for batch, n in attack["honest"].items()}
    forged = {batch: (true_claims.get(batch), n) for batch, n in verdicts.items()
              if n > true_claims.get(batch, (None, 0))[1]}
    assert not forged, (forged, sent)  # batch -> ((attack, samples that are no forgery), samples accepted)
    assert workers[mallory]["banned"]
    # Before the ban (96 samples) the first three counted attacks met their own checks: chosen tokens with their true
    # log-probs (not sampled), fabricated log-probs, and with proofs, proofs from other weights. The forged batch never
    # counts against the worker it names (it lands under mallory's own prefix, so it counts against mallory).
    expected = {"not-sampled", "logprob-mismatch", "toploc-mismatch"} if TOPLOC else {"not-sampled", "logprob-mismatch"}
    assert workers[mallory]["stats"]["reasons"].keys() >= expected, workers[mallory]
    # The corrupted relay shards were caught by hash and fetched again.
    assert "failed its hash; fetched again elsewhere" in "".join(
        (logs / f"{n}.log").read_text() for n in honest)
    # The killed site healed from the lead; both trained every step to the end; only the lead published.
    assert "healing is required" in (logs / "site-b-restarted.log").read_text()
    assert list_versions(tmp_path / "run")[-1] == STEPS and not list_versions(tmp_path / "b")
    steps = [r["step"] for r in read_metrics(tmp_path / "run", "orchestrator") if "reward/mean" in r]
    assert steps == list(range(1, STEPS + 1))
