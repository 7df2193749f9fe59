"""The orchestrator process: one step loop from a rollout source to the trainer's batches.

    for each step N:  source.collect_step(N)  ->  sink.publish(N)  ->  source.published(N)

The source (source.py) is this run's inference server (inference_source.py) or volunteer workers
(volunteers.py); the sink (sink.py) publishes every step the same way. Up to `source.lookahead` later
steps collect while one publishes; what the source serves beside the loop (weight watcher, coordinator)
runs as long as the loop does, and its failure ends the run. Held-out eval: in_run_eval.py.

Resume: the next step is 1 + the highest step complete on disk (step_io.py), and a source gives the
same rollouts again (prompts depend only on (seed, step); volunteers' groups wait in their pool), so a
killed and restarted orchestrator neither repeats nor skips a step.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine

import httpx
from rich.console import Console
from rich.progress import Progress
from transformers import PreTrainedTokenizerBase

from composer_prime import keys
from composer_prime.store import Store
from composer_prime.cli import run_cli
from composer_prime.configs.orchestrator import OrchestratorConfig
from composer_prime.errors import UserError
from composer_prime.inference.client import InferenceClient
from composer_prime.model.load import load_tokenizer
from composer_prime.orchestrator.in_run_eval import InRunEval
from composer_prime.orchestrator.inference_source import InferenceSource, seeds_rollouts
from composer_prime.orchestrator.sink import StepSink
from composer_prime.orchestrator.source import RolloutSource
from composer_prime.orchestrator.step_io import log_unlogged_steps, mirror_missing, next_step
from composer_prime.orchestrator.weight_sync import WeightSync
from composer_prime.rollout.envs import Environment, load_environment
from composer_prime.utils.metrics import MetricsLogger
from composer_prime.utils.progress import step_progress

logger = logging.getLogger("composer_prime.orchestrator")


class StepLoop:
    def __init__(self, config: OrchestratorConfig, source: RolloutSource, sink: StepSink, metrics: MetricsLogger,
                 evaluation: InRunEval | None = None):
        self.config, self.source, self.sink, self.metrics, self.evaluation = config, source, sink, metrics, evaluation

    async def run_steps(self, start: int, progress: Progress) -> None:
        cfg = self.config
        task = progress.add_task("orchestrator", total=cfg.max_steps, completed=start - 1, info="")
        window: dict[int, asyncio.Task] = {}
        try:
            for step in range(start, cfg.max_steps + 1):
                for ahead in range(step, min(cfg.max_steps, step + self.source.lookahead) + 1):
                    if ahead not in window:
                        window[ahead] = asyncio.create_task(self.source.collect_step(ahead))
                collected = await window.pop(step)
                record = await self.sink.publish(step, collected)
                self.source.published(step)
                info = (f"reward {record['reward/mean']:.3f}  len {record['completion_len/mean']:.1f}  "
                        f"{record['rollouts_per_s']:.1f} rollouts/s")
                logger.info("step %d: %s  lag %.1f  dropped %d", step, info, record["off_policy/lag_mean"],
                            collected.stats.dropped_off_policy + collected.stats.dropped_uniform)
                progress.update(task, completed=step, info=info)
                if self.evaluation is not None:
                    await self.evaluation.after(step)
        finally:
            for pending in window.values():
                pending.cancel()

    async def run(self) -> None:
        cfg = self.config
        start = next_step(cfg.output_dir, cfg.train_world_size)
        log_unlogged_steps(cfg.output_dir, cfg.train_world_size, self.metrics)
        if start > 1:
            logger.info("resuming at step %d", start)
        first = await self.evaluation.start(start) if self.evaluation is not None else None
        with step_progress("orchestrator", Console(stderr=True), cfg.log.progress, cfg.log.progress_interval_s
                           ) as progress:
            await self.run_steps(start, progress)
        if first is not None:
            await self.evaluation.final(first)


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


async def _run(loop: StepLoop) -> None:
    try:
        await _until_either_fails(loop.run(), loop.source.serve())
    finally:
        await loop.sink.aclose()


async def _from_inference(config: OrchestratorConfig, env: Environment, tokenizer: PreTrainedTokenizerBase,
                          metrics: MetricsLogger) -> None:
    try:
        async with InferenceClient(config.inference_url) as client:
            health = await client.wait_until_ready(timeout_s=config.inference_timeout_s)
            weights = WeightSync(client, config.output_dir, health.weight_version, config.weight_poll_s,
                                 config.weight_timeout_s)
            await weights.refresh()  # serve the newest published version before sampling anything
            source = InferenceSource(config, env, tokenizer, client, weights, seeds_rollouts(config, health))
            evaluation = InRunEval(config, env, tokenizer, client, weights, metrics) if config.eval.num_examples else None
            await _run(StepLoop(config, source, StepSink(config, tokenizer, metrics, client), metrics, evaluation))
    except httpx.TransportError as exc:
        raise UserError(f"lost the inference server at {config.inference_url}: {exc!r}") from None


async def orchestrate(config: OrchestratorConfig) -> None:
    env = load_environment(config.env)
    tokenizer = load_tokenizer(config.model)
    metrics = MetricsLogger(config.output_dir, "orchestrator", config.log.wandb_project,
                            config.model_dump(mode="json"))
    if config.step_store is not None:
        repaired = mirror_missing(Store.from_config(config.step_store), keys.load_or_create_private_key(config.step_key),
                                  config.output_dir, config.train_world_size)
        if repaired:
            logger.info("uploaded steps %s to the step store (published here before a crash, not there)", repaired)
    try:
        if config.source == "workers":
            from composer_prime.orchestrator.volunteers import VolunteerSource  # verification loads torch

            await _run(StepLoop(config, VolunteerSource(config, env, tokenizer), StepSink(config, tokenizer, metrics),
                                metrics))
        else:
            await _from_inference(config, env, tokenizer, metrics)
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
