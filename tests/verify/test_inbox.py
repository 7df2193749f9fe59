"""The inbox verifies new batches in upload order across workers, each once, and remembers them across restarts."""

from __future__ import annotations

import os

from composer_prime import keys
from composer_prime.store import Store
from composer_prime.configs.verify import VerifyConfig
from composer_prime.verify.inbox import RolloutInbox
from composer_prime.verify.rollout_batch import RolloutBatch, RolloutSample, signed_bytes
from composer_prime.verify.scorer import Scorer
from composer_prime.verify.verifier import RolloutVerifier
from composer_prime.verify.worker_registry import WorkerRegistry
from composer_prime.coordinator.protocol import rollout_key


def test_batches_are_verified_in_upload_order_once(tmp_path):
    store = Store(str(tmp_path / "store"))
    registry = WorkerRegistry()
    worker_keys = {w: keys.generate_key() for w in ("ann", "bob")}
    for worker, key in worker_keys.items():
        registry.register(worker, keys.public_hex(key))
    sample = RolloutSample(prompt_ids=[1], completion_ids=[2], logprobs=[-0.5])
    # Uploaded at t = 30, 10, 20 (seconds): bob's second batch came first, then ann's.
    uploads = [("ann", "b-late", 30), ("bob", "a-first", 10), ("bob", "c-middle", 20)]
    for worker, batch_id, t in uploads:
        # Version 0 while the run is at 5: refused as stale before any scoring, but in the order verified.
        batch = RolloutBatch(worker_id=worker, batch_id=batch_id, weight_version=0, temperature=1.0, samples=[sample])
        store.write_bytes(rollout_key(worker, batch_id), signed_bytes(batch, worker_keys[worker]))
        os.utime(store.path(rollout_key(worker, batch_id)), (t, t))
    verifier = RolloutVerifier(registry, Scorer(), VerifyConfig(), vocab_size=8)
    inbox = RolloutInbox(store, verifier, tmp_path / "inbox.json")
    decisions = inbox.poll(lambda: 5)
    assert [(d.worker_id, d.batch_id, d.batch_reason) for d in decisions] == [
        ("bob", "a-first", "stale"), ("bob", "c-middle", "stale"), ("ann", "b-late", "stale")]
    assert inbox.poll(lambda: 5) == []
    assert RolloutInbox(store, verifier, tmp_path / "inbox.json").poll(lambda: 5) == []


def test_what_a_worker_uploads_under_its_own_prefix_counts_against_it(tmp_path):
    """Uploads go by grant to the uploader's own prefix only, so garbage or another worker's name found there is
    the uploader's doing; a forged batch under the named worker's own prefix still never counts against it."""
    store = Store(str(tmp_path / "store"))
    registry = WorkerRegistry()
    worker_keys = {w: keys.generate_key() for w in ("ann", "eve")}
    for worker, key in worker_keys.items():
        registry.register(worker, keys.public_hex(key))
    sample = RolloutSample(prompt_ids=[1], completion_ids=[2], logprobs=[-0.5])
    claiming_ann = RolloutBatch(worker_id="ann", batch_id="x", weight_version=5, temperature=1.0, samples=[sample])
    store.write_bytes(rollout_key("eve", "1-garbage"), b"not a batch")
    store.write_bytes(rollout_key("eve", "2-claims-ann"), signed_bytes(claiming_ann, worker_keys["eve"]))
    store.write_bytes(rollout_key("ann", "3-forged"), signed_bytes(claiming_ann, worker_keys["eve"]))
    for t, name in enumerate(("eve/1-garbage", "eve/2-claims-ann", "ann/3-forged")):
        os.utime(store.path(f"rollouts/{name}.msgpack"), (t, t))
    verifier = RolloutVerifier(registry, Scorer(), VerifyConfig(), vocab_size=8)
    decisions = RolloutInbox(store, verifier).poll(lambda: 5)
    assert [(d.worker_id, d.batch_reason) for d in decisions] == [
        ("eve", "malformed"), ("eve", "misplaced"), ("ann", "bad-signature")]
    summary = registry.summary()
    assert summary["eve"]["batches_rejected"] == 2 and summary["eve"]["reasons"] == {"malformed": 1, "misplaced": 1}
    assert summary["ann"]["batches_rejected"] == 0 and summary["ann"]["reasons"] == {}
