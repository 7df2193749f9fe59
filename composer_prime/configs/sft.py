"""SFT config (`uv run sft @ file.toml`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field, model_validator
from pydantic_config import BaseConfig

from composer_prime.configs.shared import LogConfig, ModelConfig, OutputDir
from composer_prime.configs.rollout import EnvConfig
from composer_prime.configs.trainer import OptimConfig


class SFTOptimConfig(OptimConfig):
    """AdamW, with a learning rate that suits fine-tuning on demonstrations."""

    lr: Annotated[float, Field(gt=0, description="Peak learning rate.")] = 1e-4


class SFTConfig(BaseConfig):
    """Fine-tune a causal LM on an environment's reference answers (loss on assistant tokens only)."""

    model: ModelConfig = ModelConfig(path="outputs/tiny-model")
    env: EnvConfig = EnvConfig()
    output_dir: OutputDir = Path("outputs/sft")
    save_dir: Annotated[
        Path | None,
        Field(description="Where to save the fine-tuned model and tokenizer (replaced); None: <output_dir>/model."),
    ] = None
    max_steps: Annotated[int, Field(ge=1, description="Optimizer steps.")] = 100
    save_every: Annotated[
        int | None,
        Field(ge=1, description="Also save the model every N steps to <output_dir>/checkpoints/step_N (the same model "
                                "a run with max_steps = N saves: the schedule does not depend on max_steps); None: "
                                "only at the end."),
    ] = None
    batch_size: Annotated[int, Field(ge=1, description="Demonstrations per step.")] = 32
    seed: Annotated[int, Field(description="Seed for the demonstration order.")] = 0
    hinted: Annotated[
        bool, Field(description="Add one hinted demonstration per example (a wrong attempt's feedback as a hint "
                                "before the answer), so the model learns to use hints (hint channel teacher).")
    ] = False
    plain: Annotated[
        bool, Field(description="Train on the plain demonstrations. Off (with hinted on) teaches a warm start to read "
                                "hints without making it better at the task itself, which would leave RL less room.")
    ] = True
    optim: SFTOptimConfig = SFTOptimConfig()
    log: LogConfig = LogConfig()

    @model_validator(mode="after")
    def _some_demonstrations(self) -> SFTConfig:
        if not (self.plain or self.hinted):
            raise ValueError("no demonstrations to train on: set plain or hinted")
        return self
