"""Trainer config (`uv run trainer @ file.toml`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field
from pydantic_config import BaseConfig

from composer_prime.config import LogConfig, ModelConfig, NumThreads


class OptimConfig(BaseConfig):
    """AdamW."""

    lr: Annotated[float, Field(gt=0, description="Learning rate.")] = 1e-6
    weight_decay: Annotated[float, Field(ge=0, description="Decoupled weight decay.")] = 0.0
    betas: Annotated[tuple[float, float], Field(description="Adam betas.")] = (0.9, 0.999)
    max_norm: Annotated[float, Field(gt=0, description="Gradient clipping norm.")] = 1.0
    warmup_steps: Annotated[int, Field(ge=0, description="Linear learning-rate warm-up steps.")] = 0


class DPPOLossConfig(BaseConfig):
    """PRIME-RL's default loss: masked importance-weighted policy gradient (see loss/dppo.py)."""

    type: Literal["dppo"] = "dppo"
    mask_low: Annotated[float, Field(ge=0, description="Mask tokens with A <= 0 and p_train - p_inf < -mask_low.")] = 0.2
    mask_high: Annotated[float, Field(ge=0, description="Mask tokens with A > 0 and p_train - p_inf > mask_high.")] = 0.2
    kl_coef: Annotated[float, Field(ge=0, description="Weight of the (log r)^2 mismatch penalty.")] = 1e-3


class CustomLossConfig(BaseConfig):
    """A user loss `fn(inputs: LossInputs, **kwargs) -> LossOutputs`, PRIME-RL compatible."""

    type: Literal["custom"] = "custom"
    import_path: Annotated[str, Field(description="`package.module.function` of the loss.")]
    kwargs: Annotated[dict[str, Any], Field(description="Keyword arguments passed to the loss.")] = {}


class CheckpointConfig(BaseConfig):
    interval: Annotated[int, Field(ge=1, description="Save model + optimizer + step + RNG every N steps.")] = 1
    keep_last: Annotated[int, Field(ge=1, description="Checkpoints to keep on disk.")] = 2
    resume: Annotated[bool, Field(description="Resume from the newest checkpoint in output_dir if there is one.")] = True


class TrainerConfig(BaseConfig):
    """Reads packed batches, steps the policy, checkpoints and publishes weight versions."""

    model: ModelConfig = ModelConfig()
    output_dir: Annotated[Path, Field(description="Run directory shared with the orchestrator.")] = Path("outputs/run")
    max_steps: Annotated[int, Field(ge=1, description="Optimizer steps to take.")] = 20
    seed: Annotated[int, Field(description="Torch seed.")] = 0
    optim: OptimConfig = OptimConfig()
    loss: Annotated[DPPOLossConfig | CustomLossConfig, Field(discriminator="type")] = DPPOLossConfig()
    ckpt: CheckpointConfig = CheckpointConfig()
    keep_weight_versions: Annotated[int, Field(ge=1, description="Published weight versions kept on disk.")] = 3
    batch_timeout_s: Annotated[
        float, Field(gt=0, description="Give up when no batch arrives for this long (orchestrator gone).")
    ] = 1800.0
    num_threads: NumThreads = None
    log: LogConfig = LogConfig()
