"""What a rollout needs to know: the environment and how to sample (no torch: configs import it)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field
from pydantic_config import BaseConfig


class EnvConfig(BaseConfig):
    """A verifiers environment package installed from `environments/`, loaded by id."""

    id: Annotated[str, Field(description="Environment id (package name, e.g. 'reverse-text').")] = "reverse-text"
    args: Annotated[dict[str, Any], Field(description="Taskset config fields passed to the environment.")] = {}


class SamplingConfig(BaseConfig):
    """How every turn of a rollout is sampled, passed whole to the rollout functions."""

    temperature: Annotated[
        float, Field(ge=0, description="Sampling temperature (0 = greedy, eval only); the trainer uses the same one.")
    ] = 1.0
    top_p: Annotated[float, Field(gt=0, le=1, description="Nucleus sampling mass.")] = 1.0
    max_tokens: Annotated[int, Field(ge=1, description="Most completion tokens per turn.")] = 64
