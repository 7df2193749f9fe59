"""Rollout verification with a real model (the committed quickstart warm start) and real samples.

Honest samples come from transformers' own sampler (`generate`, KV cache, raw logits at T); the
verifier recomputes with one teacher-forced float32 forward, an independent code path.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import msgspec
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from composer_prime import keys
from composer_prime.configs.verify import VerifyConfig
from composer_prime.verify.rollout_batch import RolloutBatch, RolloutSample, SignedBatch, encode_signed, signed_bytes
from composer_prime.verify.scorer import ModelScorer
from composer_prime.verify.verifier import RolloutVerifier
from composer_prime.verify.worker_registry import WorkerRegistry

MODEL = Path(__file__).resolve().parents[2] / "configs" / "quickstart" / "warmstart"
T = 1.0


@pytest.fixture(scope="module")
def model():
    return AutoModelForCausalLM.from_pretrained(MODEL, dtype=torch.float32).eval()


@pytest.fixture(scope="module")
def samples(model) -> list[RolloutSample]:
    """16 honest samples: 4 prompts x 4 completions, sampled at temperature T."""
    tokenizer = AutoTokenizer.from_pretrained(MODEL)
    torch.manual_seed(0)
    out = []
    for i, text in enumerate(["reverse the text: hello world", "reverse: abc def", "say the answer", "copy: one two"]):
        prompt = tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                               return_dict=False)
        with torch.no_grad():
            gen = model.generate(torch.tensor([prompt] * 4), do_sample=True, temperature=T, top_k=0, top_p=1.0,
                                 max_new_tokens=24, output_logits=True, return_dict_in_generate=True)
        logits = torch.stack(gen.logits, 1).float() / T  # [4, new, vocab], raw (unprocessed) logits
        new = gen.sequences[:, len(prompt):]
        lps = logits.log_softmax(-1).gather(2, new[..., None]).squeeze(2)
        for row in range(4):
            n = int((new[row] != model.generation_config.pad_token_id).sum()) or new.shape[1]
            n = min(n, new.shape[1])
            out.append(RolloutSample(prompt_ids=prompt, completion_ids=new[row, :n].tolist(),
                                     logprobs=lps[row, :n].tolist(), example_id=i))
    return out


@pytest.fixture
def setup(model, tmp_path):
    registry = WorkerRegistry(tmp_path / "workers.json")
    worker_keys = {w: keys.generate_key() for w in ("honest", "evil")}
    for w, k in worker_keys.items():
        registry.register(w, keys.public_hex(k))
    scorer = ModelScorer(lambda version: MODEL)
    scorer._models[0] = scorer._models[1] = model  # versions 0 and 1 are the same trusted weights here
    verifier = RolloutVerifier(registry, scorer, VerifyConfig(ban_min_samples=1000), model.config.vocab_size)
    return verifier, registry, worker_keys


def _batch(worker: str, samples, version: int = 1) -> RolloutBatch:
    return RolloutBatch(worker_id=worker, batch_id=uuid.uuid4().hex, weight_version=version, temperature=T,
                        samples=list(samples))


def test_honest_batch_is_accepted_whole(setup, samples):
    verifier, registry, worker_keys = setup
    for version in (1, 0):  # current, and one version behind (max_staleness 1)
        decision = verifier.verify(signed_bytes(_batch("honest", samples, version), worker_keys["honest"]), 1)
        assert decision.ok and len(decision.accepted) == len(samples) == 16
    assert registry.summary()["honest"]["samples_accepted"] == 32 and registry.summary()["honest"]["failure_rate"] == 0


def test_each_attack_is_rejected(setup, samples):
    verifier, registry, worker_keys = setup
    evil = worker_keys["evil"]
    g = torch.Generator().manual_seed(1)
    # Fabricated log-probs: claim every token was likely (inflates importance ratios in the loss).
    fabricated = [msgspec.structs.replace(s, logprobs=[-0.01] * len(s.logprobs)) for s in samples]
    # Altered tokens: keep the sampler's log-probs, swap 3 completion tokens for random ones.
    altered = []
    for s in samples:
        ids = list(s.completion_ids)
        for pos in torch.randperm(len(ids), generator=g)[:3].tolist():
            ids[pos] = (ids[pos] + 1 + int(torch.randint(0, 500, (1,), generator=g))) % 1000
        altered.append(msgspec.structs.replace(s, completion_ids=ids))
    for bad in (fabricated, altered):
        decision = verifier.verify(signed_bytes(_batch("evil", bad), evil), 1)
        assert not decision.accepted and {r for _, r in decision.rejected} == {"logprob-mismatch"}
        assert len(decision.rejected) == len(samples)
    # Stale weights: sampled 3 versions behind the current one.
    assert verifier.verify(signed_bytes(_batch("evil", samples, 2), evil), 5).batch_reason == "stale"
    assert verifier.verify(signed_bytes(_batch("evil", samples, 9), evil), 5).batch_reason == "future"
    # Forged signature: a batch in the honest worker's name signed with the attacker's key.
    forged = verifier.verify(signed_bytes(_batch("honest", samples), evil), 1)
    assert forged.batch_reason == "bad-signature" and not forged.accepted
    assert registry.summary()["honest"]["samples_rejected"] == 0  # a forgery never counts against its victim
    # A payload changed after signing.
    signed = msgspec.msgpack.decode(signed_bytes(_batch("evil", samples), evil), type=SignedBatch)
    tampered = msgspec.structs.replace(signed, payload=signed.payload.replace(b"evil", b"evi1", 1))
    assert verifier.verify(encode_signed(tampered), 1).batch_reason == "bad-signature"
    # Unregistered and garbage.
    assert verifier.verify(signed_bytes(_batch("nobody", samples), evil), 1).batch_reason == "unregistered"
    assert verifier.verify(b"\x00garbage", 1).batch_reason == "malformed"
    stats = registry.summary()["evil"]
    assert stats["samples_accepted"] == 0 and stats["reasons"]["logprob-mismatch"] == 32 and stats["reasons"]["stale"] == 1


def test_duplicate_upload_is_not_counted_twice(setup, samples):
    verifier, registry, worker_keys = setup
    data = signed_bytes(_batch("honest", samples[:4]), worker_keys["honest"])
    assert verifier.verify(data, 1).ok
    assert verifier.verify(data, 1).batch_reason == "duplicate"
    assert registry.summary()["honest"]["samples_accepted"] == 4


def test_worker_past_the_failure_rate_is_banned_and_ban_persists(setup, samples, tmp_path):
    verifier, registry, worker_keys = setup
    verifier.config = VerifyConfig(ban_min_samples=8, ban_failure_rate=0.2)
    mixed = samples[:6] + [msgspec.structs.replace(s, logprobs=[-0.01] * len(s.logprobs)) for s in samples[6:10]]
    decision = verifier.verify(signed_bytes(_batch("evil", mixed), worker_keys["evil"]), 1)
    assert len(decision.accepted) == 6 and [i for i, _ in decision.rejected] == [6, 7, 8, 9]
    assert registry.workers["evil"].banned  # 4 / 10 > 0.2
    assert verifier.verify(signed_bytes(_batch("evil", samples[:2]), worker_keys["evil"]), 1).batch_reason == "banned"
    assert WorkerRegistry(tmp_path / "workers.json").workers["evil"].banned  # survives a restart


def test_partial_check_fraction_still_catches_most_fabrications(setup, samples):
    verifier, _, worker_keys = setup
    verifier.config = VerifyConfig(check_fraction=0.5, ban_min_samples=1000)
    fabricated = [msgspec.structs.replace(s, logprobs=[-0.01] * len(s.logprobs)) for s in samples]
    rejected = sum(len(verifier.verify(signed_bytes(_batch("evil", fabricated), worker_keys["evil"]), 1).rejected)
                   for _ in range(8))
    assert 0.3 * 128 < rejected < 0.7 * 128  # about half were checked, each checked one caught
