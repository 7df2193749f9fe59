"""The trainer process (`uv run trainer @ file.toml`, or one rank of `torchrun ... -m composer_prime.trainer.main`).

Per step: wait for this rank's batch, train on it, checkpoint (every `ckpt.interval`),
publish the new weight version, log. With `[trainer.diloco]` the trainer is one site of a
Streaming DiLoCo run (trainer/diloco_site.py): it trains its shard of each step (`[trainer.data]`) and
only the lead site publishes versions. Resumes from the newest checkpoint and continues
bit-exactly; weight versions newer than that checkpoint are deleted, since they will be
recomputed.
"""

from __future__ import annotations

import logging
import shutil
import time
from contextlib import nullcontext
from pathlib import Path

import torch

from composer_prime import keys
from composer_prime.store import Store
from composer_prime.cli import run_cli
from composer_prime.configs.trainer import TrainerConfig
from composer_prime.errors import UserError
from composer_prime.loss.resolve import resolve_loss
from composer_prime.trainer import checkpoint as ckpt
from composer_prime.trainer.build import build_train_model, inference_state_dict
from composer_prime.trainer.channels import LossChannel, build_channels
from composer_prime.trainer.data import own_share, wait_for_batch
from composer_prime.trainer.parallel import World, barrier, close_world, init_world
from composer_prime.trainer.diloco_site import DiLoCoTrainerSite
from composer_prime.trainer.progress import StepReporter
from composer_prime.trainer.step import learning_rate, train_step
from composer_prime.utils.fs import remove_hidden
from composer_prime.utils.metrics import MetricsLogger, read_metrics
from composer_prime.weights import broadcast_root, list_versions, prune_versions, publish_weights, version_dir

logger = logging.getLogger("composer_prime.trainer")


def _resume(config: TrainerConfig, model, optimizer, world: World) -> int:
    """Restore the newest checkpoint if resuming; returns the step it ends (0: fresh start)."""
    steps = ckpt.list_checkpoints(config.output_dir) if config.ckpt.resume else []
    if not steps:
        return 0
    step = steps[-1]
    path = ckpt.checkpoint_dir(config.output_dir, step)
    ckpt.load_train_state(path, model, optimizer)
    ckpt.restore_rng(path, world.rank)
    logger.info("resumed from %s", path)
    return step


def _drop_versions_after(config: TrainerConfig, step: int) -> None:
    """Versions > step come from a run that crashed before checkpointing them: they will be recomputed."""
    for version in list_versions(config.output_dir):
        if version > step:
            shutil.rmtree(version_dir(config.output_dir, version), ignore_errors=True)
    remove_hidden(broadcast_root(config.output_dir))  # half-written versions


def _checkpoint(config: TrainerConfig, step: int, model, optimizer, world: World, site: DiLoCoTrainerSite | None,
                record: dict | None) -> None:
    if world.is_main:
        ckpt.begin_checkpoint(config.output_dir, step)
    barrier(world)
    staging = ckpt.staging_dir(config.output_dir, step)
    ckpt.write_rng(staging, world.rank)
    ckpt.save_train_state(staging, model, optimizer)
    barrier(world)
    if world.is_main:
        ckpt.finish_checkpoint(
            config.output_dir, step, world.world_size, config.ckpt.keep_last, model.config.to_json_string(),
            _assets_dir(config), lora=config.lora.model_dump() if config.lora is not None else None,
            diloco_state=site.state_dict() if site is not None else None, metrics=record,
        )


def _assets_dir(config: TrainerConfig) -> Path | None:
    """Where the tokenizer files that versions and checkpoints carry along come from."""
    return Path(config.model.path) if Path(config.model.path).is_dir() else None


def _complete_resumed_step(config: TrainerConfig, step: int, metrics: MetricsLogger | None) -> None:
    """Log the resumed checkpoint's own step if the killed run saved it but died before logging it.

    Only where this run's own records stop short of it: a checkpoint copied into a new run directory
    brings no history, and its step is not this run's to log."""
    if metrics is None:  # not the main rank: it logs nothing
        return
    steps = {r["step"] for r in read_metrics(config.output_dir, "trainer") if "loss" in r}
    if step in steps or not any(s < step for s in steps):
        return
    if (record := ckpt.load_metrics(ckpt.checkpoint_dir(config.output_dir, step))) is not None:
        metrics.log(step, record)


def train(config: TrainerConfig, world: World) -> None:
    loss = resolve_loss(config.loss.pg)  # before the model loads: a bad import path fails fast
    if config.diloco is not None and world.distributed:
        raise UserError("trainer.diloco runs one process per site; use num_train_processes = 1 with diloco")
    torch.manual_seed(config.seed)
    model = build_train_model(config, world)
    channels = build_channels(config)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.optim.lr, betas=config.optim.betas, weight_decay=config.optim.weight_decay
    )

    if world.is_main:
        ckpt.remove_staging_dirs(config.output_dir)
    barrier(world)
    start = _resume(config, model, optimizer, world)
    if world.is_main:
        ckpt.remove_checkpoints_after(config.output_dir, start)  # only with ckpt.resume off can any exist
        if config.publish_weights:
            _drop_versions_after(config, start)
    for channel in channels:  # before any step: the preference reference is the initial policy
        channel.prepare(model, world)
    config_json = model.config.to_json_string()
    assets_dir = _assets_dir(config)

    def publish(version: int) -> None:
        state = inference_state_dict(model, config, world)  # a collective: every rank takes part
        if world.is_main:
            publish_weights(config.output_dir, version, state, config_json, assets_dir)
            prune_versions(config.output_dir, config.keep_weight_versions)

    if config.publish_weights and start == 0 and not list_versions(config.output_dir):
        publish(0)  # the initial weights: what volunteer workers pull and verifiers trust before any step

    site = DiLoCoTrainerSite(config.diloco, model, optimizer) if config.diloco is not None else None
    if site is not None and start and (state := ckpt.load_diloco(ckpt.checkpoint_dir(config.output_dir, start))):
        site.load_state_dict(state)  # after the site saved the resumed weights as its starting point
    data_dir = config.data.dir or config.output_dir
    step_store = Store.from_config(config.data.store) if config.data.store is not None else None
    step_public_key = keys.load_public_key(config.data.step_public_key) if config.data.store is not None else None
    data_rank = config.data.shard * world.world_size + world.rank
    data_ranks = config.data.shards * world.world_size

    metrics = None
    if world.is_main:
        metrics = MetricsLogger(config.output_dir, "trainer", config.log.wandb_project, config.model_dump(mode="json"))
    reporter = StepReporter(config.max_steps, start, enabled=world.is_main, progress=config.log.progress,
                            interval_s=config.log.progress_interval_s)
    if start:
        _complete_resumed_step(config, start, metrics)
    if start and config.publish_weights and start not in list_versions(config.output_dir):
        publish(start)  # killed between the checkpoint and its version: the orchestrator waits for it
    step = start
    with site if site is not None else nullcontext():
        try:
            while step < config.max_steps:
                step += 1
                if site is not None:
                    site.step = step
                batch, idle_s = wait_for_batch(data_dir, step, data_rank, data_ranks, config.batch_timeout_s,
                                               step_store, step_public_key)
                if config.data.shards > 1:
                    batch = own_share(batch)
                lr = learning_rate(step, config.optim)
                t0 = time.perf_counter()
                if step == start + 1:
                    log_held_out(metrics, start, channels, model, world, always=True)
                result = train_step(model, optimizer, batch, loss, lr, config.optim.max_norm, world, channels)
                train_s = time.perf_counter() - t0
                if site is not None and (healed := site.after_step()) is not None:
                    step = healed

                record = None
                if metrics is not None:
                    record = {
                        "loss": result.loss,
                        **{f"loss/{k}": v for k, v in result.channel_losses.items()},
                        # channel diagnostics carry their channel's prefix (hint/kl, preference/accuracy, ...)
                        **{k if "/" in k else f"loss/{k}": v for k, v in result.loss_metrics.items()},
                        "grad_norm": result.grad_norm,
                        "skipped": float(result.skipped),
                        "lr": lr,
                        "num_tokens": result.num_tokens,
                        "num_loss_tokens": batch.num_loss_tokens,
                        "tokens_per_s": result.num_tokens / train_s,
                        "idle_s": idle_s,
                        "train_s": train_s,
                        "step_s": time.perf_counter() - t0 + idle_s,  # waiting and training, before saving
                        "off_policy_lag": step - 1 - batch.min_policy_version,
                    }
                # The record goes into the checkpoint first: a kill between the two cannot lose it.
                if step % config.ckpt.interval == 0 or step == config.max_steps:  # the last step: to export, extend
                    _checkpoint(config, step, model, optimizer, world, site, record)
                if config.publish_weights:
                    publish(step)
                if metrics is not None:
                    metrics.log(step, record)
                    reporter.update(step, record)
                log_held_out(metrics, step, channels, model, world, always=step == config.max_steps)
        finally:
            reporter.close()
            if metrics is not None:
                metrics.close()


def log_held_out(metrics: MetricsLogger | None, step: int, channels: list[LossChannel], model, world: World,
                 always: bool) -> None:
    """Every rank evaluates (the forwards are collectives under FSDP); the main rank logs."""
    record = {k: v for channel in channels for k, v in channel.held_out(model, world, step, always).items()}
    if metrics is not None and record:
        metrics.log(step, record)


def main(config: TrainerConfig) -> None:
    logging.basicConfig(level=config.log.level.upper(), format="%(asctime)s trainer %(levelname)s %(message)s")
    if config.num_threads is not None:
        torch.set_num_threads(config.num_threads)
    world = init_world(config.model, config.gpu_memory_fraction)
    train(config, world)
    close_world(world)  # on an error, exiting is enough: torchrun stops the other ranks


def cli() -> None:
    run_cli(TrainerConfig, main)


if __name__ == "__main__":
    cli()
