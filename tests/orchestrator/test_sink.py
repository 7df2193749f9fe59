"""What the sink publishes is what the trainer computes against: the sampler's nucleus (top_p) included.

Issue 29 defect 8: with top_p < 1 the sampler's log-probs are renormalised over the kept tokens (vLLM's
processed log-probs, the transformers backend's alike); a trainer scoring the full distribution sees every
importance ratio below 1. The unit tests of selected_log_softmax cover the trainer's arithmetic; this one carries
top_p the whole way: the orchestrator's sampling config -> real rollouts -> StepSink -> the step file -> the
trainer's reader -> train_step.
"""

from __future__ import annotations

import asyncio

import msgspec
import pytest
import torch
from transformers import AutoTokenizer

from composer_prime.configs.orchestrator import InRunEvalConfig, OrchestratorConfig
from composer_prime.configs.rollout import EnvConfig, SamplingConfig
from composer_prime.configs.shared import ModelConfig
from composer_prime.configs.trainer import DPPOLossConfig
from composer_prime.inference.transformers_backend import TransformersBackend
from composer_prime.loss.resolve import resolve_loss
from composer_prime.model.load import load_train_model
from composer_prime.orchestrator.sink import StepSink
from composer_prime.orchestrator.source import CollectedStep, StepStats
from composer_prime.rollout.envs import load_environment
from composer_prime.rollout.single_turn import rollout_group
from composer_prime.trainer.data import wait_for_batch
from composer_prime.trainer.parallel import World
from composer_prime.trainer.step import train_step
from composer_prime.utils.metrics import MetricsLogger


def test_the_trainer_scores_the_nucleus_the_orchestrator_sampled_from(tiny_model, tmp_path):
    model = ModelConfig(path=str(tiny_model), dtype="float32", device="cpu")
    config = OrchestratorConfig(model=model, batch_size=4, group_size=2, seq_len=128, output_dir=tmp_path,
                                sampling=SamplingConfig(temperature=0.8, top_p=0.6, max_tokens=12),
                                eval=InRunEvalConfig(num_examples=0), env=EnvConfig(id="reverse-text"))
    env, tokenizer = load_environment(config.env), AutoTokenizer.from_pretrained(tiny_model)

    async def publish() -> None:
        backend = TransformersBackend(model, seed=3)
        try:
            groups = [await rollout_group(backend, env, tokenizer, example, config.sampling, n=config.group_size)
                      for example in env.examples("train")[:2]]
        finally:
            await backend.close()
        metrics = MetricsLogger(tmp_path, "orchestrator")
        await StepSink(config, tokenizer, metrics).publish(1, CollectedStep([(g, [1.0, -1.0]) for g in groups],
                                                                            StepStats()))
        metrics.close()

    asyncio.run(publish())
    batch, _ = wait_for_batch(tmp_path, 1, 0, 1, timeout_s=5)
    assert batch.top_p == 0.6 and batch.temperature == 0.8
    trainer = load_train_model(model)
    world = World(rank=0, world_size=1, device=torch.device("cpu"))

    def ratios(sent) -> dict[str, float]:
        optimizer = torch.optim.SGD(trainer.parameters(), lr=0.0)  # the step's inputs, not its update
        return train_step(trainer, optimizer, sent, resolve_loss(DPPOLossConfig()), 0.0, 1e9, world).loss_metrics

    same = ratios(batch)
    assert same["importance_ratio"] == pytest.approx(1.0, abs=1e-5) and same["mismatch_kl_k3"] < 1e-9
    # the nucleus mattered on these samples: scored over the whole vocabulary, every ratio falls below 1
    whole = ratios(msgspec.structs.replace(batch, top_p=1.0))
    assert whole["importance_ratio"] < 0.9 and whole["mismatch_kl_k3"] > 1e-3
