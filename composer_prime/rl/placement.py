"""Which GPUs each process of an `rl` run gets, checked against what it needs before anything starts.

Each process sees only its own GPUs through CUDA_VISIBLE_DEVICES, so inside it they are cuda:0, cuda:1, ...:
- inference: `tensor_parallel_size x data_parallel_size` GPUs on vLLM, one on the transformers backend, none
  when its model runs on the CPU (or the backend is scripted);
- trainer: one GPU per rank (`num_train_processes`; torchrun's LOCAL_RANK picks it), none on the CPU;
- orchestrator: none.
By default inference takes the first GPUs and the trainer the next ones. A machine with one GPU runs both on it
(the one-GPU mode): inference starts first, so that vLLM measures the memory it may take before the trainer
allocates any, and the trainer is capped to what vLLM leaves (`trainer.gpu_memory_fraction`). Anything else that
does not fit is refused with the counts, never left to fail as "invalid device ordinal" inside a rank.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from composer_prime.configs.rl import RLConfig
from composer_prime.configs.shared import ModelConfig
from composer_prime.errors import UserError

# CUDA context, NCCL and allocator slack of the processes that share a GPU, beyond vLLM's share and the trainer's cap.
SHARED_GPU_MARGIN = 0.05
MIN_TRAINER_FRACTION = 0.1


@dataclass(frozen=True)
class Placement:
    inference: tuple[int, ...]
    trainer: tuple[int, ...]
    visible: tuple[str, ...]
    """The GPUs this process sees, by the names CUDA_VISIBLE_DEVICES gives them (or their indices)."""

    @property
    def shared(self) -> tuple[int, ...]:
        return tuple(sorted(set(self.inference) & set(self.trainer)))

    def env(self, process: str) -> dict[str, str]:
        ids = {"inference": self.inference, "trainer": self.trainer}.get(process, ())
        return {"CUDA_VISIBLE_DEVICES": ",".join(self.visible[i] for i in ids)}


def _on_gpu(model: ModelConfig) -> bool:
    device = model.device
    if device is not None and device.startswith("cuda") and device not in ("cuda", "cuda:0"):
        raise UserError(f"model.device = {device}: under rl each process sees only its own GPUs, as cuda:0, cuda:1, "
                        "...; pick them with inference_gpu_ids / trainer_gpu_ids")
    return device is None or device.startswith("cuda")


def needs(config: RLConfig) -> tuple[int, int]:
    """GPUs (inference, trainer) the run needs on a machine that has GPUs."""
    backend = config.inference.backend
    if not config.start_inference:  # a server rl does not start has its GPUs already
        inference = 0
    elif backend.type == "vllm":
        inference = backend.num_gpus if _on_gpu(config.inference.model) else 0
    else:
        inference = 1 if backend.type == "transformers" and _on_gpu(config.inference.model) else 0
    trainer = config.num_train_processes if _on_gpu(config.trainer.model) else 0
    return inference, trainer


def _checked(ids: list[int], count: int, what: str, needed_for: str, num_gpus: int) -> tuple[int, ...]:
    if len(ids) != count:
        raise UserError(f"{what} names {len(ids)} GPU(s), {needed_for} needs {count}")
    if len(set(ids)) != len(ids):
        raise UserError(f"{what} = {ids} names a GPU twice: each of {needed_for} needs a GPU of its own")
    if any(not 0 <= i < num_gpus for i in ids):
        raise UserError(f"{what} = {ids}, but this machine shows {num_gpus} GPU(s) (ids 0..{num_gpus - 1})")
    return tuple(ids)


def place(config: RLConfig, num_gpus: int) -> Placement | None:
    """The GPUs of each process on a machine that shows `num_gpus`; None when no process runs on a GPU.

    Raises UserError when the run cannot be placed: too few GPUs, ids out of range or repeated, or a GPU
    shared so that the trainer would be left less than MIN_TRAINER_FRACTION of it."""
    inference_needs, trainer_needs = needs(config)
    explicit = config.inference_gpu_ids is not None or config.trainer_gpu_ids is not None
    if num_gpus == 0:
        if explicit:
            raise UserError("inference_gpu_ids / trainer_gpu_ids name GPUs, but torch sees none on this machine")
        return None
    if inference_needs + trainer_needs == 0:
        return None
    inference_for = (f"inference (tensor_parallel_size x data_parallel_size = {inference_needs})"
                     if config.inference.backend.type == "vllm" else "inference")
    trainer_for = f"the trainer (num_train_processes = {trainer_needs})"
    if config.inference_gpu_ids is not None:
        inference = _checked(config.inference_gpu_ids, inference_needs, "inference_gpu_ids", inference_for, num_gpus)
    elif (config.trainer_gpu_ids is not None or inference_needs + trainer_needs <= num_gpus
          or (num_gpus == 1 and inference_needs == 1)) and inference_needs <= num_gpus:
        inference = tuple(range(inference_needs))
    else:
        raise UserError(f"{inference_for} and {trainer_for} need {inference_needs + trainer_needs} GPUs, this "
                        f"machine shows {num_gpus}: set inference_gpu_ids and trainer_gpu_ids to share GPUs")
    if config.trainer_gpu_ids is not None:
        trainer = _checked(config.trainer_gpu_ids, trainer_needs, "trainer_gpu_ids", trainer_for, num_gpus)
    else:
        after = [i for i in range(num_gpus) if i not in inference]
        if len(after) >= trainer_needs:
            trainer = tuple(after[:trainer_needs])
        elif num_gpus == 1 and trainer_needs == 1:
            trainer = (0,)  # the one-GPU mode
        else:
            raise UserError(f"{trainer_for} needs {trainer_needs} GPU(s) besides inference's {list(inference)}, this "
                            f"machine shows {num_gpus}: set trainer_gpu_ids (it may share inference's GPUs)")
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    names = tuple(v.strip() for v in visible.split(",")) if visible else tuple(str(i) for i in range(num_gpus))
    placement = Placement(inference=inference, trainer=trainer, visible=names[:num_gpus])
    if placement.shared:
        trainer_fraction(config, placement)  # refuses a share that leaves the trainer too little
    return placement


def trainer_fraction(config: RLConfig, placement: Placement) -> float | None:
    """The cap on the trainer's share of a GPU it shares with vLLM (None: nothing shared with vLLM)."""
    if not placement.shared or config.inference.backend.type != "vllm":
        return None
    leaves = 1 - config.inference.backend.gpu_memory_utilization - SHARED_GPU_MARGIN
    fraction = config.trainer.gpu_memory_fraction if config.trainer.gpu_memory_fraction is not None else leaves
    if fraction > leaves + 1e-9 or fraction < MIN_TRAINER_FRACTION:
        raise UserError(f"GPU {list(placement.shared)} is shared: vLLM takes gpu_memory_utilization = "
                        f"{config.inference.backend.gpu_memory_utilization}, which leaves the trainer "
                        f"{max(leaves, 0):.2f} (after {SHARED_GPU_MARGIN} for CUDA contexts); "
                        f"trainer.gpu_memory_fraction must be between {MIN_TRAINER_FRACTION} and that: lower "
                        "gpu_memory_utilization")
    return fraction
