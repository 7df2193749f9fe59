"""One batch slot against a real inference server: dynamic-sampling redraws and off-policy re-sampling."""

from __future__ import annotations

import asyncio

import pytest
import torch
from safetensors.torch import load_file

from composer_prime.configs.orchestrator import AdvantageConfig, OrchestratorConfig
from composer_prime.configs.shared import ModelConfig
from composer_prime.inference.client import InferenceClient
from composer_prime.inference.protocol import HealthResponse
from composer_prime.model.load import load_tokenizer
from composer_prime.configs.orchestrator import InRunEvalConfig
from composer_prime.configs.rollout import SamplingConfig
from composer_prime.rollout.envs import load_environment
from composer_prime.orchestrator.inference_source import InferenceSource, seeds_rollouts
from composer_prime.orchestrator.source import StepStats
from composer_prime.rollout.single_turn import prompt_index
from composer_prime.orchestrator.weight_sync import WeightSync
from composer_prime.weights import publish_weights


async def _collect(config, url, scenario, source_cls=InferenceSource, **kwargs):
    env, tokenizer = load_environment(config.env), load_tokenizer(config.model)
    async with InferenceClient(url) as client:
        weights = WeightSync(client, config.output_dir, served=0, poll_s=0.05, timeout_s=60)
        source = source_cls(config, env, tokenizer, client, weights, **kwargs)
        watcher = asyncio.create_task(source.serve())
        try:
            return await scenario(source, weights)
        finally:
            watcher.cancel()


@pytest.mark.slow
def test_collect_group_redraws_uniform_groups_and_resamples_stale_ones(tiny_model, inference_url, tmp_path):
    base = dict(model=ModelConfig(path=str(tiny_model)), inference_url=inference_url, batch_size=4,
                sampling=SamplingConfig(max_tokens=4), max_concurrent=2, eval=InRunEvalConfig(num_examples=0))

    # A group of one is always uniform: the first max_redraws draws are dropped, the last is kept with zero advantage.
    uniform = OrchestratorConfig(**base, group_size=1, output_dir=tmp_path / "uniform",
                                 advantage=AdvantageConfig(drop_uniform_groups=True, max_redraws=2))

    async def redraws(source, _weights):
        stats = StepStats()
        group, advantages = await source.collect_group(1, 3, stats)
        return source, stats, group, advantages

    source, stats, group, advantages = asyncio.run(_collect(uniform, inference_url, redraws))
    assert stats.dropped_uniform == 2 and stats.dropped_off_policy == 0 and advantages == [0.0]
    last_draw = prompt_index(uniform.seed, 1, 3, 2, source.num_slots, len(source.train))
    assert group.example.id == source.train[last_draw].id

    # Step 3 with max_off_policy_steps 0 accepts only version 2; the server serves 0 until we publish 2.
    stale = OrchestratorConfig(**base, group_size=2, output_dir=tmp_path / "stale", max_off_policy_steps=0)
    state = {k: v + 1e-3 for k, v in load_file(str(tiny_model / "model.safetensors")).items()}

    async def resample(source, weights):
        stats = StepStats()
        slot = asyncio.create_task(source.collect_group(3, 0, stats))
        while stats.dropped_off_policy == 0:
            assert not slot.done(), "a group from version 0 was accepted for step 3"
            await asyncio.sleep(0.02)
        publish_weights(stale.output_dir, 2, state, (tiny_model / "config.json").read_text())
        group, advantages = await slot
        return stats, group, advantages, weights.served

    stats, group, advantages, served = asyncio.run(_collect(stale, inference_url, resample))
    assert stats.dropped_off_policy == 1 and group.weight_version == 2 and served == 2
    assert sum(advantages) == pytest.approx(0.0, abs=1e-12) and len(advantages) == 2
    assert torch.isfinite(torch.tensor([c.logprobs for c in group.completions])).all()


@pytest.mark.parametrize(("backend", "setting", "seeded"), [
    ("vllm", None, False), ("transformers", None, True), ("vllm", True, True), ("transformers", False, False),
])
def test_training_rollouts_are_seeded_except_on_vllm(backend, setting, seeded):
    """vLLM draws every seeded row with a generator of its own, one row at a time in Python: unseeded by default."""
    config = OrchestratorConfig(seed_rollouts=setting)
    assert seeds_rollouts(config, HealthResponse(weight_version=0, backend=backend, model="m")) is seeded


@pytest.mark.slow
@pytest.mark.parametrize("seeded", [True, False])
def test_collect_group_sends_a_seed_only_when_rollouts_are_seeded(tiny_model, inference_url, tmp_path, seeded):
    """What `seeds_rollouts` decides reaches the requests: a per-slot seed, or none (vLLM's default)."""
    config = OrchestratorConfig(model=ModelConfig(path=str(tiny_model)), inference_url=inference_url, batch_size=4,
                                group_size=2, sampling=SamplingConfig(max_tokens=4), max_concurrent=2,
                                eval=InRunEvalConfig(num_examples=0), output_dir=tmp_path / "run")
    sent: list[int | None] = []

    class Recording(InferenceSource):
        async def rollout(self, example, seed):
            sent.append(seed)
            return await super().rollout(example, seed)

    async def two_slots(source, _weights):
        for slot in (0, 1):
            await source.collect_group(1, slot, StepStats())

    asyncio.run(_collect(config, inference_url, two_slots, Recording, seeded=seeded))
    assert len(sent) >= 2
    if seeded:
        assert all(isinstance(s, int) for s in sent) and len(set(sent)) == len(sent), sent
    else:
        assert sent == [None] * len(sent)
