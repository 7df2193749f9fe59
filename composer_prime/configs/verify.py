"""Checks on rollouts from volunteer workers (composer_prime/verify): the orchestrator's `[orchestrator.verify]`."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field
from pydantic_config import BaseConfig


class ProofSpec(BaseModel):
    """How workers must build proofs (sent to them when they join)."""

    topk: int = Field(ge=1, description="Values committed to per chunk.")
    decode_batching_size: int = Field(ge=1, description="Completion tokens per chunk.")


class ToplocConfig(BaseConfig):
    """Require TOPLOC proofs with every sample and check them on a fraction."""

    topk: Annotated[int, Field(ge=1, description="Values committed to per chunk (the paper's k; 128 gives 258-byte proofs).")] = 128
    decode_batching_size: Annotated[int, Field(ge=1, description="Completion tokens per chunk (the paper uses 32).")] = 32
    check_fraction: Annotated[
        float, Field(gt=0, le=1, description="Fraction of samples whose proofs are checked (chosen unpredictably).")
    ] = 1.0
    max_exp_mismatches: Annotated[
        int, Field(ge=0, description="A chunk fails when more of its top-k values have a different exponent.")
    ] = 8
    max_mant_err_mean: Annotated[
        float, Field(ge=0, description="... or when the mean |mantissa difference| of the others is larger.")
    ] = 4.0
    max_mant_err_median: Annotated[float, Field(ge=0, description="... or when their median is larger.")] = 2.0

    def spec(self) -> ProofSpec:
        return ProofSpec(topk=self.topk, decode_batching_size=self.decode_batching_size)


class VerifyConfig(BaseConfig):
    """Checks on rollouts submitted by volunteer workers."""

    max_staleness: Annotated[int, Field(ge=0, description="Accept batches sampled at most this many versions behind.")] = 1
    logprob_mean_tolerance: Annotated[
        float, Field(gt=0, description="Reject a sample whose mean |submitted - trusted| log-prob exceeds this.")
    ] = 0.05
    logprob_max_tolerance: Annotated[
        float, Field(gt=0, description="... or whose largest per-token |difference| exceeds this.")
    ] = 1.0
    check_fraction: Annotated[
        float, Field(gt=0, le=1, description="Fraction of samples whose log-probs are recomputed (chosen unpredictably).")
    ] = 1.0
    ban_failure_rate: Annotated[float, Field(gt=0, le=1, description="Ban a worker whose rejected-sample rate exceeds this.")] = 0.2
    ban_min_samples: Annotated[int, Field(ge=1, description="... once it submitted at least this many samples.")] = 16
    secret: Annotated[str, Field(description="Seeds which samples are checked; keep it from workers.")] = "change-me"
    toploc: Annotated[
        ToplocConfig | None, Field(description="Require TOPLOC proofs with every sample (optional extra 'toploc').")
    ] = None
