"""TOPLOC proofs with the real `toploc` package (optional extra; skipped without it) on the quickstart model.

Proofs are built from one model's hidden states and checked against another forward: the same
weights pass, altered tokens and other weights fail, and the verifier turns that into per-sample
reasons. (CI installs the extra: .ci/run.)"""

from __future__ import annotations

import copy
import uuid
from pathlib import Path

import pytest
import torch
from transformers import AutoTokenizer

from composer_prime import keys
from composer_prime.configs.verify import ToplocConfig
from composer_prime.configs.verify import VerifyConfig
from noise import add_weight_noise_
from composer_prime.verify.rollout_batch import RolloutBatch, RolloutSample, signed_bytes
from composer_prime.verify.scorer import ModelScorer
from composer_prime.verify.toploc import build_proofs, num_proofs, proof_mismatch
from composer_prime.verify.verifier import RolloutVerifier
from composer_prime.verify.worker_registry import WorkerRegistry

pytest.importorskip("toploc")

MODEL = Path(__file__).resolve().parents[2] / "configs" / "quickstart" / "warmstart"
CONFIG = ToplocConfig(decode_batching_size=8)  # several decode chunks per 24-token completion


@pytest.fixture(scope="module")
def scorer() -> ModelScorer:
    return ModelScorer(lambda version: MODEL)


@pytest.fixture(scope="module")
def sample(scorer) -> tuple[list[int], list[int]]:
    tokenizer = AutoTokenizer.from_pretrained(MODEL)
    prompt = list(tokenizer.apply_chat_template([{"role": "user", "content": "reverse the text: hello world"}],
                                                add_generation_prompt=True, tokenize=True, return_dict=False))
    torch.manual_seed(0)
    with torch.no_grad():
        out = scorer.model(0).generate(torch.tensor([prompt]), do_sample=True, max_new_tokens=24, min_new_tokens=24,
                                       temperature=1.0, pad_token_id=tokenizer.pad_token_id)
    return prompt, out[0, len(prompt):].tolist()


def _perturbed(model: torch.nn.Module, noise: float) -> torch.nn.Module:
    return add_weight_noise_(copy.deepcopy(model), noise, seed=1)


def _hidden(model: torch.nn.Module, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return model(torch.tensor([ids]), output_hidden_states=True).hidden_states[-1][0].float()


def test_proofs_of_the_same_weights_pass_and_of_other_weights_or_tokens_fail(scorer, sample):
    prompt, completion = sample
    hidden = scorer.hidden_states(0, prompt + completion)
    proofs = build_proofs(hidden, len(prompt), CONFIG.spec())
    assert len(proofs) == num_proofs(len(completion), CONFIG.spec()) == 4
    assert all(len(p) == 2 * CONFIG.topk + 2 for p in proofs)  # the paper's 258 bytes at k = 128
    assert proof_mismatch(hidden, len(prompt), proofs, CONFIG) is None
    model = scorer.model(0)
    # Numerical noise within the bounds: the same weights computed in bfloat16.
    assert proof_mismatch(_hidden(model.to(torch.bfloat16), prompt + completion), len(prompt), proofs, CONFIG) is None
    model.float()
    # Other weights: a 30 % weight perturbation stands in for a different checkpoint.
    other = _hidden(_perturbed(model, 0.3), prompt + completion)
    assert "exponent mismatches" in proof_mismatch(other, len(prompt), proofs, CONFIG)
    # Other tokens under the same weights: the completion's chunks no longer match.
    altered = prompt + [(t + 7) % model.config.vocab_size for t in completion]
    assert "exponent mismatches" in proof_mismatch(scorer.hidden_states(0, altered), len(prompt), proofs, CONFIG)
    # Dropping a chunk's proof, or a proof that does not decode, is a failure too, not a shorter check.
    assert "3 proofs for 24" in proof_mismatch(hidden, len(prompt), proofs[:-1], CONFIG)
    assert proof_mismatch(hidden, len(prompt), [b"\x00"] * len(proofs), CONFIG) is not None


def test_verifier_requires_proofs_and_rejects_those_of_other_weights(scorer, sample, tmp_path):
    prompt, completion = sample
    registry = WorkerRegistry(tmp_path / "workers.json")
    key = keys.generate_key()
    registry.register("w", keys.public_hex(key))
    config = VerifyConfig(ban_min_samples=1000, toploc=CONFIG)
    verifier = RolloutVerifier(registry, scorer, config, scorer.model(0).config.vocab_size)
    logprobs = scorer.logprobs(0, prompt, completion, 1.0)
    honest = build_proofs(scorer.hidden_states(0, prompt + completion), len(prompt), CONFIG.spec())
    forged = build_proofs(_hidden(_perturbed(scorer.model(0), 0.3), prompt + completion), len(prompt), CONFIG.spec())
    samples = [RolloutSample(prompt, completion, logprobs, proofs=honest), RolloutSample(prompt, completion, logprobs),
               RolloutSample(prompt, completion, logprobs, proofs=forged)]
    batch = RolloutBatch(worker_id="w", batch_id=uuid.uuid4().hex, weight_version=0, temperature=1.0, samples=samples)
    decision = verifier.verify(signed_bytes(batch, key), current_version=0)
    assert len(decision.accepted) == 1 and decision.accepted[0].proofs == honest
    assert decision.rejected == [(1, "toploc-missing"), (2, "toploc-mismatch")]
    assert registry.summary()["w"]["reasons"] == {"toploc-missing": 1, "toploc-mismatch": 1}
