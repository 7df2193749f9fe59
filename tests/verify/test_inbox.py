"""The inbox verifies new batches in upload order across workers, each once, and remembers them across restarts."""

from __future__ import annotations

import os

from composer_prime import keys
from composer_prime.configs.verify import VerifyConfig
from composer_prime.store import Store
from composer_prime.verify.inbox import RolloutInbox
from composer_prime.verify.rollout_batch import RolloutBatch, RolloutSample
from composer_prime.verify.scorer import Scorer
from composer_prime.verify.signing import signed_bytes
from composer_prime.verify.verifier import RolloutVerifier
from composer_prime.verify.worker_registry import WorkerRegistry
from composer_prime.worker.protocol import rollout_key


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
