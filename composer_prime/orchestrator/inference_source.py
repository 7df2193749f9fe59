"""Rollouts from this run's inference server (`orchestrator.source = "inference"`).

Off-policy contract (N = batch / trainer step, versions as in composer_prime/weights.py):
- batch N is trained by trainer step N, which starts from weight version N-1 and publishes version N;
- rollouts for batch N start only once the newest published version is >= N-1-async_level
  (async_level 0 is fully on-policy: batch N waits for the weights trained on batch N-1);
- a group sampled by a version < N-1-max_off_policy_steps is dropped when it completes (counted in
  `dropped/off_policy_groups`) and re-sampled, same prompt, once inference serves a recent enough version;
- a watcher (`serve`) loads every newly published version into inference at once, even mid-step.

Prompts depend only on (seed, step, slot, attempt), so a restarted orchestrator asks for the same ones.
Sampling seeds derived from the same key make the samples themselves repeat, where the engine can: on
vLLM they are off by default (`seed_rollouts`), since vLLM draws each seeded row with a generator of its
own, one row at a time in Python, and its batched kernels change the numbers between runs anyway.
Tool environments (a task that opens tool sessions, rollout/envs.py): each rollout is a multi-turn
conversation driven token by token (rollout/multi_turn.py); only its sampled turns train.
"""

from __future__ import annotations

import asyncio
import time

from transformers import PreTrainedTokenizerBase

from composer_prime.errors import UserError
from composer_prime.inference.client import InferenceClient
from composer_prime.inference.protocol import HealthResponse
from composer_prime.orchestrator.advantage import compute_advantages
from composer_prime.configs.orchestrator import OrchestratorConfig
from composer_prime.orchestrator.source import CollectedStep, StepStats
from composer_prime.orchestrator.weight_sync import WeightSync
from composer_prime.rollout.envs import Environment, Example
from composer_prime.rollout.multi_turn import ToolGroup, env_rollout_group
from composer_prime.rollout.single_turn import Group, prompt_index, request_seed


def seeds_rollouts(config: OrchestratorConfig, health: HealthResponse) -> bool:
    """Whether training rollouts carry sampling seeds: `seed_rollouts`, else all but on vLLM."""
    return config.seed_rollouts if config.seed_rollouts is not None else health.backend != "vllm"


class InferenceSource:
    def __init__(self, config: OrchestratorConfig, env: Environment, tokenizer: PreTrainedTokenizerBase,
                 client: InferenceClient, weights: WeightSync, seeded: bool = True):
        self.config, self.env, self.tokenizer, self.client, self.weights = config, env, tokenizer, client, weights
        self.seeded = seeded
        self.lookahead = config.async_level
        self.train = env.examples("train")
        if not self.train:
            raise UserError(f"environment {env.id} has no train examples")
        self.num_slots = config.batch_size // config.group_size
        self.slots = asyncio.Semaphore(config.max_concurrent)
        if env.multi_turn and config.advantage.overlong is not None:
            raise UserError("advantage.overlong penalises one completion at max_tokens; "
                            f"environment {env.id} is multi-turn: remove [orchestrator.advantage.overlong]")

    async def rollout(self, example: Example, seed: int | None) -> Group | ToolGroup:
        cfg = self.config
        return await env_rollout_group(self.client, self.env, self.tokenizer, example, cfg.sampling, n=cfg.group_size,
                                       max_turns=cfg.max_turns, seq_len=cfg.seq_len, seed=seed)

    async def collect_group(self, step: int, slot: int, stats: StepStats) -> tuple[Group | ToolGroup, list[float]]:
        cfg = self.config
        oldest_allowed = step - 1 - cfg.max_off_policy_steps
        attempt = 0
        while True:
            example = self.train[prompt_index(cfg.seed, step, slot, attempt, self.num_slots, len(self.train))]
            async with self.slots:
                seed = request_seed(cfg.seed, step, slot, attempt) if self.seeded else None
                group = await self.rollout(example, seed)
            if group.weight_version < oldest_allowed:
                stats.dropped_off_policy += 1
                await self.weights.wait_served(oldest_allowed)
                continue
            advantages = compute_advantages(group.rewards, group.completion_lens, cfg.sampling.max_tokens,
                                            cfg.advantage)
            if advantages is None:
                if attempt < cfg.advantage.max_redraws:
                    stats.dropped_uniform += 1
                    attempt += 1
                    continue
                advantages = [0.0] * cfg.group_size  # out of redraws: a zero-advantage group, the step completes
            return group, advantages

    async def collect_step(self, step: int) -> CollectedStep:
        stats = StepStats()
        stats.wait_weights_s = await self.weights.wait_published(step - 1 - self.config.async_level)
        start = time.monotonic()
        results = await asyncio.gather(*(self.collect_group(step, slot, stats) for slot in range(self.num_slots)))
        stats.elapsed_s = time.monotonic() - start
        return CollectedStep(list(results), stats)

    async def serve(self) -> None:
        await self.weights.watch()

    def published(self, step: int) -> None:
        """Nothing to let go of: a restart re-asks for the same prompts."""
