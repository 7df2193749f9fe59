"""`uv run sft @ configs/quickstart/sft.toml`: supervised fine-tuning on an environment's demonstrations."""

from __future__ import annotations

import logging
import time
from itertools import islice
from pathlib import Path

import torch
from rich import get_console

from composer_prime.cli import run_cli
from composer_prime.configs.sft import SFTConfig
from composer_prime.model.load import load_model, load_tokenizer, resolve_device
from composer_prime.model.save import save_model
from composer_prime.rollout.envs import load_environment
from composer_prime.sft.data import batch_indices, collate, demonstrations, hinted_demonstrations
from composer_prime.utils.metrics import MetricsLogger
from composer_prime.utils.progress import step_progress


def train(config: SFTConfig) -> Path:
    """Fine-tune `config.model` on the env's train demonstrations; returns where it was saved."""
    logging.basicConfig(level=config.log.level.upper())
    torch.manual_seed(config.seed)
    device = resolve_device(config.model)
    tokenizer = load_tokenizer(config.model)
    model = load_model(config.model, device)
    env = load_environment(config.env)
    demos = demonstrations(env.examples("train"), tokenizer) if config.plain else []
    if config.hinted:
        demos += hinted_demonstrations(env.examples("train"), env, tokenizer, config.seed)
    optim = config.optim
    optimizer = torch.optim.AdamW(model.parameters(), lr=optim.lr, betas=optim.betas, weight_decay=optim.weight_decay)
    warmup = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / (optim.warmup_steps + 1)))
    metrics = MetricsLogger(config.output_dir, "sft", config.log.wandb_project, config.model_dump(mode="json"))

    model.train()
    start = time.perf_counter()
    batches = islice(batch_indices(len(demos), config.batch_size, config.seed), config.max_steps)
    with step_progress("sft", get_console(), config.log.progress, config.log.progress_interval_s) as progress:
        bar = progress.add_task("sft", total=config.max_steps, info="")
        for step, indices in enumerate(batches, start=1):
            step_start = time.perf_counter()
            batch = collate([demos[i] for i in indices], tokenizer.pad_token_id)
            batch = {k: v.to(device) for k, v in batch.items()}
            loss = model(**batch).loss
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), optim.max_norm)
            lr = optimizer.param_groups[0]["lr"]
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            warmup.step()
            tokens = int(batch["attention_mask"].sum())
            seconds = time.perf_counter() - step_start
            metrics.log(step, {"loss": loss, "grad_norm": grad_norm, "lr": lr, "tokens": tokens,
                               "tokens_per_s": tokens / seconds})
            progress.update(bar, advance=1, info=f"loss {loss.item():.3f}")
            if config.save_every and step % config.save_every == 0 and step < config.max_steps:
                save_model(model, tokenizer, Path(config.output_dir) / "checkpoints" / f"step_{step}")
    metrics.close()

    save_dir = save_model(model, tokenizer, config.save_dir or Path(config.output_dir) / "model")
    seconds = time.perf_counter() - start
    print(f"sft: {config.max_steps} steps in {seconds:.0f}s, final loss {loss.item():.3f}, saved to {save_dir}")
    return save_dir


def cli() -> None:
    run_cli(SFTConfig, train)
