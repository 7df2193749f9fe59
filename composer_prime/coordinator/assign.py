"""Assignments: the coordinator, not the worker, picks what each batch samples and the noise it samples with.

`POST /assign` (signed with the worker's key) answers a SignedAssignment (verify/rollout_batch.py), signed
with the run's key: `prompts_per_batch` examples of the run's train split, drawn here at random, the
samples per example, the run's sampling settings, a fresh 64-bit noise key, and the weight version announced
now. The worker draws sample j of the batch with Gumbel noise (key, j) (inference/sampling.py), so the verifier
can re-derive every token from the trusted weights (verify/sampled.py), with that version or a newer one (it
fetches it first), and uploads it under the assignment's id, which is the only batch id it is granted an
upload for (coordinator/grants.py).

A worker samples at most `max_open` unexpired assignments at once (one it has been granted an upload for
no longer counts, so a worker never waits on the verifier). One it never answers counts its samples as
failures once it has expired (verify/inbox.py: `abandoned`): a worker that draws many assignments and
uploads only the batches it likes is banned like one that fabricates them. Answering the ones it dislikes with a
batch claiming an older version than announced is counted the same way (verify/verifier.py: `wrong-version`):
only a batch that went stale after it was assigned is dropped uncounted.
"""

from __future__ import annotations

import secrets
import time

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from composer_prime.configs.coordinator import AssignmentsConfig
from composer_prime.verify.rollout_batch import Assignment, sign_assignment
from composer_prime.verify.worker_registry import WorkerRegistry


class Assigner:
    def __init__(self, run_key: Ed25519PrivateKey, num_examples: int, prompts_per_batch: int, samples_per_prompt: int,
                 temperature: float, top_p: float, max_tokens: int, config: AssignmentsConfig):
        if num_examples < 1:
            raise ValueError("the run's train split has no examples to assign")
        self.run_key, self.num_examples, self.config = run_key, num_examples, config
        self.prompts_per_batch, self.samples_per_prompt = prompts_per_batch, samples_per_prompt
        self.temperature, self.top_p, self.max_tokens = temperature, top_p, max_tokens
        self._random = secrets.SystemRandom()

    def examples(self) -> list[int]:
        """Distinct examples while the split has enough (one group each), else drawn with replacement."""
        if self.num_examples >= self.prompts_per_batch:
            return self._random.sample(range(self.num_examples), self.prompts_per_batch)
        return [self._random.randrange(self.num_examples) for _ in range(self.prompts_per_batch)]

    def issue(self, registry: WorkerRegistry, worker_id: str, version: int) -> bytes:
        """A signed assignment for `worker_id`, recorded as open in `registry`; `version`: the weight version
        announced now, the oldest its batch may be sampled with."""
        if version < 0:
            raise ValueError(f"an assignment needs an announced weight version, got {version}")
        now = time.time()
        assignment = Assignment(
            assignment_id=secrets.token_hex(16), worker_id=worker_id, example_ids=self.examples(),
            samples_per_prompt=self.samples_per_prompt, key=secrets.randbits(64), temperature=self.temperature,
            top_p=self.top_p, max_tokens=self.max_tokens, weight_version=version, expires_at=now + self.config.ttl_s)
        registry.add_assignment(worker_id, assignment.assignment_id, assignment.expires_at, assignment.num_samples)
        return sign_assignment(assignment, self.run_key)
