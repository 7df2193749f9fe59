"""Volunteer rollouts into steps: grouping a verified batch, the off-policy rule, the config's guard rails.
(The whole path with real processes is tests/e2e/test_decentralised.py.)"""

import asyncio
from pathlib import Path

import pytest
from pydantic import ValidationError
from transformers import AutoTokenizer

from safetensors.torch import load_file

from composer_prime import keys
from composer_prime.configs.orchestrator import OrchestratorConfig
from composer_prime.coordinator.protocol import rollout_key, worker_id
from composer_prime.errors import UserError
from composer_prime.orchestrator.volunteers import PendingGroup, VolunteerSource, groups_of, take_groups
from composer_prime.rollout.envs import load_environment
from composer_prime.verify.rollout_batch import RolloutBatch, RolloutSample, open_assignment, signed_bytes
from composer_prime.verify.scorer import ModelScorer
from composer_prime.verify.verifier import Decision
from composer_prime.weights import publish_weights

WARMSTART = Path(__file__).resolve().parents[2] / "configs" / "quickstart" / "warmstart"


def _sample(example_id: int) -> RolloutSample:
    return RolloutSample(prompt_ids=[1, 2], completion_ids=[3], logprobs=[-0.5], reward=0.5, example_id=example_id)


def test_a_batch_becomes_complete_groups_and_a_group_that_lost_a_sample_is_dropped():
    decision = Decision("w", "b1", weight_version=4,
                        accepted=[_sample(7)] * 4 + [_sample(2)] * 3 + [_sample(9)] * 4, rejected=[(5, "logprob-mismatch")])
    groups, partial = groups_of(decision, group_size=4)
    assert [(g.example_id, len(g.samples), g.weight_version) for g in groups] == [(7, 4, 4), (9, 4, 4)]
    assert partial == 1


def _group(version: int, step: int = 0) -> PendingGroup:
    return PendingGroup("w", f"b{version}", 0, version, [_sample(0)], step=step)


def test_take_groups_drops_too_old_ones_and_waits_for_enough():
    pool = [_group(1), _group(3), _group(4), _group(6, step=9)]
    # Step 7 with max_off_policy_steps 2 accepts versions >= 4; the group taken by step 9 is not free.
    taken, stale = take_groups(pool, step=7, count=2, max_off_policy_steps=2)
    assert taken is None and stale == 2
    assert [g.weight_version for g in pool] == [4, 6]
    pool.append(_group(5))
    taken, stale = take_groups(pool, step=7, count=2, max_off_policy_steps=2)
    assert [g.weight_version for g in taken] == [4, 5] and stale == 0
    # A restart reuses the groups a crashed run had already tagged for the same step.
    taken, _ = take_groups(pool, step=9, count=3, max_off_policy_steps=4)
    assert [g.weight_version for g in taken] == [4, 5, 6]


def test_workers_source_needs_its_section_and_refuses_eval_and_hints():
    with pytest.raises(ValidationError, match="needs an \\[orchestrator.workers\\] section"):
        OrchestratorConfig(source="workers")
    workers = {"join_token": "long-enough", "run_key": "/tmp/run.key", "store": {"url": "/tmp/store"}}
    with pytest.raises(ValidationError, match="eval.num_examples = 0 and hints.enabled = false"):
        OrchestratorConfig(source="workers", workers=workers)
    OrchestratorConfig(source="workers", workers=workers, eval={"num_examples": 0})
    for admission in ({"volunteer_tokens": "/tmp/tokens"}, {"join_token": None}):  # both ways in, or none
        with pytest.raises(ValidationError, match="exactly one of workers.join_token"):
            OrchestratorConfig(source="workers", workers=workers | admission, eval={"num_examples": 0})


def test_waiting_for_weights_that_never_come_ends_in_a_one_line_error(tmp_path):
    warmstart = WARMSTART
    keys.load_or_create_private_key(tmp_path / "run.key")
    config = OrchestratorConfig(
        model={"path": str(warmstart)}, output_dir=tmp_path / "run", source="workers", eval={"num_examples": 0},
        weight_poll_s=0.05, weight_timeout_s=0.3, async_level=1,
        workers={"join_token": "long-enough", "run_key": str(tmp_path / "run.key"),
                 "store": {"url": str(tmp_path / "store")}})
    source = VolunteerSource(config, load_environment(config.env), AutoTokenizer.from_pretrained(warmstart))
    # Step 3 needs version 1; no trainer publishes anything.
    with pytest.raises(UserError, match="waited .* for weight version 1 to be published .*is the lead trainer running"):
        asyncio.run(source.collect_step(3))


def test_a_checked_sample_trains_with_the_trusted_logprobs_not_the_workers(tmp_path):
    """Red team, issue 30: log-probs forged inside the verifier's tolerance were accepted and handed on as the
    sampler's (the importance ratio's denominator), so a worker chose them within the tolerance. Through the real
    intake (store, inbox, verifier at check fraction 1) what reaches the rollout group is the trusted recomputation."""
    keys.load_or_create_private_key(tmp_path / "run.key")
    config = OrchestratorConfig(
        model={"path": str(WARMSTART)}, output_dir=tmp_path / "run", source="workers", eval={"num_examples": 0},
        group_size=2, batch_size=2, sampling={"max_tokens": 16},
        # Unproven sampling, so this worker may pick its tokens: only their log-probs are at stake here.
        workers={"join_token": "long-enough", "run_key": str(tmp_path / "run.key"), "prompts_per_batch": 1,
                 "store": {"url": str(tmp_path / "store")}, "verify": {"prove_sampling": False}})
    source = VolunteerSource(config, load_environment(config.env), AutoTokenizer.from_pretrained(WARMSTART))
    publish_weights(config.output_dir, 0, load_file(WARMSTART / "model.safetensors"),
                    (WARMSTART / "config.json").read_text(), WARMSTART)
    key = keys.generate_key()
    wid = worker_id("forger", keys.public_hex(key))
    source.registry.register(wid, keys.public_hex(key))
    signed = source.assigner.issue(source.registry, wid, 0)
    assignment = open_assignment(signed, source.run_key.public_key())
    prompt, scorer = source.prompt_of(assignment.example_ids[0]), ModelScorer(lambda version: WARMSTART)
    completions = [list(range(40, 56)), list(range(60, 76))]  # 16 tokens (max_tokens), no stop token
    true = [scorer.logprobs(0, prompt, c, 1.0) for c in completions]
    forged = [list(lps) for lps in true]
    for lps in forged:
        lps[min(range(16), key=lambda j: lps[j])] -= 0.7  # mean 0.044 <= 0.05, max 0.7 <= 1.0
    samples = [RolloutSample(prompt_ids=prompt, completion_ids=c, logprobs=lps, example_id=assignment.example_ids[0])
               for c, lps in zip(completions, forged)]
    batch = RolloutBatch(worker_id=wid, batch_id=assignment.assignment_id, assignment=signed, weight_version=0,
                         temperature=1.0, samples=samples)
    source.inbox.store.write_bytes(rollout_key(wid, assignment.assignment_id), signed_bytes(batch, key))
    assert source.intake()["verify/samples_accepted"] == 2
    [pending] = source.pool.groups
    group = asyncio.run(source.to_group(pending))
    for trained, trusted, sent in zip(group.completions, true, forged, strict=True):
        assert trained.logprobs == pytest.approx(trusted, abs=1e-5)
        assert max(abs(a - b) for a, b in zip(trained.logprobs, sent)) > 0.6  # the forged value is gone
