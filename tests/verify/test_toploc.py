"""TOPLOC proofs with the real `toploc` package (optional extra; skipped without it) on the quickstart model.

Proofs are built from one model's hidden states and checked against another forward: the same
weights pass, altered tokens and other weights fail, and the verifier turns that into per-sample
reasons. (CI installs the extra: .ci/run.)"""

from __future__ import annotations

import copy
from pathlib import Path

import msgspec
import pytest
import torch
from transformers import AutoTokenizer

from composer_prime.configs.verify import ToplocConfig
from noise import add_weight_noise_
from composer_prime.verify.rollout_batch import signed_bytes
from composer_prime.verify.scorer import ModelScorer
from composer_prime.verify.toploc import build_proofs, num_proofs, proof_mismatch

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


def test_verifier_requires_proofs_and_rejects_those_of_other_weights(run, tmp_path):
    registry, workers = run.registry(tmp_path / "workers.json", "w")
    wid, key = workers["w"]
    verifier = run.verifier(registry, toploc=CONFIG)
    assignment, signed = run.assign(registry, wid)
    samples, scorer = run.honest(assignment), run.scorer
    wrong = _perturbed(scorer.model(0), 0.3)

    def proofs(model, s) -> list[bytes]:
        ids = s.prompt_ids + s.completion_ids
        return build_proofs(_hidden(model, ids), len(s.prompt_ids), CONFIG.spec())

    samples = [msgspec.structs.replace(s, proofs=proofs(scorer.model(0), s)) for s in samples[:6]] + [
        samples[6], msgspec.structs.replace(samples[7], proofs=proofs(wrong, samples[7]))]
    decision = verifier.verify(signed_bytes(run.batch(wid, assignment, signed, samples), key), current_version=1)
    assert len(decision.accepted) == 6 and decision.accepted[0].proofs == samples[0].proofs
    assert decision.rejected == [(6, "toploc-missing"), (7, "toploc-mismatch")]
    assert registry.summary()[wid]["reasons"] == {"toploc-missing": 1, "toploc-mismatch": 1}
