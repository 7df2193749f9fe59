"""Rollouts from machines we do not control: signed by workers, checked by the orchestrator.

rollout_batch.py    RolloutBatch / SignedBatch wire format (msgspec msgpack, typed, versioned); a worker signs with it
worker_registry.py  registered workers, their public keys, bans and per-worker accept/reject counts
scorer.py           trusted log-probs of submitted tokens (a local model on the trusted weights)
inbox.py            verify each new batch workers uploaded to the store
verifier.py         the orchestrator's gate: signature, freshness, duplicates, log-prob recomputation, bans
"""
