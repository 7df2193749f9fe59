"""`rl` config: one file that configures inference, orchestrator and trainer together."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field, model_validator
from pydantic_config import BaseConfig

from composer_prime.config import LogConfig, ModelConfig, OutputDir
from composer_prime.inference.config import InferenceConfig
from composer_prime.orchestrator.config import OrchestratorConfig
from composer_prime.trainer.config import TrainerConfig


class RLConfig(BaseConfig):
    """Launch inference, orchestrator and trainer as separate processes on one run directory.

    The shared fields below (model, output_dir, max_steps, seed) are written into every
    sub-config, so the three processes can never disagree on them.
    """

    model: ModelConfig = ModelConfig()
    output_dir: OutputDir = Path("outputs/rl")
    max_steps: Annotated[int, Field(ge=1, description="Trainer steps (one batch of rollouts each).")] = 20
    seed: Annotated[int, Field(description="Seed shared by all processes.")] = 0
    num_train_processes: Annotated[
        int, Field(ge=1, description="Data-parallel trainer processes (torchrun + FSDP2 when > 1).")
    ] = 1
    inference: InferenceConfig = InferenceConfig()
    orchestrator: OrchestratorConfig = OrchestratorConfig()
    trainer: TrainerConfig = TrainerConfig()
    plot: Annotated[bool, Field(description="Write <output_dir>/plots/rl.png with reward and loss curves.")] = True
    log: LogConfig = LogConfig()

    @model_validator(mode="after")
    def _share(self) -> RLConfig:
        for sub in (self.orchestrator, self.trainer):
            sub.output_dir = self.output_dir
            sub.max_steps = self.max_steps
            sub.seed = self.seed
        for sub in (self.inference, self.orchestrator, self.trainer):
            sub.model = self.model.model_copy()
            sub.log.progress = False  # rl draws one progress line for the whole run
        self.inference.output_dir = self.output_dir
        self.inference.seed = self.seed
        self.orchestrator.inference_url = f"http://{self.inference.host}:{self.inference.port}"
        self.orchestrator.train_world_size = self.num_train_processes
        return self
