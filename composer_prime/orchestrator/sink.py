"""The one way a step is published, whatever its rollout source (source.py).

For step N's groups and their advantages, in this order:
  1. their samples packed into one TrainBatch per trainer rank (packing.py);
  2. the step's metrics: reward, lengths, truncation, the environment's own metrics (env/*), off-policy
     lag, drops, the rollouts' errors (tool_errors: per tool rollout), and the source's own (StepStats.extra);
  3. with hints on, hint sites (channel 2) picked from the rollouts' traces (hint_sites.py);
  4. the traces, then the step (step_io.write_step: atomic, mirrored to the step store), then the metrics.
Traces are written before the step: a complete step always has its traces.
"""

from __future__ import annotations

import numpy as np
from transformers import PreTrainedTokenizerBase

from composer_prime import keys
from composer_prime.store import Store
from composer_prime.hints.writer import make_hint_writer
from composer_prime.inference.client import InferenceClient
from composer_prime.configs.orchestrator import OrchestratorConfig
from composer_prime.orchestrator.hint_sites import build_hint_sites, pick_sites, rollouts_of
from composer_prime.orchestrator.packing import Sample, pack_step
from composer_prime.orchestrator.source import CollectedStep
from composer_prime.orchestrator.step_io import write_step
from composer_prime.rollout.multi_turn import ToolGroup, tool_errors
from composer_prime.rollout.single_turn import Group, answer_lengths
from composer_prime.traces import write_traces
from composer_prime.utils.metrics import MetricsLogger


def samples_of(group: Group | ToolGroup, advantages: list[float]) -> list[Sample]:
    """A group's completions as training samples; a multi-turn one trains only its sampled turns."""
    if isinstance(group, ToolGroup):
        return [Sample(r.prompt_ids, r.conversation.completion_ids, list(r.conversation.logprobs), a,
                       r.weight_version, completion_mask=list(r.conversation.sampled))
                for r, a in zip(group.rollouts, advantages, strict=True)]
    return [Sample(group.prompt_ids, c.token_ids, c.logprobs, a, group.weight_version)
            for c, a in zip(group.completions, advantages, strict=True)]


def step_metrics(step: int, collected: CollectedStep, num_loss_tokens: int) -> dict[str, float]:
    groups, stats = [g for g, _ in collected.groups], collected.stats
    rewards = np.array([r for g in groups for r in g.rewards], dtype=np.float64)
    lens = np.array([n for g in groups for n in g.completion_lens], dtype=np.float64)
    lags = np.array([step - 1 - g.weight_version for g in groups], dtype=np.float64)
    record = {
        "reward/mean": rewards.mean(),
        "reward/std": rewards.std(),
        "completion_len/mean": lens.mean(),
        "completion_len/max": lens.max(),
        "truncated/fraction": float(np.mean([t for g in groups for t in g.truncated])),
        "dropped/off_policy_groups": stats.dropped_off_policy,
        "dropped/uniform_groups": stats.dropped_uniform,
        "off_policy/lag_mean": lags.mean(),
        "off_policy/lag_max": lags.max(),
        "rollouts_per_s": len(rewards) / max(stats.elapsed_s, 1e-9),
        "time/wait_weights_s": stats.wait_weights_s,
        "time/step_s": stats.elapsed_s,
        "num_loss_tokens": num_loss_tokens,
    }
    record |= answer_lengths([g for g in groups if isinstance(g, Group)])
    record |= tool_errors([g for g in groups if isinstance(g, ToolGroup)])
    names = sorted({name for g in groups for m in g.metrics for name in m})
    for name in names:
        record[f"env/{name}"] = float(np.mean([m[name] for g in groups for m in g.metrics if name in m]))
    return record | stats.extra


class StepSink:
    def __init__(self, config: OrchestratorConfig, tokenizer: PreTrainedTokenizerBase, metrics: MetricsLogger,
                 hint_client: InferenceClient | None = None):
        """`hint_client` scores hint sites (hints.enabled needs it)."""
        self.config, self.tokenizer, self.metrics, self.hint_client = config, tokenizer, metrics, hint_client
        self.hint_writer = make_hint_writer(config.hints.writer)
        self.step_store = Store.from_config(config.step_store) if config.step_store is not None else None
        self.step_key = keys.load_or_create_private_key(config.step_key) if config.step_key is not None else None

    async def publish(self, step: int, collected: CollectedStep) -> dict[str, float]:
        cfg = self.config
        samples = [s for g, advantages in collected.groups for s in samples_of(g, advantages)]
        batches = pack_step(samples, step=step, seq_len=cfg.seq_len, micro_batch_rows=cfg.micro_batch_rows,
                            world_size=cfg.train_world_size, pad_token_id=self.tokenizer.pad_token_id,
                            temperature=cfg.sampling.temperature, top_p=cfg.sampling.top_p)
        record = step_metrics(step, collected, batches[0].num_loss_tokens)
        rollouts = [rollouts_of(step, slot, g, cfg.env.id, cfg.hints) for slot, (g, _) in enumerate(collected.groups)]
        traces = [r.trace for group in rollouts for r in group]
        kinds = [e.kind for t in traces for e in t.errors]
        record["errors/rollouts_with_errors"] = float(np.mean([bool(t.errors) for t in traces]))
        record |= {f"errors/{kind}": kinds.count(kind) for kind in sorted(set(kinds))}
        if cfg.hints.enabled:
            sites = await build_hint_sites(pick_sites(rollouts, cfg.hints.max_sites_per_step), cfg.hints,
                                           self.hint_writer, self.tokenizer, self.hint_client, cfg.sampling.temperature)
            num_hint_tokens = sum(len(s.completion_ids) for s in sites)
            for batch in batches:  # round robin over ranks; every rank divides by the global token count
                batch.hint_sites = sites[batch.rank :: len(batches)]
                batch.num_hint_tokens = num_hint_tokens
            record["hints/sites"] = len(sites)
            record["hints/tokens"] = num_hint_tokens
        write_traces(cfg.output_dir, step, traces)
        write_step(cfg.output_dir, step, batches, record, self.step_store, self.step_key)
        self.metrics.log(step, record)
        return record

    async def aclose(self) -> None:
        await self.hint_writer.aclose()
