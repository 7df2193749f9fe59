"""A small regression task run as one DiLoCo site process (tests, benchmarks, demos).

    python -m composer_prime.diloco.toy @ site.toml

All sites start from the same model (seeded); each trains on its own stream of samples of one
fixed teacher function and reports the held-out loss. Writes `<out>/progress` (outer step, after
every inner step), `<out>/final.safetensors` and `<out>/result.json`.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Annotated, Literal

import torch
from pydantic import Field
from pydantic_config import BaseConfig
from safetensors.torch import save_file
from torch import nn

from composer_prime.cli import run_cli
from composer_prime.configs.diloco import DiLoCoConfig
from composer_prime.utils.fs import atomic_write_bytes

IN_DIM = 16

Attack = Literal["none", "scale100", "nan", "signflip", "rotate"]
ROTATION = ("signflip", "scale100", "nan")


class Rotate:
    """One attack per round in turn, so one run shows each being caught (or let through)."""

    def __init__(self) -> None:
        self.round = 0

    def __call__(self, pg: torch.Tensor) -> torch.Tensor:
        attack = ROTATION[self.round % len(ROTATION)]
        self.round += 1
        return ATTACKS[attack](pg)

ATTACKS = {
    "none": None,
    "scale100": lambda pg: pg * 100,
    "nan": lambda pg: pg.index_fill_(0, torch.arange(0, pg.numel(), 7), float("nan")),
    "signflip": lambda pg: -pg,
}


class ToySiteConfig(BaseConfig):
    """One site of the toy DiLoCo run."""

    diloco: DiLoCoConfig
    out: Annotated[Path, Field(description="Where this site writes progress, final weights and result.json.")]
    outer_steps: Annotated[int, Field(ge=1, description="Stop once this many fragment syncs committed.")] = 6
    batch_size: Annotated[int, Field(ge=1, description="Samples per inner step.")] = 64
    lr: Annotated[float, Field(gt=0, description="Inner AdamW learning rate.")] = 1e-2
    seed: Annotated[int, Field(description="Model init and teacher seed, shared by all sites.")] = 0
    attack: Annotated[Attack, Field(description="Guarded mode: poison this site's outgoing pseudo-gradients.")] = "none"
    threads: Annotated[int, Field(ge=1, description="torch threads.")] = 1


def make_model(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(IN_DIM, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1))


def teacher(x: torch.Tensor, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed + 1000)
    # A smooth target a small MLP learns in a few hundred steps, so progress (and damage) shows quickly.
    a, b = torch.randn(IN_DIM, 4, generator=g) / IN_DIM**0.5, torch.randn(4, generator=g)
    return (torch.tanh(x @ a) @ b)[:, None]


def batch(site: str, step: int, size: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(zlib.crc32(f"{site}/{step}".encode()))
    x = torch.randn(size, IN_DIM, generator=g)
    return x, teacher(x, seed)


def heldout_loss(model: nn.Module, seed: int) -> float:
    x, y = batch("heldout", 0, 2048, seed)
    with torch.no_grad():
        return float(nn.functional.mse_loss(model(x), y))


def _global_loss(site, seed: int) -> float:
    """Held-out loss of the agreed global parameters (what the run as a whole has learned)."""
    probe = make_model(seed)
    probe.load_state_dict(site.global_state_dict())
    return heldout_loss(probe, seed)


def main(config: ToySiteConfig) -> None:
    torch.set_num_threads(config.threads)
    config.out.mkdir(parents=True, exist_ok=True)
    model = make_model(config.seed)
    inner = torch.optim.AdamW(model.parameters(), lr=config.lr)
    if config.diloco.mode == "torchft":
        from composer_prime.diloco.site import DiLoCoSite
        site = DiLoCoSite(config.diloco, model, inner)
    else:
        from composer_prime.diloco.guarded import GuardedDiLoCoSite
        site = GuardedDiLoCoSite(config.diloco, model, inner, tamper=Rotate() if config.attack == "rotate" else ATTACKS[config.attack])
    start_loss = heldout_loss(model, config.seed)
    global_losses = []  # held-out loss of the agreed parameters after each outer step
    with site:
        while site.outer_step < config.outer_steps:
            before = site.outer_step
            x, y = batch(config.diloco.site_id, site.inner_steps, config.batch_size, config.seed)
            loss = nn.functional.mse_loss(model(x), y)
            inner.zero_grad()
            loss.backward()
            inner.step()
            if site.after_inner_step() != before:
                global_losses.append(_global_loss(site, config.seed))
            atomic_write_bytes(config.out / "progress", str(site.outer_step).encode())
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(config.out / "final.safetensors"))
    save_file({k: v.contiguous() for k, v in site.global_state_dict().items()}, str(config.out / "global.safetensors"))
    result = {
        "site": config.diloco.site_id, "outer_steps": site.outer_step, "inner_steps": site.inner_steps,
        "samples": site.inner_steps * config.batch_size, "start_loss": start_loss,
        "heldout_loss": heldout_loss(model, config.seed),
        "global_heldout_loss": _global_loss(site, config.seed),
        "global_losses": global_losses,
        "bytes_allreduced": getattr(site, "bytes_allreduced", 0),
        "bytes_exchanged": getattr(getattr(site, "exchange", None), "bytes_sent", 0),
        "rounds": [vars(r) for r in getattr(site, "history", [])],
    }
    atomic_write_bytes(config.out / "result.json", json.dumps(result).encode())
    print(json.dumps({k: v for k, v in result.items() if k != "rounds"}), flush=True)


def cli() -> None:
    run_cli(ToySiteConfig, main)


if __name__ == "__main__":
    cli()
