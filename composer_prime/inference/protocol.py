"""The inference server's native HTTP protocol (besides the OpenAI-compatible routes).

Shared by the server, the orchestrator's client, volunteer workers and replay teachers.
Bump PROTOCOL_VERSION on any incompatible change; /health reports it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

PROTOCOL_VERSION = 3  # 2: POST /score; 3: Gumbel-max sampling with keyed noise (gumbel_key)


class GenerateRequest(BaseModel):
    """Token-in/token-out sampling: `n` completions of one tokenised prompt."""

    prompt_token_ids: list[int] = Field(min_length=1)
    n: int = Field(default=1, ge=1)
    max_tokens: int = Field(default=64, ge=1)
    temperature: float = Field(default=1.0, ge=0.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    top_k: int = Field(default=-1, description="-1 disables top-k.")
    stop_token_ids: list[int] = Field(default_factory=list, description="Extra stop ids besides the model's EOS.")
    seed: int | None = None
    gumbel_key: int | None = Field(
        default=None, ge=0, lt=2**64,
        description="Draw by Gumbel-max with noise keyed by (gumbel_key, sample, position) (inference/sampling.py), "
                    "which a verifier holding the key re-derives from the logits; needs temperature > 0.")
    gumbel_first_sample: int = Field(default=0, ge=0, description="Completion i of this request is sample "
                                                                  "gumbel_first_sample + i of its key's noise.")

    @model_validator(mode="after")
    def _keyed_draws_sample(self) -> GenerateRequest:
        if self.gumbel_key is not None and self.temperature <= 0:
            raise ValueError("gumbel_key needs temperature > 0 (a greedy draw takes no noise)")
        return self


class Completion(BaseModel):
    token_ids: list[int]
    logprobs: list[float] = Field(description="Log-prob of each sampled token under the distribution it was sampled from.")
    finish_reason: Literal["stop", "length"]


class GenerateResponse(BaseModel):
    completions: list[Completion]
    weight_version: int = Field(description="Policy version that produced every completion of this response.")


class ScoreRequest(BaseModel):
    """Teacher-forced scoring: the model's distribution at every token of a given completion."""

    prompt_token_ids: list[int] = Field(min_length=1)
    completion_token_ids: list[int] = Field(min_length=1)
    temperature: float = Field(default=1.0, gt=0.0, description="Logits are divided by it before the softmax.")
    top_k: int = Field(default=0, ge=0, le=1024, description="Also return the k most likely tokens at each position.")


class ScoreResponse(BaseModel):
    """Per completion token t (all lists have one entry per completion token)."""

    logprobs: list[float] = Field(description="log p(completion[t] | prompt, completion[:t]).")
    entropies: list[float] | None = Field(description="Entropy of the distribution at t (None: the engine cannot tell).")
    top_ids: list[list[int]] = Field(description="The top_k token ids at t, most likely first.")
    top_logprobs: list[list[float]] = Field(description="Their log-probs.")
    weight_version: int


class UpdateWeightsRequest(BaseModel):
    path: str = Field(description="A published version directory (`<output>/broadcasts/step_<N>`).")
    version: int = Field(ge=0)


class UpdateWeightsResponse(BaseModel):
    weight_version: int


class HealthResponse(BaseModel):
    status: Literal["ok"] = "ok"
    protocol_version: int = PROTOCOL_VERSION
    weight_version: int
    backend: str
    model: str
