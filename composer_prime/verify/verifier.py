"""The orchestrator's gate for rollouts from volunteer workers.

A batch is taken apart in this order, cheapest check first. Every check accepts only what is provably
within bounds: a NaN or an infinity fails. A refused batch's reason is in brackets; "counted" means its
samples count as failures of the worker: as many as its assignment asked for, whatever the batch held (an
empty batch costs as much as a full bad one), or one group's before the assignment is known (an
assignment left unanswered is counted in full once it expires: verify/inbox.py):
  1. decodes as a SignedBatch, without unknown fields           [malformed: counted against the uploader]
  2. names the worker whose store prefix held it                [misplaced: counted against the uploader]
  3. the worker is registered and not banned                    [unregistered / banned]
  4. the signature verifies with its registered key             [bad-signature: never counted, see below]
  5. the payload decodes without unknown fields, names the same worker, current schema   [malformed, counted]
  6. it answers an assignment the run signed for this worker, under that assignment's id  [bad-assignment, counted]
  7. that assignment was not answered before: the same bytes again are a retried upload [duplicate, dropped,
     not counted]; anything else is a replay                   [duplicate, counted]
  8. its weight version is not newer than the run's             [future, counted]
     and not older than the one announced when its assignment was issued (which the assignment records):
     the version is the worker's own choice, not a delay        [wrong-version, counted]
  9. the run's temperature, exactly the assigned number of samples       [wrong-temperature / wrong-count, counted]
 10. per sample: the assigned example with the run's own prompt of it, 1..max_tokens tokens ending in a stop
     token (or at max_tokens) with none before, token ids in the vocabulary, finite log-probs <= 0
                                                                [wrong-example / malformed-sample]
     A batch that passes 1-10 but is more than `max_staleness` versions behind went stale after it was
     assigned (the trainer moved on; relays and the store, not the worker, may have delayed it):
                                                                [stale: dropped, not counted]
     one that fails 9 or 10 counts in full whether stale or not.
 11. for a `check_fraction` of samples (chosen unpredictably, keyed by `secret`): the submitted log-probs agree
     with the trusted recomputation (mean |diff| <= logprob_mean_tolerance, max <= logprob_max_tolerance)
                                                                [logprob-mismatch]
     and, with `prove_sampling`, every token is the one the assignment's noise draws from the trusted logits,
     within `sampling_tolerance` (verify/sampled.py)             [not-sampled]
     A checked sample that passes goes on with the trusted log-probs, not its own: they are the importance
     ratio's denominator in training, and the tolerance would otherwise let the worker choose them.
 12. with `toploc`: proofs present, and for `toploc.check_fraction` of samples matching the trusted weights'
     hidden states (verify/toploc.py)                           [toploc-missing / toploc-mismatch]
With a check fraction below 1, one failed check rejects the whole batch (the others `batch-failed`): a worker
that slips one bad sample into each group cannot count on the unchecked ones, and the ban threshold is scaled
by the fraction, as only that share of its bad samples is ever seen.

A worker whose sample failure rate passes `ban_failure_rate * check_fraction` (after `ban_min_samples`) is
banned. A bad signature is never counted against the worker it names: anyone can forge the name, and counting
it would let an attacker get an honest worker banned. What the inbox found under a worker's own store prefix
(only that worker can write there) counts against that worker: an undecodable batch (`malformed`), or one
naming another worker (`misplaced`).
"""

from __future__ import annotations

import hashlib
import logging
import math
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import msgspec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from composer_prime import keys
from composer_prime.configs.verify import VerifyConfig
from composer_prime.errors import UserError
from composer_prime.verify.rollout_batch import (ROLLOUT_SCHEMA, Assignment, AssignmentRefused, RolloutBatch,
                                                 RolloutSample, decode_batch, decode_signed, open_assignment)
from composer_prime.verify.sampled import sampled
from composer_prime.verify.scorer import ScoreItem, Scorer
from composer_prime.verify.toploc import proof_mismatch, require_toploc
from composer_prime.verify.worker_registry import WorkerRegistry

logger = logging.getLogger(__name__)
ANSWERED_RETENTION_S = 86400.0  # past an assignment's expiry no grant is given for it: forget it a day later


@dataclass(frozen=True)
class RunSpec:
    """What the run asks of every batch, checked against what a worker sends."""

    public_key: Ed25519PublicKey
    """The run's key: it signs assignments."""
    temperature: float
    top_p: float
    max_tokens: int
    samples_per_prompt: int
    stop_ids: frozenset[int]
    """Tokens that end a completion (the tokenizer's EOS and the model's generation config's)."""
    prompt_of: Callable[[int], list[int] | None]
    """The run's own prompt tokens of a train example (None: no such example)."""


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


def logprobs_agree(submitted: Sequence[float], trusted: Sequence[float], config: VerifyConfig) -> bool:
    """Submitted log-probs within the tolerance of the trusted ones (check 11); a NaN fails. A claim that agrees
    is no forgery, whatever the worker meant by it: the trusted log-probs replace it."""
    diffs = [abs(a - b) for a, b in zip(submitted, trusted, strict=True)]
    return sum(diffs) / len(diffs) <= config.logprob_mean_tolerance and max(diffs) <= config.logprob_max_tolerance


class RolloutVerifier:
    def __init__(self, registry: WorkerRegistry, scorer: Scorer, config: VerifyConfig, vocab_size: int, run: RunSpec):
        self.registry = registry
        self.scorer = scorer
        self.config = config
        self.vocab_size = vocab_size
        self.run = run
        self.answered: dict[str, tuple[str, float]] = {}
        """Assignment id -> (SHA-256 of the batch that answered it, its expiry); saved by the inbox."""
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
                return self.refuse_upload(blame, "malformed")
            return Decision("?", "?", batch_reason="malformed")
        if blame is not None and signed.worker_id != blame:
            return self.refuse_upload(blame, "misplaced")
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
            return self._refuse(decision, "malformed", self._batch_size())
        decision.batch_id, decision.weight_version = batch.batch_id, batch.weight_version
        if batch.worker_id != signed.worker_id or batch.schema_version != ROLLOUT_SCHEMA:
            return self._refuse(decision, "malformed", self._batch_size())
        try:
            assignment = open_assignment(batch.assignment, self.run.public_key)
        except AssignmentRefused as exc:
            logger.info("worker %s: batch %s answers no assignment of the run: %s", batch.worker_id, batch.batch_id, exc)
            return self._refuse(decision, "bad-assignment", self._batch_size())
        if assignment.worker_id != batch.worker_id or assignment.assignment_id != batch.batch_id:
            return self._refuse(decision, "bad-assignment", self._batch_size())
        digest = hashlib.sha256(signed.payload).hexdigest()
        if (answered := self.answered.get(assignment.assignment_id)) is not None:
            if answered[0] == digest:  # the same batch uploaded again (a retry, or a replayed grant)
                decision.batch_reason = "duplicate"
                self._record(decision, counted=False)
                return decision
            return self._refuse(decision, "duplicate", assignment.num_samples)
        self.answered[assignment.assignment_id] = (digest, assignment.expires_at)
        self.registry.close_assignment(batch.worker_id, assignment.assignment_id)
        if batch.weight_version > current_version:
            return self._refuse(decision, "future", assignment.num_samples)
        if not 0 <= assignment.weight_version <= batch.weight_version:
            # Older weights than the assignment named are the worker's choice, never a delay in transit: were they
            # dropped uncounted as stale, a worker could answer every assignment it dislikes with an empty batch
            # claiming an old version, and report only the groups it likes.
            return self._refuse(decision, "wrong-version", assignment.num_samples)
        if batch.temperature != self.run.temperature or (assignment.temperature, assignment.top_p, assignment.max_tokens,
                                                         assignment.samples_per_prompt) != (
                self.run.temperature, self.run.top_p, self.run.max_tokens, self.run.samples_per_prompt):
            return self._refuse(decision, "wrong-temperature", assignment.num_samples)
        if len(batch.samples) != assignment.num_samples:
            return self._refuse(decision, "wrong-count", assignment.num_samples)
        reasons = self._shape_reasons(batch, assignment)
        if current_version - batch.weight_version > self.config.max_staleness:
            # Sampled with what was announced, and the trainer has moved on since: not the worker's doing, and
            # the version may no longer be loadable to score. Only a batch whose shape holds is let off.
            if (reason := next((r for r in reasons if r is not None), None)) is not None:
                return self._refuse(decision, reason, assignment.num_samples)
            decision.batch_reason = "stale"
            self._record(decision, counted=False)
            return decision
        rng = random.Random(hashlib.sha256(f"{self.config.secret}/{batch.worker_id}/{batch.batch_id}".encode()).digest())
        trusted = self._check_samples(batch, assignment, reasons, rng)
        if self.config.fraction_checked < 1 and any(r is not None for r in reasons):
            reasons = [r or "batch-failed" for r in reasons]
        for index, (sample, reason) in enumerate(zip(batch.samples, reasons, strict=True)):
            if reason is not None:
                decision.rejected.append((index, reason))
            elif index in trusted:
                decision.accepted.append(msgspec.structs.replace(sample, logprobs=trusted[index]))
            else:
                # Unchecked (check fraction < 1): the worker's own log-probs, bounded all the same. It cannot tell
                # which samples are checked, and one checked sample outside the tolerance drops the whole batch
                # and counts it, so k samples forged beyond the tolerance reach training with probability
                # (1 - check_fraction)^k at most, each time at the cost of a batch counted towards a ban.
                decision.accepted.append(sample)
        self._record(decision)
        return decision

    def refuse_upload(self, uploader: str, reason: str) -> Decision:
        """An upload under `uploader`'s own prefix that could not even be taken apart: counted against it."""
        return self._refuse(Decision(uploader, "?"), reason, self._batch_size())

    def abandon(self, worker_id: str, assignment_id: str, samples: int) -> Decision:
        """An assignment that expired unanswered: its samples count as failures."""
        self.registry.close_assignment(worker_id, assignment_id)
        return self._refuse(Decision(worker_id, assignment_id), "abandoned", samples)

    def forget_answered(self, now: float | None = None) -> None:
        """Drop answered assignments long past expiry: no upload can be granted for them any more."""
        cutoff = (time.time() if now is None else now) - ANSWERED_RETENTION_S
        self.answered = {a: held for a, held in self.answered.items() if held[1] > cutoff}

    def _batch_size(self) -> int:
        """What a batch holds when its own count cannot be trusted: the run's smallest assigned batch."""
        return self.run.samples_per_prompt

    def _shape_reasons(self, batch: RolloutBatch, assignment: Assignment) -> list[str | None]:
        """Per sample, the checks that need no weights: None (passed) or the reason."""
        reasons: list[str | None] = []
        for index, sample in enumerate(batch.samples):
            reason = self._malformed(sample, assignment.example_ids[index // assignment.samples_per_prompt])
            if reason is None and self.config.toploc is not None and not sample.proofs:
                reason = "toploc-missing"
            reasons.append(reason)
        return reasons

    def _check_samples(self, batch: RolloutBatch, assignment: Assignment, reasons: list[str | None],
                       rng: random.Random) -> dict[int, list[float]]:
        """Sets `reasons` (from _shape_reasons) of the chosen samples that fail: their log-probs and sampling
        gaps in one batched scoring call, then their proofs. Returns the trusted log-probs of each scored sample."""
        toploc, config = self.config.toploc, self.config
        score, prove = [], []
        for index, reason in enumerate(reasons):
            if reason is not None:
                continue
            # Both draws happen for every well-formed sample, so which samples get which check stays unpredictable.
            if rng.random() < config.check_fraction:
                score.append(index)
            if toploc is not None and rng.random() < toploc.check_fraction:
                prove.append(index)
        trusted: dict[int, list[float]] = {}
        if score:
            items = [ScoreItem(batch.samples[i].prompt_ids, batch.samples[i].completion_ids,
                               (assignment.key, i) if config.prove_sampling else None) for i in score]
            scores = self.scorer.score_many(batch.weight_version, items, self.run.temperature, self.run.top_p)
            for index, scored in zip(score, scores, strict=True):
                trusted[index] = scored.logprobs
                if not logprobs_agree(batch.samples[index].logprobs, scored.logprobs, config):
                    reasons[index] = "logprob-mismatch"
                elif scored.gaps is not None and not sampled(scored.gaps, config.sampling_tolerance):
                    reasons[index] = "not-sampled"
        for index in prove:
            if reasons[index] is not None:
                continue
            sample = batch.samples[index]
            hidden = self.scorer.hidden_states(batch.weight_version, sample.prompt_ids + sample.completion_ids)
            if (why := proof_mismatch(hidden, len(sample.prompt_ids), sample.proofs, toploc)) is not None:
                logger.info("TOPLOC proof of a sample failed: %s", why)
                reasons[index] = "toploc-mismatch"
        return trusted

    def _malformed(self, sample: RolloutSample, example_id: int) -> str | None:
        if sample.example_id != example_id or sample.prompt_ids != self.run.prompt_of(example_id):
            return "wrong-example"
        completion, n, stop = sample.completion_ids, len(sample.completion_ids), self.run.stop_ids
        if (not 1 <= n <= self.run.max_tokens or len(sample.logprobs) != n
                or any(not 0 <= t < self.vocab_size for t in completion)
                or not all(math.isfinite(lp) and lp <= 1e-6 for lp in sample.logprobs)
                # It ends where sampling ends, not where the worker liked: at a stop token or at max_tokens.
                or any(t in stop for t in completion[:-1]) or not (completion[-1] in stop or n == self.run.max_tokens)):
            return "malformed-sample"
        return None

    def _refuse(self, decision: Decision, reason: str, samples: int) -> Decision:
        # A refused batch's samples all count as failures: a worker that keeps sending bad batches is banned
        # like one that fabricates log-probs.
        decision.batch_reason = reason
        self._record(decision, refused_samples=samples)
        return decision

    def _record(self, decision: Decision, refused_samples: int = 0, counted: bool = True) -> None:
        entry = self.registry.workers[decision.worker_id]
        stats = entry.stats
        if not counted:
            stats.batches_dropped += 1
        elif decision.batch_reason is not None:
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
        threshold = self.config.ban_failure_rate * self.config.fraction_checked
        if not entry.banned and total >= self.config.ban_min_samples and stats.failure_rate > threshold:
            self.registry.ban(decision.worker_id, f"sample failure rate {stats.failure_rate:.2f}")
            logger.warning("banned worker %s: %s", decision.worker_id, entry.ban_reason)
        self.registry.save()
        logger.info("worker %s batch %s: %d accepted, %d rejected%s%s", decision.worker_id, decision.batch_id,
                    len(decision.accepted), len(decision.rejected),
                    f" ({decision.batch_reason})" if decision.batch_reason else "",
                    "".join(f", {n} {r}" for r, n in Counter(r for _, r in decision.rejected).items()))
