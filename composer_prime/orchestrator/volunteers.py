"""Rollouts from volunteer workers (`orchestrator.source = "workers"`), verified before they train.

The orchestrator hosts the run's coordinator (coordinator/app.py: /join, /heartbeat, /workers),
so the process that bans a worker (the verifier) is the one that answers its next heartbeat. Per
step it:
  1. waits for weight version >= N-1-async_level (the lead trainer's versions, as with inference);
  2. verifies every new batch in `<store>/rollouts/` (verify/verifier.py) against the trusted
     weights of the version the batch claims;
  3. turns each batch's accepted samples into groups (same example id within a batch); a group that
     lost a sample to rejection, or holds a prompt other than the run's own prompt of its example, is
     dropped (a biased baseline; a prompt of the worker's choosing);
  4. drops groups sampled by a version < N-1-max_off_policy_steps (counted), takes the oldest
     `batch_size / group_size` groups and scores them again with the environment (a worker's claimed
     reward is not trusted); then the step is published by the same sink as the inference source's.

Nothing is lost on a crash: accepted groups wait in `<output>/workers/pool.msgpack`, written before
the inbox marks their batches processed; groups taken for step N carry N there before the step is
published (`collect_step`), so a restart drops them once step N is on disk and reuses them otherwise;
they leave the pool once the step is (`published`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from collections.abc import Callable

import msgspec
from transformers import AutoConfig, PreTrainedTokenizerBase

from composer_prime import keys
from composer_prime.model.chat_template import template_ids
from composer_prime.store import Store
from composer_prime.coordinator.announce import HeldVersion
from composer_prime.coordinator.app import create_coordinator_app
from composer_prime.coordinator.grants import make_granter
from composer_prime.coordinator.protocol import JoinResponse
from composer_prime.errors import UserError
from composer_prime.inference.protocol import Completion
from composer_prime.orchestrator.advantage import compute_advantages
from composer_prime.configs.orchestrator import OrchestratorConfig
from composer_prime.orchestrator.source import CollectedStep, StepStats
from composer_prime.orchestrator.step_io import completed_steps
from composer_prime.rollout.envs import Environment
from composer_prime.rollout.single_turn import Group, score_group
from composer_prime.utils.fs import atomic_write_bytes
from composer_prime.utils.serve import ServedApp
from composer_prime.verify.inbox import RolloutInbox
from composer_prime.verify.rollout_batch import RolloutSample
from composer_prime.verify.scorer import ModelScorer
from composer_prime.verify.verifier import Decision, RolloutVerifier
from composer_prime.verify.worker_registry import WorkerRegistry
from composer_prime.weights import latest_version, version_dir

logger = logging.getLogger(__name__)
POOL_SCHEMA = 1


class PendingGroup(msgspec.Struct):
    """One prompt's completions from one verified batch, waiting to be trained."""

    worker_id: str
    batch_id: str
    example_id: int
    weight_version: int
    samples: list[RolloutSample]
    step: int = 0
    """The step this group was packed into (0: not yet taken)."""


class Pool(msgspec.Struct):
    groups: list[PendingGroup] = []
    batches: list[str] = []
    """`worker/batch` of every batch ever pooled: a batch verified again after a crash is not pooled twice."""
    schema_version: int = POOL_SCHEMA


def groups_of(decision: Decision, group_size: int, prompt_of: Callable[[int], list[int] | None]
              ) -> tuple[list[PendingGroup], int]:
    """A batch's accepted samples as complete groups of `group_size`, and how many groups were dropped:
    partial ones, and those with a sample whose prompt is not `prompt_of(example_id)` (None: no such example)."""
    by_example: dict[int, list[RolloutSample]] = defaultdict(list)
    for sample in decision.accepted:
        by_example[sample.example_id].append(sample)
    groups, partial = [], 0
    for example_id, samples in sorted(by_example.items()):
        if len(samples) != group_size or any(s.prompt_ids != prompt_of(example_id) for s in samples):
            partial += 1
            continue
        groups.append(PendingGroup(decision.worker_id, decision.batch_id, example_id, decision.weight_version, samples))
    return groups, partial


def take_groups(pool: list[PendingGroup], step: int, count: int, max_off_policy_steps: int
                ) -> tuple[list[PendingGroup] | None, int]:
    """(the `count` oldest usable groups for `step`, or None while too few; groups dropped as too old).

    Too old = sampled by a version < step - 1 - max_off_policy_steps, the inference source's rule.
    Dropped groups are removed from `pool` in place.
    """
    oldest = step - 1 - max_off_policy_steps
    stale = [g for g in pool if g.step == 0 and g.weight_version < oldest]
    for group in stale:
        pool.remove(group)
    free = sorted((g for g in pool if g.step in (0, step)), key=lambda g: g.weight_version)
    return (free[:count] if len(free) >= count else None), len(stale)


class VolunteerSource:
    def __init__(self, config: OrchestratorConfig, env: Environment, tokenizer: PreTrainedTokenizerBase):
        workers = config.workers
        self.config, self.workers, self.env, self.tokenizer = config, workers, env, tokenizer
        self.lookahead = 0  # one step at a time: steps share the pool and the inbox
        self.train = env.examples("train")
        self.prompts: dict[int, list[int]] = {}
        self.state_dir = config.output_dir / "workers"
        self.weights_dir = workers.weights_dir or config.output_dir
        self.registry = WorkerRegistry(self.state_dir / "registry.json")
        scorer = ModelScorer(lambda version: version_dir(self.weights_dir, version))
        vocab_size = AutoConfig.from_pretrained(config.model.path).vocab_size  # the model's, not the tokenizer's
        verifier = RolloutVerifier(self.registry, scorer, workers.verify, vocab_size)
        self.inbox = RolloutInbox(Store.from_config(workers.store), verifier, self.state_dir / "inbox.json")
        self.pool_path = self.state_dir / "pool.msgpack"
        self.pool = msgspec.msgpack.decode(self.pool_path.read_bytes(), type=Pool) if self.pool_path.is_file() else Pool()
        done = set(completed_steps(config.output_dir, config.train_world_size))
        self.pool.groups = [g for g in self.pool.groups if g.step not in done]
        self.run_public_key = keys.public_hex(keys.load_public_key(workers.run_public_key))
        self.announced_version = HeldVersion(workers.broadcast_servers, self.current_version)

    def current_version(self) -> int:
        return latest_version(self.weights_dir)

    def run_info(self) -> JoinResponse:
        cfg, workers = self.config, self.workers
        return JoinResponse(
            run_id=workers.run_id, run_public_key=self.run_public_key, broadcast_servers=workers.broadcast_servers,
            upload_max_bytes=workers.uploads.max_bytes, env_id=cfg.env.id,
            env_args=cfg.env.args, temperature=cfg.sampling.temperature, max_tokens=cfg.sampling.max_tokens,
            samples_per_prompt=cfg.group_size, prompts_per_batch=workers.prompts_per_batch,
            current_version=self.announced_version(),
            proofs=workers.verify.toploc.spec() if workers.verify.toploc is not None else None)

    def prompt_of(self, example_id: int) -> list[int] | None:
        """The run's own prompt tokens of train example `example_id`, as every rollout templates it."""
        if not 0 <= example_id < len(self.train):
            return None
        if example_id not in self.prompts:
            self.prompts[example_id] = template_ids(self.tokenizer, self.train[example_id].prompt)
        return self.prompts[example_id]

    def save_pool(self) -> None:
        atomic_write_bytes(self.pool_path, msgspec.msgpack.encode(self.pool))

    def intake(self) -> dict[str, float]:
        """Verify new batches, pool their complete groups; counts for the step's metrics."""
        decisions = self.inbox.poll(self.current_version, commit=False)
        seen = set(self.pool.batches)
        counts = defaultdict(float)
        for decision in decisions:
            counts["verify/batches"] += 1
            counts["verify/samples_accepted"] += len(decision.accepted)
            counts["verify/samples_rejected"] += len(decision.rejected)
            if decision.batch_reason is not None:
                counts[f"verify/refused/{decision.batch_reason}"] += 1
            key = f"{decision.worker_id}/{decision.batch_id}"
            if not decision.accepted or key in seen:
                continue
            groups, partial = groups_of(decision, self.config.group_size, self.prompt_of)
            counts["dropped/partial_groups"] += partial
            self.pool.groups.extend(groups)
            self.pool.batches.append(key)
            seen.add(key)
        if decisions:
            self.save_pool()
            self.inbox.commit()
        return counts

    async def to_group(self, pending: PendingGroup) -> Group:
        """A pooled group as the run's own rollout group: decoded, scored by the environment; a completion
        that filled max_tokens without ending is counted as truncated."""
        eos, max_tokens = self.tokenizer.eos_token_id, self.config.sampling.max_tokens
        completions = [Completion(token_ids=s.completion_ids, logprobs=s.logprobs, finish_reason=(
            "length" if len(s.completion_ids) >= max_tokens and s.completion_ids[-1:] != [eos] else "stop"))
            for s in pending.samples]
        return await score_group(self.env, self.tokenizer, self.train[pending.example_id],
                                 pending.samples[0].prompt_ids, completions, pending.weight_version)

    async def collect_step(self, step: int) -> CollectedStep:
        cfg = self.config
        counts: dict[str, float] = defaultdict(float)
        stats = StepStats(extra=counts)
        start = time.monotonic()
        needed = step - 1 - cfg.async_level
        while self.current_version() < needed:
            if time.monotonic() - start > cfg.weight_timeout_s:
                raise UserError(f"waited {cfg.weight_timeout_s:.0f}s for weight version {needed} to be published "
                                f"in {self.weights_dir}: is the lead trainer running?")
            await asyncio.sleep(cfg.weight_poll_s)
        stats.wait_weights_s = time.monotonic() - start
        while True:
            for key, value in (await asyncio.to_thread(self.intake)).items():
                counts[key] += value
            pending, stale = take_groups(self.pool.groups, step, cfg.batch_size // cfg.group_size,
                                         cfg.max_off_policy_steps)
            stats.dropped_off_policy += stale
            if pending is not None:
                break
            await asyncio.sleep(self.workers.poll_s)
        for group in pending:
            group.step = step
        self.save_pool()  # before the step is published: see the module docstring
        scored = []
        for group in await asyncio.gather(*(self.to_group(g) for g in pending)):
            advantages = compute_advantages(group.rewards, group.completion_lens, cfg.sampling.max_tokens,
                                            cfg.advantage)
            if advantages is None:  # no redraws from a pool: the group is not trained
                stats.dropped_uniform += 1
            else:
                scored.append((group, advantages))
        for worker, summary in self.registry.summary().items():
            counts |= {f"workers/{worker}/{k}": float(v) for k, v in summary.items() if not isinstance(v, dict)}
        stats.elapsed_s = time.monotonic() - start
        return CollectedStep(scored, stats)

    async def serve(self) -> None:
        """The coordinator (/join, /heartbeat, /workers) for as long as the loop runs."""
        app = create_coordinator_app(self.registry, self.workers.join_token, self.run_info, self.announced_version,
                                     make_granter(self.workers.store), self.workers.uploads)
        with ServedApp(app, host=self.workers.host, port=self.workers.port):
            logger.info("coordinator on http://%s:%d; steps up to %d from volunteer workers", self.workers.host,
                        self.workers.port, self.config.max_steps)
            await asyncio.Event().wait()

    def published(self, step: int) -> None:
        self.pool.groups = [g for g in self.pool.groups if g.step != step]
        self.save_pool()
