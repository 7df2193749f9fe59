"""Config pieces shared by every process; `rl` composes the processes' configs and propagates these fields."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import tomli_w
from pydantic import Field
from pydantic_config import BaseConfig

Dtype = Literal["float32", "bfloat16", "float16"]


class ModelConfig(BaseConfig):
    """Which causal LM to load; shared by inference, trainer, sft and eval."""

    path: Annotated[
        str,
        Field(description="Local directory of a Hugging Face causal LM (or a hub name when the network is reachable)."),
    ] = "configs/quickstart/warmstart"
    dtype: Annotated[
        Dtype | None,
        Field(description="Parameter dtype; None picks bfloat16 on CUDA and float32 on CPU."),
    ] = None
    device: Annotated[
        str | None, Field(description="torch device; None picks cuda when available, else cpu.")
    ] = None
    trust_remote_code: Annotated[bool, Field(description="Allow model code shipped with the checkpoint.")] = False


class LogConfig(BaseConfig):
    """Logging for one process."""

    level: Annotated[Literal["debug", "info", "warning", "error"], Field(description="Log level.")] = "info"
    progress: Annotated[
        bool,
        Field(description="Show progress: a rich bar on a terminal, else a plain line every progress_interval_s."),
    ] = True
    progress_interval_s: Annotated[
        float,
        Field(gt=0, description="Seconds between plain progress lines when output is not a terminal "
              "(CI logs, nohup, a file), where a live bar would show nothing until the end."),
    ] = 30.0
    wandb_project: Annotated[
        str | None,
        Field(description="Also log metrics to this Weights & Biases project, one run per process grouped by "
              "the run directory (needs the extra: uv sync --extra wandb; WANDB_MODE=offline keeps it local)."),
    ] = None


class StoreConfig(BaseConfig):
    """An object store or directory; credentials come from the environment (per role: infra/README.md)."""

    url: Annotated[str, Field(description="Local directory, file://, or s3://bucket/prefix.")]
    endpoint_url: Annotated[
        str | None, Field(description="S3 endpoint of a non-AWS server (seaweedfs, minio), e.g. http://127.0.0.1:8333.")
    ] = None
    role: Annotated[
        str | None,
        Field(pattern=r"^[A-Za-z][A-Za-z0-9_]*$",
              description="The run role this process uses the store as (orchestrator, coordinator, publisher, site_b ...): "
                          "its key comes from <ROLE>_ACCESS_KEY_ID and <ROLE>_SECRET_ACCESS_KEY; None: AWS_ACCESS_KEY_ID "
                          "and AWS_SECRET_ACCESS_KEY."),
    ] = None


NumThreads = Annotated[int | None, Field(ge=1, description=(
    "torch intra-op threads of this process; None keeps torch's default (one per core). When trainer and "
    "inference share a few cores, 1 stops their thread pools spinning against each other."))]

OutputDir = Annotated[
    Path, Field(description="Run directory: rollouts, weight versions, checkpoints, metrics and configs live here.")
]


def write_config(config: BaseConfig, path: Path) -> Path:
    """Write a resolved config as TOML that `@ path` reads back into the same config."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(tomli_w.dumps(config.model_dump(mode="json", exclude_none=True)))
    return path
