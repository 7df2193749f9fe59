"""Trainer input: wait for this rank's batch file of a step, read it, turn micro-batches into tensors."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

import msgspec
import torch
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from composer_prime.batch import MicroBatch, TrainBatch, batch_path, read_batch, store_batch_key, store_complete_key
from composer_prime.errors import UserError
from composer_prime.store import Store
from composer_prime.utils.fs import atomic_write_bytes
from composer_prime.verify.step_seal import StepRefused, check_rank

logger = logging.getLogger(__name__)

_POLL_S = 0.05
_DTYPES = {"input_ids": torch.long, "position_ids": torch.long, "loss_mask": torch.bool, "advantages": torch.float32,
           "inference_logprobs": torch.float32}  # each MicroBatch array as the trainer reads it
_STORE_POLL_S = 0.5  # each look at an object store is a request


def fetch_from_store(store: Store, public_key: Ed25519PublicKey, output_dir: Path, step: int, rank: int,
                     world_size: int) -> bool:
    """Download this rank's batch of `step` into `output_dir` once the step is complete in the store and
    sealed by the orchestrator; raise StepRefused (with the reason) when it is there but not sealed."""
    store.fs.invalidate_cache()  # s3fs caches listings: the marker must show up on the next look
    if not store.exists(store_complete_key(step)):
        return False
    data = store.read_bytes(store_batch_key(step, rank))
    check_rank(public_key, store.read_bytes(store_complete_key(step)), step, rank, world_size, data)
    atomic_write_bytes(batch_path(output_dir, step, rank), data)
    return True


def wait_for_batch(
    output_dir: Path, step: int, rank: int, world_size: int, timeout_s: float, store: Store | None = None,
    public_key: Ed25519PublicKey | None = None,
) -> tuple[TrainBatch, float]:
    """Block until `rollouts/step_<step>/rank_<rank>.msgpack` exists (fetched from `store` when given,
    the orchestrator's step_store, and checked against its `public_key`); return it and the seconds waited.
    A step in the store without a good seal is logged and waited past: the orchestrator's own may follow."""
    path = batch_path(output_dir, step, rank)
    start = time.monotonic()
    refused = None
    while not path.is_file():
        try:
            if store is not None and fetch_from_store(store, public_key, output_dir, step, rank, world_size):
                break
        except (StepRefused, FileNotFoundError) as exc:
            if str(exc) != refused:  # once per reason, not once per look
                logger.warning("refused step %d from %s: %s; waiting for one the orchestrator sealed", step,
                               store.url, exc)
                refused = str(exc)
        if time.monotonic() - start > timeout_s:
            where = f"in {store.url}" if store is not None else f"at {path}"
            why = f"; refused: {refused}" if refused else " (is the orchestrator running?)"
            raise UserError(f"no batch for step {step} {where} after {timeout_s:g} s{why}")
        time.sleep(_STORE_POLL_S if store is not None else _POLL_S)
    idle_s = time.monotonic() - start
    try:
        batch = read_batch(path)
    except (ValueError, msgspec.DecodeError) as exc:
        raise UserError(f"unreadable batch {path}: {exc}") from None
    if (batch.step, batch.rank, batch.world_size) != (step, rank, world_size):
        raise UserError(
            f"{path} holds step {batch.step} rank {batch.rank}/{batch.world_size}, "
            f"expected step {step} rank {rank}/{world_size} (orchestrator train_world_size must match the trainer's)"
        )
    return batch, idle_s


def own_share(batch: TrainBatch) -> TrainBatch:
    """The batch with its token counts limited to its own tokens.

    Ranks of one trainer divide by the step's global counts because their gradients are summed
    (FSDP). DiLoCo sites never sum gradients, so each site normalises by what it trains on: its
    update then has the scale of a lone trainer's step.
    """
    loss_tokens = sum(int(micro.loss_mask.numpy().sum()) for micro in batch.micro_batches)
    hint_tokens = sum(len(site.completion_ids) for site in batch.hint_sites)
    return msgspec.structs.replace(batch, num_loss_tokens=loss_tokens, num_hint_tokens=hint_tokens)


@dataclass
class MicroBatchTensors:
    input_ids: torch.Tensor
    position_ids: torch.Tensor
    loss_mask: torch.Tensor
    advantages: torch.Tensor
    inference_logprobs: torch.Tensor

    @classmethod
    def from_message(cls, micro: MicroBatch, device: torch.device) -> MicroBatchTensors:
        return cls(**{name: getattr(micro, name).torch().to(device=device, dtype=dtype, non_blocking=True)
                      for name, dtype in _DTYPES.items()})

    @classmethod
    def placeholder(cls, device: torch.device) -> MicroBatchTensors:
        """Two tokens with nothing to train on: a rank with fewer micro-batches than another runs
        these so that every rank enters FSDP's collectives the same number of times."""
        zeros = torch.zeros(1, 2, device=device)
        return cls(
            input_ids=zeros.long(), position_ids=torch.arange(2, device=device)[None], loss_mask=zeros.bool(),
            advantages=zeros, inference_logprobs=zeros.clone(),
        )
