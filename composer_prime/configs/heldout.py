"""Held-out evaluation settings (no torch: configs import it)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator
from pydantic_config import BaseConfig


class PassAtKConfig(BaseConfig):
    """How held-out prompts are sampled and counted: shared by in-run eval and the `eval` command."""

    temperature: Annotated[float, Field(ge=0, description="Eval sampling temperature (0 = greedy).")] = 0.0
    k: Annotated[int, Field(ge=1, description="Samples per prompt for pass@k.")] = 1
    samples_per_prompt: Annotated[
        int | None,
        Field(ge=1, description="Samples n drawn per prompt for the unbiased pass@k estimator (n >= k); None: n = k."),
    ] = None
    success_metric: Annotated[
        str | None,
        Field(description="The task's own verdict: an environment metric (1 = solved) that decides whether a sample "
                          "passes, for pass@k and the run's headline. When None, or when the environment does not "
                          "report it, a sample passes when its reward is >= pass_threshold."),
    ] = "exact_match"
    pass_threshold: Annotated[
        float, Field(description="A sample passes when its reward is >= this (environments without success_metric).")
    ] = 1.0

    @property
    def n(self) -> int:
        return self.samples_per_prompt or self.k

    @model_validator(mode="after")
    def _enough_samples(self) -> PassAtKConfig:
        if self.n < self.k:
            raise ValueError(f"samples_per_prompt ({self.n}) must be >= k ({self.k})")
        return self
