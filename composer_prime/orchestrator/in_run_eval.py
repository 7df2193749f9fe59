"""Held-out evaluation during a run (eval.num_examples > 0, inference source only).

The task's own verdict (e.g. exact match), pass@k, reward and answer length on held-out prompts at the
start (served version), every eval.interval steps, and at the end on version max_steps, sampled at
eval.temperature and greedily, with the weights held still (WeightSync.frozen); then the headline
(heldout/headline.py), with a warning when the reward rose while the verdict fell. A tool environment's
held-out tasks run the training rollouts' multi-turn loop (max_turns, seq_len), with turns and tool errors.
"""

from __future__ import annotations

import logging

from transformers import PreTrainedTokenizerBase

from composer_prime.heldout.evaluate import evaluate, held_out_examples
from composer_prime.heldout.headline import headline
from composer_prime.inference.client import InferenceClient
from composer_prime.configs.orchestrator import OrchestratorConfig
from composer_prime.orchestrator.weight_sync import WeightSync
from composer_prime.configs.rollout import SamplingConfig
from composer_prime.rollout.envs import Environment
from composer_prime.utils.metrics import MetricsLogger, read_metrics

logger = logging.getLogger("composer_prime.orchestrator")


class InRunEval:
    def __init__(self, config: OrchestratorConfig, env: Environment, tokenizer: PreTrainedTokenizerBase,
                 client: InferenceClient, weights: WeightSync, metrics: MetricsLogger):
        self.config, self.env, self.tokenizer = config, env, tokenizer
        self.client, self.weights, self.metrics = client, weights, metrics
        self.examples = held_out_examples(env, config.eval.num_examples)

    async def evaluate(self) -> dict[str, float | int]:
        """Held-out metrics of the served policy: sampled at eval.temperature (eval/*), and greedily
        (eval/greedy/*) when eval.greedy and that temperature is not already 0."""
        cfg, ev = self.config, self.config.eval
        runs = [("eval/", ev.temperature, ev.n, ev.k)]
        if ev.greedy and ev.temperature > 0:
            runs.append(("eval/greedy/", 0.0, 1, 1))
        record: dict[str, float | int] = {}
        async with self.weights.frozen():
            for prefix, temperature, n, k in runs:
                sampling = SamplingConfig(temperature=temperature, max_tokens=cfg.sampling.max_tokens)
                result = await evaluate(
                    self.client, self.env, self.tokenizer, self.examples, sampling, k=k, samples_per_prompt=n,
                    success_metric=ev.success_metric, pass_threshold=ev.pass_threshold, seed=cfg.seed,
                    max_concurrent=cfg.max_concurrent, max_turns=cfg.max_turns, seq_len=cfg.seq_len,
                )
                record |= result.metrics(prefix)
                record["eval/verdict"] = result.verdict
                logger.info("eval %s %s", prefix.strip("/"), result.summary())
        return record

    async def start(self, start: int) -> dict[str, float | int]:
        """The held-out metrics before training: this run's first eval record, else measured now."""
        earlier = [r for r in read_metrics(self.config.output_dir, "orchestrator") if "eval/reward" in r]
        if earlier:
            return earlier[0]
        record = await self.evaluate()
        self.metrics.log(start - 1, record)
        return record

    async def after(self, step: int) -> None:
        """Every eval.interval steps, except the last (final evaluates it)."""
        interval = self.config.eval.interval
        if interval and step % interval == 0 and step < self.config.max_steps:
            self.metrics.log(step, await self.evaluate())

    async def final(self, first: dict[str, float | int]) -> None:
        last = self.config.max_steps
        await self.weights.wait_published(last)
        await self.weights.wait_served(last)
        record = await self.evaluate()
        for prefix in ("eval/", "eval/greedy/"):
            if f"{prefix}solved" in record and f"{prefix}solved" in first:
                record[f"{prefix}solved_start"] = first[f"{prefix}solved"]
                record[f"{prefix}solved_end"] = record[f"{prefix}solved"]
                record[f"{prefix}solved_delta"] = record[f"{prefix}solved"] - first[f"{prefix}solved"]
        record |= {"eval/reward_start": first["eval/reward"], "eval/reward_end": record["eval/reward"],
                   "eval/delta": record["eval/reward"] - first["eval/reward"]}
        self.metrics.log(last, record)
        for line in headline(record):
            print(line, flush=True)
