"""The orchestrator process: rollouts from the inference server -> scored, packed batches for the trainer.

Off-policy contract (N = batch / trainer step, versions as in composer_prime/weights.py):
- batch N is trained by trainer step N, which starts from weight version N-1 and publishes version N;
- rollouts for batch N start only once the newest published version is >= N-1-async_level
  (async_level 0 is fully on-policy: batch N waits for the weights trained on batch N-1);
- a group sampled by a version < N-1-max_off_policy_steps is dropped when it completes (counted in
  `dropped/off_policy_groups`) and re-sampled, same prompt, once inference serves a recent enough version;
- a watcher loads every newly published version into inference at once, even in the middle of a step.

Resume: the next step is 1 + the highest step complete on disk (steps.py) and prompts depend only
on (seed, step), so a killed and restarted orchestrator neither repeats nor skips a step.

Tool environments (a task that opens tool sessions, envs.py): each rollout is a multi-turn
conversation the orchestrator drives token by token (multiturn.py); only its sampled turns train.

Volunteer workers (source = "workers"): no inference server; verified rollouts from workers
become the steps instead (volunteers.py).

Eval (eval.num_examples > 0): the task's own verdict (e.g. exact match), pass@k, reward and answer length
on held-out prompts at the start (served version), every eval.interval steps, and at the end on version
max_steps, sampled at eval.temperature and greedily; then the headline (eval.headline), with a
warning when the reward rose while the verdict fell.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine
from dataclasses import dataclass

import httpx
import numpy as np
from rich.console import Console
from rich.progress import Progress
from transformers import PreTrainedTokenizerBase

from composer_prime.cli import run_cli
from composer_prime.configs.orchestrator import OrchestratorConfig
from composer_prime.errors import UserError
from composer_prime.eval.evaluate import evaluate, held_out_examples
from composer_prime.eval.headline import headline
from composer_prime.hints.writer import make_hint_writer
from composer_prime.inference.client import InferenceClient
from composer_prime.model.load import load_tokenizer
from composer_prime.orchestrator.advantage import compute_advantages
from composer_prime.orchestrator.envs import Environment, Example, load_environment
from composer_prime.orchestrator.hint_sites import build_hint_sites, pick_sites, rollouts_of
from composer_prime.orchestrator.multiturn import ToolGroup, tool_rollout_group
from composer_prime.orchestrator.packing import pack_step
from composer_prime.orchestrator.rollout import Group, answer_lengths, prompt_index, request_seed, rollout_group
from composer_prime.orchestrator.steps import log_unlogged_steps, mirror_missing, next_step, write_step
from composer_prime.orchestrator.weight_sync import WeightSync
from composer_prime.store import Store
from composer_prime.traces import write_traces
from composer_prime.utils.metrics import MetricsLogger, read_metrics
from composer_prime.utils.progress import step_progress

logger = logging.getLogger("composer_prime.orchestrator")


@dataclass
class StepStats:
    wait_weights_s: float = 0.0
    dropped_off_policy: int = 0
    dropped_uniform: int = 0
    elapsed_s: float = 0.0


class Orchestrator:
    def __init__(self, config: OrchestratorConfig, env: Environment, tokenizer: PreTrainedTokenizerBase,
                 client: InferenceClient, weights: WeightSync, metrics: MetricsLogger):
        self.config, self.env, self.tokenizer = config, env, tokenizer
        self.client, self.weights, self.metrics = client, weights, metrics
        self.train = env.examples("train")
        if not self.train:
            raise UserError(f"environment {env.id} has no train examples")
        self.eval_examples = held_out_examples(env, config.eval.num_examples) if config.eval.num_examples else []
        self.num_slots = config.batch_size // config.group_size
        self.slots = asyncio.Semaphore(config.max_concurrent)
        self.hint_writer = make_hint_writer(config.hints.writer)
        self.step_store = Store.from_config(config.step_store) if config.step_store is not None else None
        self.multi_turn = env.multi_turn
        if self.multi_turn and config.eval.num_examples:
            raise UserError(f"environment {env.id} is multi-turn (tools): held-out eval runs single-turn "
                            "rollouts only; set orchestrator.eval.num_examples = 0")
        if self.multi_turn and config.advantage.overlong is not None:
            raise UserError("advantage.overlong penalises one completion at max_tokens; "
                            f"environment {env.id} is multi-turn: remove [orchestrator.advantage.overlong]")

    async def rollout(self, example: Example, seed: int) -> Group | ToolGroup:
        cfg = self.config
        if self.multi_turn:
            return await tool_rollout_group(
                self.client, self.env, self.tokenizer, example, n=cfg.group_size, max_turns=cfg.max_turns,
                seq_len=cfg.seq_len, max_tokens=cfg.sampling.max_tokens, temperature=cfg.sampling.temperature,
                top_p=cfg.sampling.top_p, seed=seed,
            )
        return await rollout_group(
            self.client, self.env, self.tokenizer, example, n=cfg.group_size,
            max_tokens=cfg.sampling.max_tokens, temperature=cfg.sampling.temperature,
            top_p=cfg.sampling.top_p, seed=seed,
        )

    async def collect_group(self, step: int, slot: int, stats: StepStats) -> tuple[Group | ToolGroup, list[float]]:
        cfg = self.config
        oldest_allowed = step - 1 - cfg.max_off_policy_steps
        attempt = 0
        while True:
            example = self.train[prompt_index(cfg.seed, step, slot, attempt, self.num_slots, len(self.train))]
            async with self.slots:
                group = await self.rollout(example, request_seed(cfg.seed, step, slot, attempt))
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

    async def collect_step(self, step: int) -> tuple[list[tuple[Group | ToolGroup, list[float]]], StepStats]:
        stats = StepStats()
        stats.wait_weights_s = await self.weights.wait_published(step - 1 - self.config.async_level)
        start = time.monotonic()
        results = await asyncio.gather(*(self.collect_group(step, slot, stats) for slot in range(self.num_slots)))
        stats.elapsed_s = time.monotonic() - start
        return list(results), stats

    def step_metrics(self, step: int, results: list[tuple[Group | ToolGroup, list[float]]], stats: StepStats,
                     num_loss_tokens: int) -> dict[str, float]:
        groups = [g for g, _ in results]
        rewards = np.array([r for g in groups for r in g.rewards], dtype=np.float64)
        lens = np.array([n for g in groups for n in g.completion_lens], dtype=np.float64)
        truncated = [t for g in groups for t in g.truncated]
        lags = np.array([step - 1 - g.weight_version for g in groups], dtype=np.float64)
        record = {
            "reward/mean": rewards.mean(),
            "reward/std": rewards.std(),
            "completion_len/mean": lens.mean(),
            "completion_len/max": lens.max(),
            "truncated/fraction": float(np.mean(truncated)),
            "dropped/off_policy_groups": stats.dropped_off_policy,
            "dropped/uniform_groups": stats.dropped_uniform,
            "off_policy/lag_mean": lags.mean(),
            "off_policy/lag_max": lags.max(),
            "rollouts_per_s": len(rewards) / max(stats.elapsed_s, 1e-9),
            "time/wait_weights_s": stats.wait_weights_s,
            "time/step_s": stats.elapsed_s,
            "num_loss_tokens": num_loss_tokens,
        }
        record |= answer_lengths([g for g in groups if isinstance(g, Group)])
        names = sorted({name for g in groups for m in g.metrics for name in m})
        for name in names:
            record[f"env/{name}"] = float(np.mean([m[name] for g in groups for m in g.metrics if name in m]))
        return record

    async def publish(self, step: int, results: list[tuple[Group | ToolGroup, list[float]]], stats: StepStats
                      ) -> dict[str, float]:
        cfg = self.config
        samples = [sample for g, advantages in results for sample in g.samples(advantages)]
        batches = pack_step(samples, step=step, seq_len=cfg.seq_len, micro_batch_rows=cfg.micro_batch_rows,
                            world_size=cfg.train_world_size, pad_token_id=self.tokenizer.pad_token_id,
                            temperature=cfg.sampling.temperature)
        record = self.step_metrics(step, results, stats, batches[0].num_loss_tokens)
        rollouts = [rollouts_of(step, slot, g, self.env.id, cfg.hints) for slot, (g, _) in enumerate(results)]
        traces = [r.trace for group in rollouts for r in group]
        kinds = [e.kind for t in traces for e in t.errors]
        record["errors/rollouts_with_errors"] = float(np.mean([bool(t.errors) for t in traces]))
        record |= {f"errors/{kind}": kinds.count(kind) for kind in sorted(set(kinds))}
        if cfg.hints.enabled:
            sites = await build_hint_sites(pick_sites(rollouts, cfg.hints.max_sites_per_step), cfg.hints,
                                           self.hint_writer, self.tokenizer, self.client, cfg.sampling.temperature)
            num_hint_tokens = sum(len(s.completion_ids) for s in sites)
            for batch in batches:  # round robin over ranks; every rank divides by the global token count
                batch.hint_sites = sites[batch.rank :: len(batches)]
                batch.num_hint_tokens = num_hint_tokens
            record["hints/sites"] = len(sites)
            record["hints/tokens"] = num_hint_tokens
        write_traces(cfg.output_dir, step, traces)  # before the step: a complete step always has its traces
        write_step(cfg.output_dir, step, batches, record, self.step_store)
        self.metrics.log(step, record)
        return record

    async def evaluate(self) -> dict[str, float | int]:
        """Held-out metrics of the served policy: sampled at eval.temperature (eval/*), and greedily
        (eval/greedy/*) when eval.greedy and that temperature is not already 0."""
        cfg, ev = self.config, self.config.eval
        runs = [("eval/", ev.temperature, ev.n, ev.k)]
        if ev.greedy and ev.temperature > 0:
            runs.append(("eval/greedy/", 0.0, 1, 1))
        record: dict[str, float | int] = {}
        async with self.weights.frozen():
            for prefix, temperature, n, k in runs:
                result = await evaluate(
                    self.client, self.env, self.tokenizer, self.eval_examples, k=k, samples_per_prompt=n,
                    temperature=temperature, max_tokens=cfg.sampling.max_tokens, success_metric=ev.success_metric,
                    pass_threshold=ev.pass_threshold, seed=cfg.seed, max_concurrent=cfg.max_concurrent,
                )
                record |= result.metrics(prefix)
                record["eval/verdict"] = result.verdict
                logger.info("eval %s %s", prefix.strip("/"), result.summary())
        return record

    async def start_eval(self, start: int) -> dict[str, float | int]:
        """The held-out metrics before training: this run's first eval record, else measured now."""
        earlier = [r for r in read_metrics(self.config.output_dir, "orchestrator") if "eval/reward" in r]
        if earlier:
            return earlier[0]
        record = await self.evaluate()
        self.metrics.log(start - 1, record)
        return record

    async def run_steps(self, start: int, progress: Progress) -> None:
        cfg = self.config
        task = progress.add_task("orchestrator", total=cfg.max_steps, completed=start - 1, info="")
        window: dict[int, asyncio.Task] = {}
        try:
            for step in range(start, cfg.max_steps + 1):
                # Steps up to async_level ahead collect concurrently; each waits for its own weight gate.
                for ahead in range(step, min(cfg.max_steps, step + cfg.async_level) + 1):
                    if ahead not in window:
                        window[ahead] = asyncio.create_task(self.collect_step(ahead))
                results, stats = await window.pop(step)
                record = await self.publish(step, results, stats)
                info = (f"reward {record['reward/mean']:.3f}  len {record['completion_len/mean']:.1f}  "
                        f"{record['rollouts_per_s']:.1f} rollouts/s")
                logger.info("step %d: %s  lag %.1f  dropped %d", step, info, record["off_policy/lag_mean"],
                            stats.dropped_off_policy + stats.dropped_uniform)
                progress.update(task, completed=step, info=info)
                if self.eval_examples and cfg.eval.interval and step % cfg.eval.interval == 0 and step < cfg.max_steps:
                    self.metrics.log(step, await self.evaluate())
        finally:
            for pending in window.values():
                pending.cancel()

    async def final_eval(self, first: dict[str, float | int]) -> None:
        last = self.config.max_steps
        await self.weights.wait_published(last)
        await self.weights.wait_served(last)
        record = await self.evaluate()
        for prefix in ("eval/", "eval/greedy/"):
            if f"{prefix}solved" in record and f"{prefix}solved" in first:
                record[f"{prefix}solved_start"] = first[f"{prefix}solved"]
                record[f"{prefix}solved_end"] = record[f"{prefix}solved"]
                record[f"{prefix}solved_delta"] = record[f"{prefix}solved"] - first[f"{prefix}solved"]
        record |= {"eval/reward_start": first["eval/reward"], "eval/reward_end": record["eval/reward"],
                   "eval/delta": record["eval/reward"] - first["eval/reward"]}
        self.metrics.log(last, record)
        for line in headline(record):
            print(line, flush=True)

    async def run(self) -> None:
        cfg = self.config
        start = next_step(cfg.output_dir, cfg.train_world_size)
        log_unlogged_steps(cfg.output_dir, cfg.train_world_size, self.metrics)
        if start > 1:
            logger.info("resuming at step %d", start)
        first = await self.start_eval(start) if self.eval_examples else None
        with step_progress("orchestrator", Console(stderr=True), cfg.log.progress, cfg.log.progress_interval_s
                           ) as progress:
            await self.run_steps(start, progress)
        if first is not None:
            await self.final_eval(first)


async def _until_either_fails(main: Coroutine, watcher: Coroutine) -> None:
    """Run `main` to completion while `watcher` runs beside it; a watcher failure aborts main."""
    main_task, watcher_task = asyncio.create_task(main), asyncio.create_task(watcher)
    try:
        done, _ = await asyncio.wait({main_task, watcher_task}, return_when=asyncio.FIRST_COMPLETED)
        if watcher_task in done:
            watcher_task.result()
        main_task.result()
    finally:
        for task in (main_task, watcher_task):
            task.cancel()
        await asyncio.gather(main_task, watcher_task, return_exceptions=True)


async def orchestrate(config: OrchestratorConfig) -> None:
    env = load_environment(config.env)
    tokenizer = load_tokenizer(config.model)
    metrics = MetricsLogger(config.output_dir, "orchestrator", config.log.wandb_project,
                            config.model_dump(mode="json"))
    if config.step_store is not None:
        repaired = mirror_missing(Store.from_config(config.step_store), config.output_dir, config.train_world_size)
        if repaired:
            logger.info("uploaded steps %s to the step store (published here before a crash, not there)", repaired)
    if config.source == "workers":
        from composer_prime.orchestrator.volunteers import VolunteerSource

        try:
            await VolunteerSource(config, tokenizer, metrics).run()
        finally:
            metrics.close()
        return
    try:
        async with InferenceClient(config.inference_url) as client:
            health = await client.wait_until_ready(timeout_s=config.inference_timeout_s)
            weights = WeightSync(client, config.output_dir, health.weight_version, config.weight_poll_s,
                                 config.weight_timeout_s)
            await weights.refresh()  # serve the newest published version before sampling anything
            orchestrator = Orchestrator(config, env, tokenizer, client, weights, metrics)
            try:
                await _until_either_fails(orchestrator.run(), weights.watch())
            finally:
                await orchestrator.hint_writer.aclose()
    except httpx.TransportError as exc:
        raise UserError(f"lost the inference server at {config.inference_url}: {exc!r}") from None
    finally:
        metrics.close()


def main(config: OrchestratorConfig) -> None:
    logging.basicConfig(level=config.log.level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request otherwise
    asyncio.run(orchestrate(config))


def cli() -> None:
    run_cli(OrchestratorConfig, main)


if __name__ == "__main__":
    cli()
