"""Both rollout sources publish a step through the one sink: same metric keys, traces for both.

The same completions (sampled by a real inference server) reach the sink once through the inference
source and once as a volunteer's verified groups in the pool, whose claimed rewards are lies: the run
scores them again, so rewards, metrics and traces come out as the inference path's.
"""

from __future__ import annotations

import asyncio

import pytest
from transformers import AutoTokenizer

from composer_prime import keys
from composer_prime.configs.shared import ModelConfig
from composer_prime.inference.client import InferenceClient
from composer_prime.configs.orchestrator import InRunEvalConfig, OrchestratorConfig
from composer_prime.orchestrator.inference_source import InferenceSource
from composer_prime.orchestrator.sink import StepSink
from composer_prime.orchestrator.volunteers import PendingGroup, VolunteerSource
from composer_prime.orchestrator.weight_sync import WeightSync
from composer_prime.configs.rollout import EnvConfig, SamplingConfig
from composer_prime.rollout.envs import load_environment
from composer_prime.traces import read_traces, traces_path
from composer_prime.utils.metrics import MetricsLogger
from composer_prime.verify.rollout_batch import RolloutSample

SOURCE_OWN = ("verify/", "workers/", "dropped/partial_groups")


@pytest.mark.slow
def test_volunteer_and_inference_steps_have_the_same_metrics_and_both_write_traces(tiny_model, inference_url, tmp_path):
    base = dict(model=ModelConfig(path=str(tiny_model)), batch_size=4, group_size=2, seq_len=128,
                sampling=SamplingConfig(max_tokens=8), eval=InRunEvalConfig(num_examples=0),
                env=EnvConfig(id="reverse-text", args={"num_examples": 32}))
    via_inference = OrchestratorConfig(**base, inference_url=inference_url, output_dir=tmp_path / "inference")
    keys.load_or_create_private_key(tmp_path / "run.key")  # the key the coordinator signs with
    via_workers = OrchestratorConfig(**base, output_dir=tmp_path / "workers", source="workers", workers={
        "join_token": "long-enough", "run_key": str(tmp_path / "run.key"), "store": {"url": str(tmp_path / "s")}})
    env, tokenizer = load_environment(via_inference.env), AutoTokenizer.from_pretrained(tiny_model)
    train_ids = [e.id for e in env.examples("train")]

    async def publish_both():
        async with InferenceClient(inference_url) as client:
            weights = WeightSync(client, via_inference.output_dir, served=0, poll_s=0.05, timeout_s=60)
            collected = await InferenceSource(via_inference, env, tokenizer, client, weights).collect_step(1)
        records = []
        metrics = MetricsLogger(via_inference.output_dir, "orchestrator")
        records.append(await StepSink(via_inference, tokenizer, metrics).publish(1, collected))
        metrics.close()

        volunteers = VolunteerSource(via_workers, env, tokenizer)
        volunteers.pool.groups = [PendingGroup("w", "b", train_ids.index(g.example.id), g.weight_version, [
            RolloutSample(prompt_ids=g.prompt_ids, completion_ids=c.token_ids, logprobs=c.logprobs, reward=1.0,
                          example_id=train_ids.index(g.example.id)) for c in g.completions]) for g, _ in collected.groups]
        metrics = MetricsLogger(via_workers.output_dir, "orchestrator")
        records.append(await StepSink(via_workers, tokenizer, metrics).publish(1, await volunteers.collect_step(1)))
        metrics.close()
        volunteers.published(1)
        return records, volunteers

    (inference, workers), volunteers = asyncio.run(publish_both())
    assert set(workers) - set(inference) <= {k for k in workers if k.startswith(SOURCE_OWN)}
    assert set(inference) <= set(workers)
    assert any(k.startswith("env/") for k in inference) and "truncated/fraction" in inference
    assert inference["reward/mean"] < 1.0  # the lie would show
    for key in ("reward/mean", "reward/std", "truncated/fraction", "completion_len/mean", "num_loss_tokens"):
        assert workers[key] == pytest.approx(inference[key], abs=1e-12), key

    mine, theirs = (read_traces(traces_path(c.output_dir, 1)) for c in (via_inference, via_workers))
    assert len(theirs) == len(mine) == 4
    assert [(t.messages, t.reward, t.truncated) for t in theirs] == [(t.messages, t.reward, t.truncated) for t in mine]
    assert volunteers.pool.groups == []  # published: the pool let go of the step's groups
