"""Rollouts from volunteer workers (`orchestrator.source = "workers"`), verified before they train.

The orchestrator hosts the run's coordinator (worker/coordinator.py: /join, /heartbeat, /workers),
so the process that bans a worker (the verifier) is the one that answers its next heartbeat. Per
step it:
  1. waits for weight version >= N-1-async_level (the lead trainer's versions, as with inference);
  2. verifies every new batch in `<store>/rollouts/` (verify/verifier.py) against the trusted
     weights of the version the batch claims;
  3. turns each batch's accepted samples into groups (same prompt = example id within a batch); a
     group that lost a sample to rejection is dropped, since its advantage baseline would be biased;
  4. drops groups sampled by a version < N-1-max_off_policy_steps (counted), takes the oldest
     `batch_size / group_size` groups, computes advantages and packs the step as the inference source does.

Nothing is lost on a crash: accepted groups wait in `<output>/workers/pool.msgpack`, written before
the inbox marks their batches processed; groups taken for step N carry N there before the step is
published, so a restart drops them once step N is on disk and reuses them otherwise.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict

import msgspec
import numpy as np
from transformers import AutoConfig, PreTrainedTokenizerBase

from composer_prime import keys
from composer_prime.configs.orchestrator import OrchestratorConfig
from composer_prime.errors import UserError
from composer_prime.orchestrator.advantage import compute_advantages
from composer_prime.orchestrator.packing import Sample, pack_step
from composer_prime.orchestrator.steps import completed_steps, log_unlogged_steps, next_step, write_step
from composer_prime.store import Store
from composer_prime.utils.fs import atomic_write_bytes
from composer_prime.utils.metrics import MetricsLogger
from composer_prime.utils.serve import ServedApp
from composer_prime.verify.inbox import RolloutInbox
from composer_prime.verify.rollout_batch import RolloutSample
from composer_prime.verify.scorer import ModelScorer
from composer_prime.verify.verifier import Decision, RolloutVerifier
from composer_prime.verify.worker_registry import WorkerRegistry
from composer_prime.weights import latest_version, version_dir
from composer_prime.worker.coordinator import create_coordinator_app
from composer_prime.worker.protocol import JoinResponse

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


def groups_of(decision: Decision, group_size: int) -> tuple[list[PendingGroup], int]:
    """A batch's accepted samples as complete groups of `group_size`, and how many partial groups were dropped."""
    by_example: dict[int, list[RolloutSample]] = defaultdict(list)
    for sample in decision.accepted:
        by_example[sample.example_id].append(sample)
    groups, partial = [], 0
    for example_id, samples in sorted(by_example.items()):
        if len(samples) != group_size:
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
    def __init__(self, config: OrchestratorConfig, tokenizer: PreTrainedTokenizerBase, metrics: MetricsLogger):
        workers = config.workers
        self.config, self.workers, self.tokenizer, self.metrics = config, workers, tokenizer, metrics
        self.state_dir = config.output_dir / "workers"
        self.weights_dir = workers.weights_dir or config.output_dir
        self.registry = WorkerRegistry(self.state_dir / "registry.json")
        scorer = ModelScorer(lambda version: version_dir(self.weights_dir, version))
        vocab_size = AutoConfig.from_pretrained(config.model.path).vocab_size  # the model's, not the tokenizer's
        verifier = RolloutVerifier(self.registry, scorer, workers.verify, vocab_size)
        self.inbox = RolloutInbox(Store.from_config(workers.store), verifier, self.state_dir / "inbox.json")
        self.step_store = Store.from_config(config.step_store) if config.step_store is not None else None
        self.pool_path = self.state_dir / "pool.msgpack"
        self.pool = msgspec.msgpack.decode(self.pool_path.read_bytes(), type=Pool) if self.pool_path.is_file() else Pool()
        done = set(completed_steps(config.output_dir, config.train_world_size))
        self.pool.groups = [g for g in self.pool.groups if g.step not in done]
        self.run_public_key = keys.public_hex(keys.load_public_key(workers.run_public_key))

    def current_version(self) -> int:
        return latest_version(self.weights_dir)

    def run_info(self) -> JoinResponse:
        cfg, workers = self.config, self.workers
        return JoinResponse(
            run_id=workers.run_id, run_public_key=self.run_public_key, broadcast_servers=workers.broadcast_servers,
            store_url=workers.store.url, store_endpoint_url=workers.store.endpoint_url, env_id=cfg.env.id,
            temperature=cfg.sampling.temperature, max_tokens=cfg.sampling.max_tokens,
            samples_per_prompt=cfg.group_size, prompts_per_batch=workers.prompts_per_batch,
            current_version=self.current_version(),
            proofs=workers.verify.toploc.spec() if workers.verify.toploc is not None else None)

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
            groups, partial = groups_of(decision, self.config.group_size)
            counts["dropped/partial_groups"] += partial
            self.pool.groups.extend(groups)
            self.pool.batches.append(key)
            seen.add(key)
        if decisions:
            self.save_pool()
            self.inbox.commit()
        return counts

    async def collect_step(self, step: int) -> tuple[list[PendingGroup], dict[str, float]]:
        cfg = self.config
        counts: dict[str, float] = defaultdict(float)
        start = time.monotonic()
        needed = step - 1 - cfg.async_level
        while self.current_version() < needed:
            if time.monotonic() - start > cfg.weight_timeout_s:
                raise UserError(f"waited {cfg.weight_timeout_s:.0f}s for weight version {needed} to be published "
                                f"in {self.weights_dir}: is the lead trainer running?")
            await asyncio.sleep(cfg.weight_poll_s)
        counts["time/wait_weights_s"] = time.monotonic() - start
        while True:
            for key, value in (await asyncio.to_thread(self.intake)).items():
                counts[key] += value
            groups, stale = take_groups(self.pool.groups, step, cfg.batch_size // cfg.group_size,
                                        cfg.max_off_policy_steps)
            counts["dropped/off_policy_groups"] += stale
            if groups is not None:
                for group in groups:
                    group.step = step
                self.save_pool()  # before the step is published: see the module docstring
                counts["time/step_s"] = time.monotonic() - start
                return groups, counts
            await asyncio.sleep(self.workers.poll_s)

    def publish(self, step: int, groups: list[PendingGroup], counts: dict[str, float]) -> dict[str, float]:
        cfg = self.config
        samples, rewards, lens, dropped_uniform = [], [], [], 0
        for group in groups:
            group_rewards = [s.reward for s in group.samples]
            group_lens = [len(s.completion_ids) for s in group.samples]
            advantages = compute_advantages(group_rewards, group_lens, cfg.sampling.max_tokens, cfg.advantage)
            rewards += group_rewards
            lens += group_lens
            if advantages is None:
                dropped_uniform += 1
                continue
            samples += [Sample(s.prompt_ids, s.completion_ids, s.logprobs, a, group.weight_version)
                        for s, a in zip(group.samples, advantages, strict=True)]
        batches = pack_step(samples, step=step, seq_len=cfg.seq_len, micro_batch_rows=cfg.micro_batch_rows,
                            world_size=cfg.train_world_size, pad_token_id=self.tokenizer.pad_token_id,
                            temperature=cfg.sampling.temperature)
        lags = [step - 1 - g.weight_version for g in groups]
        record = {
            "reward/mean": float(np.mean(rewards)), "reward/std": float(np.std(rewards)),
            "completion_len/mean": float(np.mean(lens)), "completion_len/max": float(np.max(lens)),
            "off_policy/lag_mean": float(np.mean(lags)), "off_policy/lag_max": float(np.max(lags)),
            "dropped/uniform_groups": dropped_uniform, "num_loss_tokens": batches[0].num_loss_tokens,
            "rollouts_per_s": len(rewards) / max(counts.get("time/step_s", 0.0), 1e-9), **counts,
        }
        for worker, stats in self.registry.summary().items():
            record |= {f"workers/{worker}/{k}": float(v) for k, v in stats.items() if not isinstance(v, dict)}
        write_step(cfg.output_dir, step, batches, record, self.step_store)
        self.metrics.log(step, record)
        self.pool.groups = [g for g in self.pool.groups if g.step != step]
        self.save_pool()
        return record

    async def run(self) -> None:
        cfg = self.config
        start = next_step(cfg.output_dir, cfg.train_world_size)
        log_unlogged_steps(cfg.output_dir, cfg.train_world_size, self.metrics)
        app = create_coordinator_app(self.registry, self.workers.join_token, self.run_info, self.current_version)
        with ServedApp(app, host=self.workers.host, port=self.workers.port):
            logger.info("coordinator on http://%s:%d; steps %d..%d from volunteer workers", self.workers.host,
                        self.workers.port, start, cfg.max_steps)
            for step in range(start, cfg.max_steps + 1):
                groups, counts = await self.collect_step(step)
                record = self.publish(step, groups, counts)
                logger.info("step %d: reward %.3f from %d groups, %d samples rejected so far", step,
                            record["reward/mean"], len(groups),
                            sum(s["samples_rejected"] for s in self.registry.summary().values()))

