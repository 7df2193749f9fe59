"""Rollouts from machines we do not control: signed by workers, checked by the orchestrator.

rollout_batch.py    RolloutBatch / SignedBatch / Assignment wire formats (msgspec msgpack, typed, versioned)
worker_registry.py  registered workers, their public keys, open assignments, bans and accept/reject counts
scorer.py           trusted log-probs of submitted tokens (a local model on the trusted weights), sampling gaps
sampled.py          proof that tokens were sampled: Gumbel-max with the assigned noise, re-derived
inbox.py            verify each new batch workers uploaded to the store, delete it, count abandoned assignments
verifier.py         the orchestrator's gate: signature, assignment, freshness, duplicates, shape, log-probs,
                    sampling, proofs, bans
"""
