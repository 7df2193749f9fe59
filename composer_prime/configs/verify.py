"""Checks on rollouts from volunteer workers (composer_prime/verify): the orchestrator's `[orchestrator.verify]`."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, model_validator
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
    secret: Annotated[
        str | None,
        Field(min_length=16, description="Seeds which samples are checked; keep it from workers. Required (and not "
                                         "the old default 'change-me') when any check fraction is below 1."),
    ] = None
    prove_sampling: Annotated[
        bool,
        Field(description="Check that every checked sample's tokens are the ones its assigned noise key draws "
                          "(verify/sampled.py). Off admits engines that cannot draw keyed noise (vLLM): their "
                          "tokens are then only checked to carry their true log-probs, and may be chosen."),
    ] = True
    sampling_tolerance: Annotated[
        float,
        Field(ge=0, description="Largest sampling gap (perturbed-score units) an honest token may show: logits differ "
                                "slightly across machines. Workers sample in float32; measured in "
                                "benchmarks/sampling_proof.py (benchmarks/README.md)."),
    ] = 1e-3
    toploc: Annotated[
        ToplocConfig | None, Field(description="Require TOPLOC proofs with every sample (optional extra 'toploc').")
    ] = None

    @model_validator(mode="after")
    def _unpredictable_checks(self) -> VerifyConfig:
        partial = self.check_fraction < 1 or (self.toploc is not None and self.toploc.check_fraction < 1)
        if partial and (self.secret is None or self.secret.startswith("change-me")):
            raise ValueError("a check fraction below 1 needs verify.secret (16+ characters, not the example's): a worker "
                             "that knows it knows which samples go unchecked")
        return self

    @property
    def fraction_checked(self) -> float:
        """The share of samples the cheapest full check (log-probs, sampling) sees: failure counts are scaled by it."""
        return self.check_fraction
