"""The orchestrator -> trainer message: packed micro-batches for one trainer step.

Wire format: msgpack through msgspec, typed and versioned (no pickle). Arrays travel as
raw little-endian bytes with dtype and shape. One file per trainer step and data-parallel
rank, `<output>/rollouts/step_<N>/rank_<R>.msgpack`, written by atomic rename so that a
file that exists is complete.

Packing contract (what `MicroBatch` rows mean):
- a row is `seq_len` tokens holding one or more whole samples (prompt + completion)
  back to back; `position_ids` restart at 0 at each sample start, which is how the model
  (transformers' packed-sequence masking) keeps samples from attending to each other;
- trailing padding is one more segment: pad token ids, positions from 0, loss_mask False;
- `loss_mask[t]` is True on completion tokens the loss trains on;
- `inference_logprobs[t]` is the sampler's log-prob of token `input_ids[t]` (0 where masked);
- `advantages[t]` is the sample's advantage broadcast over its tokens (0 where masked).
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import numpy as np
import torch

from composer_prime.utils.fs import atomic_write_bytes

SCHEMA_VERSION = 3  # 2: hint sites; 3: top_p


class Array(msgspec.Struct, frozen=True):
    """A dense array: numpy dtype string, shape, raw C-order bytes."""

    dtype: str
    shape: tuple[int, ...]
    data: bytes

    @classmethod
    def from_numpy(cls, array: np.ndarray) -> Array:
        array = np.ascontiguousarray(array)
        return cls(dtype=array.dtype.str, shape=tuple(array.shape), data=array.tobytes())

    def numpy(self) -> np.ndarray:
        return np.frombuffer(self.data, dtype=np.dtype(self.dtype)).reshape(self.shape)

    def torch(self) -> torch.Tensor:
        return torch.from_numpy(self.numpy().copy())


class MicroBatch(msgspec.Struct):
    """One forward/backward pass worth of packed rows, all arrays shaped [rows, seq_len]."""

    input_ids: Array
    position_ids: Array
    loss_mask: Array
    advantages: Array
    inference_logprobs: Array


class HintSite(msgspec.Struct):
    """One error turn for the hint self-distillation channel (hints/context.py).

    The student scores `completion_ids` after `student_prompt_ids`, the teacher the same tokens
    after `teacher_prompt_ids` (the context with the hint): position t of both lines up. With
    `teacher_topk_*` set, the inference server already scored the teacher side ([T, k] ids and
    log-probs at the sampling temperature) and the trainer runs no teacher forward.
    """

    kind: str
    student_prompt_ids: list[int]
    teacher_prompt_ids: list[int]
    completion_ids: list[int]
    completion_logprobs: list[float]
    """Sampler log-probs of the completion (for staleness weights and diagnostics)."""
    teacher_topk_ids: Array | None = None
    teacher_topk_logprobs: Array | None = None


class TrainBatch(msgspec.Struct):
    """Everything one data-parallel rank trains on at one optimizer step."""

    step: int
    rank: int
    world_size: int
    temperature: float
    num_loss_tokens: int
    """Loss tokens across all ranks of this step: the loss is divided by this global count."""
    micro_batches: list[MicroBatch]
    min_policy_version: int
    max_policy_version: int
    hint_sites: list[HintSite] = []
    """This rank's share of the step's error sites (channel 2); empty when hints are off."""
    num_hint_tokens: int = 0
    """Completion tokens of all ranks' hint sites: the hint loss is divided by this global count."""
    top_p: float = 1.0
    """The sampler's nucleus mass: the trainer renormalises its log-probs over the same nucleus, as the sampler's
    are, so an on-policy importance ratio is 1."""
    schema_version: int = SCHEMA_VERSION


def batch_path(output_dir: Path, step: int, rank: int) -> Path:
    return Path(output_dir) / "rollouts" / f"step_{step}" / f"rank_{rank}.msgpack"


def store_batch_key(step: int, rank: int) -> str:
    """A rank's batch in a run store (orchestrator.step_store / trainer data.store)."""
    return f"steps/step_{step}/rank_{rank}.msgpack"


def store_complete_key(step: int) -> str:
    """Written after all of a step's batches: readers take none of them before it exists."""
    return f"steps/step_{step}/COMPLETE"


def write_batch(output_dir: Path, batch: TrainBatch) -> Path:
    path = batch_path(output_dir, batch.step, batch.rank)
    atomic_write_bytes(path, msgspec.msgpack.encode(batch))
    return path


def read_batch(path: Path) -> TrainBatch:
    batch = msgspec.msgpack.decode(Path(path).read_bytes(), type=TrainBatch)
    if batch.schema_version != SCHEMA_VERSION:
        raise ValueError(f"{path}: batch schema v{batch.schema_version}, this trainer reads v{SCHEMA_VERSION}")
    return batch
