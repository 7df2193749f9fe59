"""A volunteer worker's config: which run to join, with what token, on which engine."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field
from pydantic_config import BaseConfig

from composer_prime.configs.inference import TransformersBackendConfig, VLLMBackendConfig
from composer_prime.configs.coordinator import WORKER_NAME
from composer_prime.configs.shared import Dtype, NumThreads


class WorkerConfig(BaseConfig):
    """Join a run, pull verified weights, sample rollouts, sign and upload them."""

    run_url: Annotated[str, Field(description="The run coordinator's URL (given by the run's operators).")]
    join_token: Annotated[str, Field(description="The run's join token (given by the run's operators).")]
    run_public_key: Annotated[str, Field(description="The run's public key (hex, or a file holding it; given by the run's "
                                                     "operators): every answer, assignment and weight version is "
                                                     "checked against it.")]
    name: Annotated[str, Field(pattern=WORKER_NAME, description="This worker's name; its id in the run adds its key's "
                                                                "fingerprint. Keep it (and state_dir) across restarts.")]
    state_dir: Annotated[
        Path, Field(description="Key, downloaded weight versions and the upload journal; keep it across restarts.")
    ] = Path("outputs/worker")
    backend: Annotated[
        TransformersBackendConfig | VLLMBackendConfig,
        Field(discriminator="type", description="Sampling engine: vllm on a GPU, transformers on a CPU."),
    ] = TransformersBackendConfig()
    dtype: Annotated[Dtype | None, Field(description="Model dtype; None: bfloat16 on CUDA, float32 on CPU.")] = None
    device: Annotated[str | None, Field(description="torch device; None picks cuda when available.")] = None
    num_threads: NumThreads = None
    max_batches_per_version: Annotated[
        int | None,
        Field(ge=1, description="Upload at most this many batches per weight version, then wait for the next one "
                                "(bounds work on versions the run will find too old); None: no limit."),
    ] = None
    max_batches: Annotated[int | None, Field(ge=1, description="Stop after uploading this many batches; None: run until stopped.")] = None
    heartbeat_s: Annotated[float, Field(gt=0, description="Seconds between heartbeats.")] = 10.0
    retry_s: Annotated[float, Field(gt=0, description="First back-off after a failed request (doubles up to 60 s).")] = 1.0
    seed: Annotated[int, Field(description="Seed for prompt choice and sampling.")] = 0
