"""The orchestrator's gate for rollouts from volunteer workers.

A batch is taken apart in this order, cheapest check first:
  1. decodes as a SignedBatch                         else `malformed`
  2. the worker is registered and not banned          else `unregistered` / `banned`
  3. the signature verifies with its registered key   else `bad-signature`
  4. the batch id was not seen before                 else `duplicate` (a retried upload; not a failure)
  5. its weight version is current or at most `max_staleness` behind   else `stale` / `future`
  6. per sample: well-formed (lengths, token ids in the vocabulary, finite log-probs <= 0), and, for a
     `check_fraction` of samples, the submitted log-probs agree with the trusted recomputation
     (mean |diff| <= logprob_mean_tolerance and max |diff| <= logprob_max_tolerance)
                                                     else `malformed-sample` / `logprob-mismatch`
  7. with `toploc` set: every sample carries its TOPLOC proofs, and for `toploc.check_fraction` of
     them the proofs match the trusted weights' hidden states (verify/toploc.py)
                                                     else `toploc-missing` / `toploc-mismatch`
Fabricated log-probs and altered tokens both show up at step 6: the submitted numbers no longer
match what the trusted weights give for the submitted tokens.

A worker whose sample failure rate passes `ban_failure_rate` (after `ban_min_samples`) is banned.
A bad signature is never counted against the worker it names: anyone can forge the name, and
counting it would let an attacker get an honest worker banned. What the inbox found under a worker's own
store prefix (only that worker can write there) counts against that worker: an undecodable batch
(`malformed`), or one naming another worker (`misplaced`).
"""

from __future__ import annotations

import hashlib
import logging
import math
import random
from dataclasses import dataclass, field

import msgspec

from composer_prime import keys
from composer_prime.configs.verify import VerifyConfig
from composer_prime.errors import UserError
from composer_prime.verify.rollout_batch import ROLLOUT_SCHEMA, RolloutSample, decode_batch, decode_signed
from composer_prime.verify.scorer import Scorer
from composer_prime.verify.toploc import proof_mismatch, require_toploc
from composer_prime.verify.worker_registry import WorkerRegistry

logger = logging.getLogger(__name__)


@dataclass
class Decision:
    worker_id: str
    batch_id: str
    weight_version: int = -1
    accepted: list[RolloutSample] = field(default_factory=list)
    rejected: list[tuple[int, str]] = field(default_factory=list)
    """(sample index, reason)."""
    batch_reason: str | None = None
    """Set when the whole batch was refused before looking at samples."""

    @property
    def ok(self) -> bool:
        return self.batch_reason is None and not self.rejected


class RolloutVerifier:
    def __init__(self, registry: WorkerRegistry, scorer: Scorer, config: VerifyConfig, vocab_size: int):
        self.registry = registry
        self.scorer = scorer
        self.config = config
        self.vocab_size = vocab_size
        self.seen: set[tuple[str, str]] = set()
        if config.toploc is not None:
            require_toploc()
            if type(scorer).hidden_states is Scorer.hidden_states:
                raise UserError(f"TOPLOC checks need hidden states, which {type(scorer).__name__} cannot give")

    def verify(self, data: bytes, current_version: int, uploader: str | None = None) -> Decision:
        """`uploader`: the worker whose store prefix held the batch. Workers upload by grant under their own
        prefix only (coordinator/grants.py), so a batch there that does not decode, or names another worker, is
        that worker's doing and counts against it."""
        blame = uploader if uploader in self.registry.workers else None
        try:
            signed = decode_signed(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            if blame is not None:
                return self._refuse(Decision(blame, "?"), "malformed", 1)
            return Decision("?", "?", batch_reason="malformed")
        if blame is not None and signed.worker_id != blame:
            return self._refuse(Decision(blame, "?"), "misplaced", 1)
        entry = self.registry.workers.get(signed.worker_id)
        if entry is None or entry.banned:
            return Decision(signed.worker_id, "?", batch_reason="unregistered" if entry is None else "banned")
        if not keys.verify(keys.parse_public_key(entry.public_key), signed.signature, signed.payload):
            # Not counted against the named worker (see module docstring).
            return Decision(signed.worker_id, "?", batch_reason="bad-signature")
        decision = Decision(signed.worker_id, "?")
        try:
            batch = decode_batch(signed.payload)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return self._refuse(decision, "malformed", 1)
        decision.batch_id, decision.weight_version = batch.batch_id, batch.weight_version
        if batch.worker_id != signed.worker_id or batch.schema_version != ROLLOUT_SCHEMA:
            return self._refuse(decision, "malformed", len(batch.samples))
        if (batch.worker_id, batch.batch_id) in self.seen:
            decision.batch_reason = "duplicate"
            return decision
        if batch.weight_version > current_version:
            return self._refuse(decision, "future", len(batch.samples))
        if current_version - batch.weight_version > self.config.max_staleness:
            return self._refuse(decision, "stale", len(batch.samples))
        self.seen.add((batch.worker_id, batch.batch_id))
        rng = random.Random(hashlib.sha256(f"{self.config.secret}/{batch.worker_id}/{batch.batch_id}".encode()).digest())
        reasons = self._check_samples(batch.samples, batch.weight_version, batch.temperature, rng)
        for index, (sample, reason) in enumerate(zip(batch.samples, reasons, strict=True)):
            if reason is None:
                decision.accepted.append(sample)
            else:
                decision.rejected.append((index, reason))
        self._record(decision)
        return decision

    def _check_samples(self, samples: list[RolloutSample], version: int, temperature: float,
                       rng: random.Random) -> list[str | None]:
        """Per sample: None (accepted) or the reason. Cheap checks first, then the chosen samples' log-probs
        in one batched scoring call, then their proofs."""
        toploc = self.config.toploc
        reasons: list[str | None] = []
        score, prove = [], []
        for index, sample in enumerate(samples):
            reason = self._malformed(sample)
            if reason is None and toploc is not None and not sample.proofs:
                reason = "toploc-missing"
            reasons.append(reason)
            if reason is not None:
                continue
            # Both draws happen for every well-formed sample, so which samples get which check stays unpredictable.
            if rng.random() < self.config.check_fraction:
                score.append(index)
            if toploc is not None and rng.random() < toploc.check_fraction:
                prove.append(index)
        if score:
            trusted = self.scorer.logprobs_many(
                version, [(samples[i].prompt_ids, samples[i].completion_ids) for i in score], temperature)
            for index, logprobs in zip(score, trusted, strict=True):
                diffs = [abs(a - b) for a, b in zip(samples[index].logprobs, logprobs)]
                if (sum(diffs) / len(diffs) > self.config.logprob_mean_tolerance
                        or max(diffs) > self.config.logprob_max_tolerance):
                    reasons[index] = "logprob-mismatch"
        for index in prove:
            if reasons[index] is not None:
                continue
            sample = samples[index]
            hidden = self.scorer.hidden_states(version, sample.prompt_ids + sample.completion_ids)
            if (why := proof_mismatch(hidden, len(sample.prompt_ids), sample.proofs, toploc)) is not None:
                logger.info("TOPLOC proof of a sample failed: %s", why)
                reasons[index] = "toploc-mismatch"
        return reasons

    def _malformed(self, sample: RolloutSample) -> str | None:
        n = len(sample.completion_ids)
        if (not sample.prompt_ids or n == 0 or len(sample.logprobs) != n
                or any(not 0 <= t < self.vocab_size for t in sample.prompt_ids + sample.completion_ids)
                or any(not math.isfinite(lp) or lp > 1e-6 for lp in sample.logprobs)):
            return "malformed-sample"
        return None

    def _refuse(self, decision: Decision, reason: str, samples: int) -> Decision:
        # A refused batch's samples all count as failures: a worker that keeps sending stale or
        # malformed batches is banned like one that fabricates log-probs.
        decision.batch_reason = reason
        self._record(decision, refused_samples=samples)
        return decision

    def _record(self, decision: Decision, refused_samples: int = 0) -> None:
        entry = self.registry.workers[decision.worker_id]
        stats = entry.stats
        if decision.batch_reason is not None:
            stats.batches_rejected += 1
            stats.samples_rejected += refused_samples
            stats.reasons[decision.batch_reason] += 1
        else:
            stats.batches_accepted += 1 if not decision.rejected else 0
            stats.batches_rejected += 1 if decision.rejected else 0
            stats.samples_accepted += len(decision.accepted)
            stats.samples_rejected += len(decision.rejected)
            for _, reason in decision.rejected:
                stats.reasons[reason] += 1
        total = stats.samples_accepted + stats.samples_rejected
        if total >= self.config.ban_min_samples and stats.failure_rate > self.config.ban_failure_rate:
            self.registry.ban(decision.worker_id, f"sample failure rate {stats.failure_rate:.2f}")
            logger.warning("banned worker %s: %s", decision.worker_id, entry.ban_reason)
        self.registry.save()
        logger.info("worker %s batch %s: %d accepted, %d rejected%s", decision.worker_id, decision.batch_id,
                    len(decision.accepted), len(decision.rejected),
                    f" ({decision.batch_reason})" if decision.batch_reason else "")
