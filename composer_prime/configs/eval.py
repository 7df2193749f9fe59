"""`eval` command config (`uv run eval --model.path DIR`): held-out reward and pass@k of one model."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field

from composer_prime.configs.shared import LogConfig, ModelConfig
from composer_prime.configs.inference import ScriptedBackendConfig, TransformersBackendConfig, VLLMBackendConfig
from composer_prime.configs.heldout import PassAtKConfig
from composer_prime.configs.rollout import EnvConfig


class EvalCommandConfig(PassAtKConfig):
    """Start an inference server on a model, evaluate it on an environment's eval split, stop the server."""

    model: ModelConfig = ModelConfig()
    env: EnvConfig = EnvConfig()
    num_examples: Annotated[int, Field(ge=1, description="Held-out prompts to evaluate on.")] = 64
    max_tokens: Annotated[int, Field(ge=1, description="Most completion tokens per sample (per turn with tools).")] = 64
    max_turns: Annotated[
        int, Field(ge=1, description="Tool environments: most assistant turns per rollout, as orchestrator.max_turns.")
    ] = 30
    seq_len: Annotated[
        int, Field(ge=8, description="Tool environments: most tokens of a whole conversation (prompt, turns, tool "
                                     "output), as orchestrator.seq_len; a rollout stops when the next turn would "
                                     "not fit.")
    ] = 32768
    seed: Annotated[int, Field(description="Seed of the per-prompt sampling seeds.")] = 0
    max_concurrent: Annotated[int, Field(ge=1, description="Prompts in flight at once.")] = 16
    port: Annotated[
        int | None, Field(ge=1, le=65535, description="Port for the inference server; None picks a free one.")
    ] = None
    backend: Annotated[
        TransformersBackendConfig | VLLMBackendConfig | ScriptedBackendConfig,
        Field(discriminator="type", description="Sampling engine of the inference server (scripted: a "
                                                "feature-deletion script instead of the model, to check the pipeline)."),
    ] = TransformersBackendConfig()
    startup_timeout_s: Annotated[
        float, Field(gt=0, description="Give up when the inference server is not ready after this long.")
    ] = 600.0
    output_dir: Annotated[
        Path | None, Field(description="Append the results to <output_dir>/metrics.jsonl and keep the server log.")
    ] = None
    log: LogConfig = LogConfig()
