"""Rollout verification with a real model (the committed quickstart warm start) and real samples.

Honest samples come from the engine a volunteer runs (tests/verify/conftest.py: the transformers backend, KV
cache, keyed Gumbel-max); the verifier recomputes with one teacher-forced float32 forward, an independent code
path. Every attack here is one a volunteer holding its own key and the run's published weights can make.
"""

from __future__ import annotations

import math

import msgspec
import pytest
from pydantic import ValidationError

from composer_prime.configs.verify import VerifyConfig
from composer_prime.verify.rollout_batch import SignedBatch, encode_signed, sign_assignment, signed_bytes
from composer_prime.verify.worker_registry import WorkerRegistry


def test_honest_batches_are_accepted_whole(run, tmp_path):
    registry, workers = run.registry(tmp_path / "workers.json", "honest")
    wid, key = workers["honest"]
    verifier = run.verifier(registry)
    for version in (1, 0):  # current, and one version behind (max_staleness 1)
        decision = verifier.verify(run.upload(wid, key, registry, version), 1)
        assert decision.ok and len(decision.accepted) == 8, (decision.batch_reason, decision.rejected)
    summary = registry.summary()[wid]
    assert summary["samples_accepted"] == 16 and summary["failure_rate"] == 0
    assert not registry.workers[wid].assignments  # both answered


def test_chosen_tokens_with_their_true_logprobs_are_refused_as_not_sampled(run, tmp_path):
    """The attack of issue 30: any completion the worker likes, with the log-probs the run's own published weights
    give it, passes a log-prob check; it is not what the assigned noise draws."""
    registry, workers = run.registry(tmp_path / "workers.json", "mallory")
    wid, key = workers["mallory"]
    verifier = run.verifier(registry)
    assignment, signed = run.assign(registry, wid)
    honest = run.honest(assignment)
    eos = min(run.spec.stop_ids)
    payload = [msgspec.structs.replace(s, completion_ids=(chosen := [*range(40, 40 + len(s.completion_ids) - 1), eos]),
                                       logprobs=run.scorer.logprobs(1, s.prompt_ids, chosen, 1.0)) for s in honest]
    decision = verifier.verify(signed_bytes(run.batch(wid, assignment, signed, payload), key), 1)
    assert not decision.accepted and {r for _, r in decision.rejected} == {"not-sampled"}
    # An honest group replayed under another assignment: true log-probs, tokens of another key's noise.
    second, signed2 = run.assign(registry, wid)
    replay = [msgspec.structs.replace(s, example_id=second.example_ids[i // 4],
                                      prompt_ids=run.spec.prompt_of(second.example_ids[i // 4]),
                                      logprobs=run.scorer.logprobs(1, run.spec.prompt_of(second.example_ids[i // 4]),
                                                                   s.completion_ids, 1.0))
              for i, s in enumerate(honest)]
    decision = verifier.verify(signed_bytes(run.batch(wid, second, signed2, replay), key), 1)
    assert not decision.accepted and {r for _, r in decision.rejected} == {"not-sampled"}


def test_each_attack_on_the_numbers_or_the_shape_of_a_batch_is_refused(run, tmp_path):
    registry, workers = run.registry(tmp_path / "workers.json", "honest", "evil")
    (hid, hkey), (wid, key) = workers["honest"], workers["evil"]
    verifier = run.verifier(registry)

    def attempt(samples_of, issued=0, current=1, **batch):
        assignment, signed = run.assign(registry, wid, issued)
        samples = samples_of(run.honest(assignment))
        return verifier.verify(signed_bytes(run.batch(wid, assignment, signed, samples, **batch), key), current)

    def reasons(decision) -> set[str]:
        return {decision.batch_reason} if decision.batch_reason else {r for _, r in decision.rejected}

    # Fabricated log-probs (inflate importance ratios), NaN or positive ones.
    assert reasons(attempt(lambda s: [msgspec.structs.replace(x, logprobs=[-0.01] * len(x.logprobs)) for x in s])) == {
        "logprob-mismatch"}
    assert reasons(attempt(lambda s: [msgspec.structs.replace(x, logprobs=[math.nan] * len(x.logprobs)) for x in s])) == {
        "malformed-sample"}
    # Tokens altered after sampling, log-probs kept.
    assert reasons(attempt(lambda s: [msgspec.structs.replace(
        x, completion_ids=[(t + 5) % 1000 for t in x.completion_ids[:-1]] + x.completion_ids[-1:]) for x in s])) <= {
        "logprob-mismatch", "malformed-sample"}
    # A completion cut where the worker liked (neither a stop token nor max_tokens).
    assert reasons(attempt(lambda s: [msgspec.structs.replace(x, completion_ids=x.completion_ids[:1],
                                                              logprobs=x.logprobs[:1]) for x in s])) == {"malformed-sample"}
    # Another example's samples, or the assigned example with a prompt of the worker's choosing.
    assert reasons(attempt(lambda s: [msgspec.structs.replace(x, example_id=x.example_id + 1) for x in s])) == {
        "wrong-example"}
    assert reasons(attempt(lambda s: [msgspec.structs.replace(x, prompt_ids=x.prompt_ids + [5]) for x in s])) == {
        "wrong-example"}
    # Not the assigned count: empty, one short, padded.
    for shape in (lambda s: [], lambda s: s[:-1], lambda s: s + s[:1]):
        assert attempt(shape).batch_reason == "wrong-count"
    # Another temperature than the run's: subnormal (NaN trusted log-probs) and huge (any token, -log V).
    for temperature in (1e-310, 1e30, 1.0 + 1e-9):
        assert attempt(lambda s: s, temperature=temperature).batch_reason == "wrong-temperature"
    # Weights from the future are counted; so are weights older than the assignment named (the worker's choice).
    assert attempt(lambda s: s, version=9).batch_reason == "future"
    assert attempt(lambda s: s, version=-5).batch_reason == "wrong-version"
    assert attempt(lambda s: s, issued=1, version=0).batch_reason == "wrong-version"
    # A batch that went stale after it was assigned is dropped, not counted (relays may delay a worker) ...
    before = dict(registry.summary()[wid]["reasons"])
    assert attempt(lambda s: s, version=0, current=5).batch_reason == "stale"
    assert registry.summary()[wid]["reasons"] == before and registry.summary()[wid]["batches_dropped"] == 1
    # ... unless its shape is wrong: then it counts in full, stale or not.
    assert attempt(lambda s: [], version=0, current=5).batch_reason == "wrong-count"
    assert attempt(lambda s: [msgspec.structs.replace(x, example_id=x.example_id + 1) for x in s], version=0,
                   current=5).batch_reason == "wrong-example"
    # Forged signature: a batch in the honest worker's name signed with the attacker's key is never counted against it.
    assignment, signed = run.assign(registry, hid)
    forged = verifier.verify(signed_bytes(run.batch(hid, assignment, signed, run.honest(assignment)), key), 1)
    assert forged.batch_reason == "bad-signature" and registry.summary()[hid]["samples_rejected"] == 0
    # A payload changed after signing.
    data = signed_bytes(run.batch(hid, assignment, signed, run.honest(assignment)), hkey)
    tampered = msgspec.structs.replace(msgspec.msgpack.decode(data, type=SignedBatch),
                                       payload=msgspec.msgpack.decode(data, type=SignedBatch).payload.replace(b"\xcb", b"\xca", 1))
    assert verifier.verify(encode_signed(tampered), 1).batch_reason == "bad-signature"
    # Unregistered, garbage.
    assert verifier.verify(signed_bytes(run.batch("nobody-00000000000000000000", assignment, signed, []), key),
                           1).batch_reason == "unregistered"
    assert verifier.verify(b"\x00garbage", 1).batch_reason == "malformed"
    stats = registry.summary()[wid]
    assert stats["samples_accepted"] == 0
    assert stats["reasons"].keys() == {"logprob-mismatch", "malformed-sample", "wrong-example", "wrong-count",
                                       "wrong-temperature", "future", "wrong-version"}
    # Every refused batch counts its assigned 8 samples, an empty one too.
    assert stats["samples_rejected"] == 8 * (stats["batches_rejected"])


def test_assignments_bind_a_batch_to_its_worker_its_examples_and_one_answer(run, tmp_path):
    registry, workers = run.registry(tmp_path / "workers.json", "ann", "eve")
    (aid, _), (wid, key) = workers["ann"], workers["eve"]
    verifier = run.verifier(registry)
    # Another worker's assignment, or one the worker signed itself.
    theirs, signed = run.assign(registry, aid)
    stolen = run.batch(wid, theirs, signed, run.honest(theirs))
    assert verifier.verify(signed_bytes(stolen, key), 1).batch_reason == "bad-assignment"
    own = msgspec.structs.replace(theirs, worker_id=wid)
    self_made = run.batch(wid, own, sign_assignment(own, key), run.honest(own))
    assert verifier.verify(signed_bytes(self_made, key), 1).batch_reason == "bad-assignment"
    # One answer per assignment: the same bytes again are a retried upload (dropped, not counted); the same group
    # under another batch (here: one field changed) is a replay (counted).
    assignment, signed = run.assign(registry, wid)
    honest = run.batch(wid, assignment, signed, run.honest(assignment))
    assert verifier.verify(signed_bytes(honest, key), 1).ok
    assert verifier.verify(signed_bytes(honest, key), 1).batch_reason == "duplicate"
    assert registry.summary()[wid]["reasons"] == {"bad-assignment": 2}
    replayed = msgspec.structs.replace(honest, samples=[msgspec.structs.replace(s, reward=1.0) for s in honest.samples])
    assert verifier.verify(signed_bytes(replayed, key), 1).batch_reason == "duplicate"
    assert registry.summary()[wid]["reasons"] == {"bad-assignment": 2, "duplicate": 1}
    assert registry.summary()[wid]["samples_accepted"] == 8


def test_unknown_fields_are_refused_at_every_level(run, tmp_path):
    registry, workers = run.registry(tmp_path / "workers.json", "eve")
    wid, key = workers["eve"]
    verifier = run.verifier(registry)
    assignment, signed = run.assign(registry, wid)
    fields = msgspec.to_builtins(run.batch(wid, assignment, signed, run.honest(assignment)))
    for padded in ({**fields, "padding": "x" * 1000},
                   {**fields, "samples": [{**fields["samples"][0], "extra": 1}] + fields["samples"][1:]}):
        payload = msgspec.msgpack.encode(padded)
        data = msgspec.msgpack.encode({"worker_id": wid, "payload": payload, "signature": key.sign(payload)})
        assert verifier.verify(data, 1, uploader=wid).batch_reason == "malformed"
    outer = msgspec.msgpack.encode({"worker_id": wid, "payload": b"", "signature": b"", "junk": 1})
    assert verifier.verify(outer, 1, uploader=wid).batch_reason == "malformed"


def test_a_scorer_that_gives_nan_rejects_rather_than_accepts(run, tmp_path):
    """Fail closed: trusted log-probs that are NaN (here: weights with a NaN) never compare within tolerance."""
    import copy

    import torch

    registry, workers = run.registry(tmp_path / "workers.json", "w")
    wid, key = workers["w"]
    verifier = run.verifier(registry)
    broken = copy.deepcopy(run.scorer.model(0))
    with torch.no_grad():
        broken.lm_head.weight[0, 0] = math.nan
    verifier.scorer = type(run.scorer)(lambda version: None)
    verifier.scorer._models[1] = broken
    decision = verifier.verify(run.upload(wid, key, registry), 1)
    assert not decision.accepted and {r for _, r in decision.rejected} == {"logprob-mismatch"}


def test_worker_past_the_failure_rate_is_banned_and_ban_persists(run, tmp_path):
    registry, workers = run.registry(tmp_path / "workers.json", "evil")
    wid, key = workers["evil"]
    verifier = run.verifier(registry, ban_min_samples=8, ban_failure_rate=0.2)
    assignment, signed = run.assign(registry, wid)
    honest = run.honest(assignment)
    mixed = honest[:5] + [msgspec.structs.replace(s, logprobs=[-0.01] * len(s.logprobs)) for s in honest[5:]]
    decision = verifier.verify(signed_bytes(run.batch(wid, assignment, signed, mixed), key), 1)
    assert len(decision.accepted) == 5 and [i for i, _ in decision.rejected] == [5, 6, 7]
    assert registry.workers[wid].banned  # 3 / 8 > 0.2
    assert verifier.verify(run.upload(wid, key, registry), 1).batch_reason == "banned"
    assert WorkerRegistry(tmp_path / "workers.json").workers[wid].banned  # survives a restart


def test_checking_a_fraction_needs_a_secret_drops_the_whole_batch_and_scales_the_ban(run, tmp_path):
    """Issue 30: with the default secret a worker knew which samples go unchecked; with an unknown one, one
    fabricated sample per group still reached the pool 79 % of the time, never banned."""
    for bad in ({}, {"secret": "change-me"}, {"secret": "change-me-please-now"}, {"secret": "short"}):
        with pytest.raises(ValidationError):
            VerifyConfig(check_fraction=0.25, **bad)
    registry, workers = run.registry(tmp_path / "workers.json", "evil")
    wid, key = workers["evil"]
    verifier = run.verifier(registry, check_fraction=0.25, secret="a-long-random-secret", ban_min_samples=64,
                            ban_failure_rate=0.2)
    reached = sent = 0
    for _ in range(12):
        if registry.workers[wid].banned:
            break
        assignment, signed = run.assign(registry, wid)
        samples = run.honest(assignment)
        for group in range(0, len(samples), 4):  # one fabricated sample in each group of 4
            samples[group] = msgspec.structs.replace(samples[group], logprobs=[-0.01] * len(samples[group].logprobs))
        decision = verifier.verify(signed_bytes(run.batch(wid, assignment, signed, samples), key), 1)
        sent += 2
        reached += sum(1 for s in decision.accepted if s.logprobs[0] == -0.01)
        assert decision.ok or not decision.accepted  # a batch with a failed check is dropped whole
    assert registry.workers[wid].banned and reached < sent


def test_logprobs_forged_within_the_tolerance_never_go_on_to_training(run, tmp_path):
    """Red team, issue 30: the tolerance (mean 0.05, max 1.0 per token) let a worker move one token's log-prob by
    up to min(1.0, 0.05 n) nats on every sample (0.8 on 16 tokens: an importance ratio x2.2), and the submitted
    log-probs were what training used as the sampler's. A checked sample now goes on with the trusted ones."""
    registry, workers = run.registry(tmp_path / "workers.json", "forger")
    wid, key = workers["forger"]
    verifier = run.verifier(registry)
    assignment, signed = run.assign(registry, wid)
    samples = run.honest(assignment)
    forged = []
    for s in samples:
        lps = list(s.logprobs)
        i = min(range(len(lps)), key=lambda j: lps[j])  # lower (never above 0) the least likely token's log-prob
        lps[i] -= min(0.95, 0.045 * len(lps))  # inside mean 0.05 / max 1.0, less the honest noise
        forged.append(msgspec.structs.replace(s, logprobs=lps))
    decision = verifier.verify(signed_bytes(run.batch(wid, assignment, signed, forged), key), 1)
    assert len(decision.accepted) == len(forged)  # within the tolerance, as honest float noise is
    for sent, kept in zip(forged, decision.accepted, strict=True):
        trusted = run.scorer.logprobs(1, sent.prompt_ids, sent.completion_ids, 1.0)
        assert kept.completion_ids == sent.completion_ids and kept.logprobs == pytest.approx(trusted, abs=1e-5)
        assert max(abs(a - b) for a, b in zip(kept.logprobs, sent.logprobs)) > 0.04  # the forgery is gone
