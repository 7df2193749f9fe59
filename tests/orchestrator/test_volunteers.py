"""Volunteer rollouts into steps: grouping a verified batch, the off-policy rule, the config's guard rails.
(The whole path with real processes is tests/e2e/test_decentralised.py.)"""

import asyncio
from pathlib import Path

import pytest
from pydantic import ValidationError
from transformers import AutoTokenizer

from composer_prime import keys
from composer_prime.configs.orchestrator import OrchestratorConfig
from composer_prime.errors import UserError
from composer_prime.orchestrator.volunteers import PendingGroup, VolunteerSource, groups_of, take_groups
from composer_prime.rollout.envs import load_environment
from composer_prime.verify.rollout_batch import RolloutSample
from composer_prime.verify.verifier import Decision


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
    warmstart = Path(__file__).resolve().parents[2] / "configs" / "quickstart" / "warmstart"
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
