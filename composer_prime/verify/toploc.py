"""TOPLOC proofs on volunteer rollouts: Ong et al. 2025, "TOPLOC: A Locality Sensitive Hashing
Scheme for Trustless Verifiable Inference" (arXiv:2501.16007), through the `toploc` package
(optional extra: `uv sync --extra toploc`).

What a proof commits to: the model's last hidden states (the LM head's input) over prompt +
completion, in bfloat16, cut into chunks: the prompt's rows (the prefill), then the completion's
rows `decode_batching_size` at a time. Per chunk, the `topk` largest-magnitude values and their
positions are encoded as a polynomial (258 bytes at k = 128), so a sample carries
1 + ceil(len(completion) / decode_batching_size) proofs.

The worker computes its hidden states with one teacher-forced forward of the tokens it sampled
(a serving engine would capture them while generating; a prefill reproduces decode activations up
to numerical noise, which the tolerances absorb). The verifier runs the same forward with the
trusted weights of the version the batch claims and, per chunk, takes its own top-k positions,
reads the proof's values there and compares them bit-wise:
    exp_mismatches  = #{i : exponent(proof_i) != exponent(trusted_i)}
    mant_err_mean / mant_err_median over the others of |mantissa(proof_i) - mantissa(trusted_i)|
A chunk fails when any of the three passes its bound; a sample fails when any chunk fails.

Next to the log-prob check: the worker commits to its hidden states (d numbers per token, before
the LM head), not to log-probs it reports itself, so the two checks fail in different ways. The
default bounds sit between what honest and dishonest proofs gave on the quickstart model, float32 on
both sides (tests/verify/test_toploc.py): an honest proof gives 0 / 0 / 0; the same weights run in bfloat16 give at most 4 exponent mismatches,
mantissa error mean 1.7, median 1; altered tokens 92 / 19.9 / 12.5; an RL checkpoint of the same
model (800 quickstart steps) 111 / 35 / 35. Workers on other hardware or dtypes need bounds measured
for that pair.
"""

from __future__ import annotations

import math

import torch

from composer_prime.configs.verify import ProofSpec, ToplocConfig
from composer_prime.errors import UserError


def _toploc():
    try:
        import toploc
    except ImportError:
        raise UserError("TOPLOC proofs need the optional extra: uv sync --extra toploc") from None
    return toploc


def require_toploc() -> None:
    """Fail at start-up, not at the first sample, when the extra is missing."""
    _toploc()


def num_proofs(completion_len: int, spec: ProofSpec) -> int:
    return 1 + math.ceil(completion_len / spec.decode_batching_size)


def _activations(hidden: torch.Tensor, prompt_len: int) -> list[torch.Tensor]:
    """[prompt + completion, d] hidden states -> toploc's list: the prefill block, then one row per token."""
    rows = hidden.detach().to("cpu", torch.bfloat16)
    return [rows[:prompt_len], *rows[prompt_len:]]


def build_proofs(hidden: torch.Tensor, prompt_len: int, spec: ProofSpec) -> list[bytes]:
    return list(_toploc().build_proofs_bytes(_activations(hidden, prompt_len),
                                             decode_batching_size=spec.decode_batching_size, topk=spec.topk,
                                             skip_prefill=False))


def proof_mismatch(hidden: torch.Tensor, prompt_len: int, proofs: list[bytes], config: ToplocConfig) -> str | None:
    """None when every chunk is within bounds, else what failed (for the log)."""
    if len(proofs) != num_proofs(hidden.shape[0] - prompt_len, config.spec()):
        return f"{len(proofs)} proofs for {hidden.shape[0] - prompt_len} completion tokens"
    try:
        results = _toploc().verify_proofs_bytes(_activations(hidden, prompt_len), proofs,
                                                decode_batching_size=config.decode_batching_size, topk=config.topk,
                                                skip_prefill=False)
    except Exception as exc:  # noqa: BLE001 - a proof that does not even decode is a failed proof
        return f"undecodable proof ({exc})"
    for chunk, result in enumerate(results):
        # Accept only what is provably within bounds: a NaN figure compares false and fails.
        if not (result.exp_mismatches <= config.max_exp_mismatches and result.mant_err_mean <= config.max_mant_err_mean
                and result.mant_err_median <= config.max_mant_err_median):
            return (f"chunk {chunk}: {result.exp_mismatches} exponent mismatches, mantissa error mean "
                    f"{result.mant_err_mean:.1f} median {result.mant_err_median:.1f}")
    return None
