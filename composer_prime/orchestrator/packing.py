"""Pack scored samples into one TrainBatch per trainer rank (the contract is in composer_prime/batch.py).

Samples go into rows of `seq_len` tokens by first-fit-decreasing, so rows carry little padding.
Rows are dealt to ranks in snake order by token count (0,1,..,W-1,W-1,..,0,...) to balance work,
and every rank gets the same number of micro-batches of exactly `micro_batch_rows` rows, topped
up with padding-only rows: a rank with fewer forward passes would hang the others' collectives.

A sample longer than `seq_len` keeps its prompt and loses the tail of its completion (with a
warning): the kept tokens' sampler log-probs are still exact because sampling is causal. A
sample whose prompt alone fills a row, or whose kept completion holds no trained token, has
nothing left to train on and is dropped (warning).

A multi-turn sample's completion interleaves sampled turns with context the model did not sample
(tool results, user turns): its `completion_mask` is False there, so those tokens get no loss,
log-prob or advantage, exactly like prompt tokens. Without a mask every completion token trains.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, replace

import numpy as np

from composer_prime.batch import Array, MicroBatch, TrainBatch
from composer_prime.errors import UserError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Sample:
    """One scored completion, ready to train on."""

    prompt_ids: list[int]
    completion_ids: list[int]
    completion_logprobs: list[float]
    advantage: float
    policy_version: int
    completion_mask: list[bool] | None = None
    """Which completion tokens the model sampled (trained on); None: all of them."""

    def __len__(self) -> int:
        return len(self.prompt_ids) + len(self.completion_ids)

    @property
    def trained(self) -> list[bool]:
        return [True] * len(self.completion_ids) if self.completion_mask is None else self.completion_mask


def fit_to_seq_len(sample: Sample, seq_len: int) -> Sample | None:
    """The sample cut to `seq_len` tokens, or None when not one completion token fits."""
    if len(sample) <= seq_len:
        return sample
    keep = seq_len - len(sample.prompt_ids)
    if keep <= 0:
        logger.warning("dropping a sample: its prompt (%d tokens) fills seq_len %d", len(sample.prompt_ids), seq_len)
        return None
    mask = None if sample.completion_mask is None else sample.completion_mask[:keep]
    if mask is not None and not any(mask):
        logger.warning("dropping a sample: no sampled token within seq_len %d", seq_len)
        return None
    logger.warning("truncating a sample of %d tokens to seq_len %d", len(sample), seq_len)
    return replace(sample, completion_ids=sample.completion_ids[:keep],
                   completion_logprobs=sample.completion_logprobs[:keep], completion_mask=mask)


def first_fit_decreasing(lengths: list[int], capacity: int) -> list[list[int]]:
    """Bins of item indices: longest item first, each into the first bin with room (ties by index)."""
    bins: list[list[int]] = []
    free: list[int] = []
    for i in sorted(range(len(lengths)), key=lambda i: (-lengths[i], i)):
        for b, room in enumerate(free):
            if lengths[i] <= room:
                bins[b].append(i)
                free[b] -= lengths[i]
                break
        else:
            bins.append([i])
            free.append(capacity - lengths[i])
    return bins


def _row(samples: list[Sample], seq_len: int, pad_token_id: int) -> dict[str, np.ndarray]:
    ids, pos, mask, adv, lps = [], [], [], [], []
    for s in samples:
        n_p, n_c, trained = len(s.prompt_ids), len(s.completion_ids), s.trained
        ids += s.prompt_ids + s.completion_ids
        pos += range(n_p + n_c)
        mask += [False] * n_p + trained
        adv += [0.0] * n_p + [s.advantage if t else 0.0 for t in trained]
        lps += [0.0] * n_p + [lp if t else 0.0 for lp, t in zip(s.completion_logprobs, trained, strict=True)]
    pad = seq_len - len(ids)
    return {
        "input_ids": np.array(ids + [pad_token_id] * pad, dtype=np.int32),
        "position_ids": np.array(list(pos) + list(range(pad)), dtype=np.int32),
        "loss_mask": np.array(mask + [False] * pad, dtype=np.bool_),
        "advantages": np.array(adv + [0.0] * pad, dtype=np.float32),
        "inference_logprobs": np.array(lps + [0.0] * pad, dtype=np.float32),
    }


def _micro_batch(rows: list[dict[str, np.ndarray]]) -> MicroBatch:
    return MicroBatch(**{key: Array.from_numpy(np.stack([r[key] for r in rows])) for key in rows[0]})


def pack_step(samples: list[Sample], *, step: int, seq_len: int, micro_batch_rows: int, world_size: int,
              pad_token_id: int, temperature: float, top_p: float = 1.0) -> list[TrainBatch]:
    """One TrainBatch per rank (index = rank). Policy versions are the step's min/max over all samples."""
    for s in samples:
        if len(s.completion_ids) != len(s.completion_logprobs):
            raise ValueError(f"{len(s.completion_ids)} completion tokens but {len(s.completion_logprobs)} logprobs")
        if s.completion_mask is not None and len(s.completion_mask) != len(s.completion_ids):
            raise ValueError(f"{len(s.completion_ids)} completion tokens but a mask of {len(s.completion_mask)}")
    fitted = [f for f in (fit_to_seq_len(s, seq_len) for s in samples) if f is not None]
    if not fitted:
        raise UserError(f"seq_len {seq_len} is too short for every prompt of step {step}: raise seq_len")

    rows = [[fitted[i] for i in b] for b in first_fit_decreasing([len(s) for s in fitted], seq_len)]
    rows.sort(key=lambda row: -sum(len(s) for s in row))
    per_rank: list[list[list[Sample]]] = [[] for _ in range(world_size)]
    for i, row in enumerate(rows):
        lap, offset = divmod(i, world_size)
        per_rank[offset if lap % 2 == 0 else world_size - 1 - offset].append(row)

    most_rows = max(len(r) for r in per_rank)
    rows_per_rank = math.ceil(most_rows / micro_batch_rows) * micro_batch_rows
    padding = _row([], seq_len, pad_token_id)
    num_loss_tokens = sum(sum(s.trained) for s in fitted)
    versions = [s.policy_version for s in fitted]
    batches = []
    for rank, rank_rows in enumerate(per_rank):
        dense = [_row(r, seq_len, pad_token_id) for r in rank_rows] + [padding] * (rows_per_rank - len(rank_rows))
        micro = [_micro_batch(dense[i : i + micro_batch_rows]) for i in range(0, rows_per_rank, micro_batch_rows)]
        batches.append(TrainBatch(step=step, rank=rank, world_size=world_size, temperature=temperature,
                                  num_loss_tokens=num_loss_tokens, micro_batches=micro,
                                  min_policy_version=min(versions), max_policy_version=max(versions), top_p=top_p))
    return batches
