"""Data parallelism: torchrun ranks, FSDP2 sharding with summed gradients, full model state dicts on rank 0."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict, set_model_state_dict
from torch.distributed.fsdp import FSDPModule, MixedPrecisionPolicy, fully_shard
from torch.distributed.tensor import DTensor

from composer_prime.configs.shared import ModelConfig
from composer_prime.errors import UserError
from composer_prime.model.load import resolve_device


@dataclass(frozen=True)
class World:
    rank: int
    world_size: int
    device: torch.device

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def init_world(model_config: ModelConfig, gpu_memory_fraction: float | None = None) -> World:
    """One process, or a rank of `torchrun` (WORLD_SIZE > 1): nccl on CUDA, gloo on CPU. Rank r takes cuda:r of
    the GPUs it sees, capped to `gpu_memory_fraction` of it when given."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    device = resolve_device(model_config)
    if device.type == "cuda":
        local_rank = int(os.environ.get("LOCAL_RANK", "0")) if world_size > 1 else (device.index or 0)
        if local_rank >= (count := torch.cuda.device_count()):
            raise UserError(f"trainer rank {local_rank} needs cuda:{local_rank}, but this process sees {count} GPU(s) "
                            f"(CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')}): one GPU per "
                            "rank (rl: trainer_gpu_ids)")
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
        if gpu_memory_fraction is not None:
            torch.cuda.set_per_process_memory_fraction(gpu_memory_fraction, device)
    if world_size == 1:
        return World(rank=0, world_size=1, device=device)
    on_cuda = device.type == "cuda"
    dist.init_process_group(backend="nccl" if on_cuda else "gloo", device_id=device if on_cuda else None)
    return World(rank=dist.get_rank(), world_size=world_size, device=device)


def init_process_group(world: World) -> None:
    """The process group FSDP2 needs: torchrun's, or on one process a group of one (mixed precision runs as
    FSDP2 computes it, sharded over one rank)."""
    if dist.is_initialized():
        return
    on_cuda = world.device.type == "cuda"
    device = world.device
    if on_cuda and device.index is None:  # NCCL's device_id must name its GPU: a bare "cuda" is refused
        device = torch.device("cuda", torch.cuda.current_device())
    dist.init_process_group(backend="nccl" if on_cuda else "gloo", store=dist.HashStore(), rank=0, world_size=1,
                            device_id=device if on_cuda else None)


def close_world(world: World) -> None:
    if dist.is_initialized():
        if world.distributed:
            dist.barrier()  # a rank tearing down while a peer is still in a collective aborts gloo
        dist.destroy_process_group()


def fill_from_rank0(model: torch.nn.Module, whole: dict[str, torch.Tensor] | None, world: World) -> None:
    """After sharding, every rank's shards and buffers from rank 0's `whole` state dict (collective).

    Ranks other than 0 built the model on the meta device: their shards are allocated here, then
    broadcast; buffers (rotary tables and the like, which sharding replicates) are broadcast whole."""
    if not world.is_main:
        model.to_empty(device=world.device)
    options = StateDictOptions(full_state_dict=True, broadcast_from_rank0=True)
    set_model_state_dict(model, whole if world.is_main else {}, options=options)
    for buffer in model.buffers():
        dist.broadcast(buffer, src=0)


def shard_model(model: torch.nn.Module, mp_policy: MixedPrecisionPolicy | None = None) -> None:
    """FSDP2: shard each decoder layer (HF `_no_split_modules`), then the root, computing as `mp_policy` says.

    The loss is already divided by the GLOBAL loss-token count, so the gradient of the
    global loss is the SUM of the ranks' gradients; FSDP's default averaging would divide
    it by the world size. Divide factor 1 with sum-only collectives (gloo has no
    PREMUL_SUM) makes FSDP sum.
    """
    policy = mp_policy or MixedPrecisionPolicy()
    layer_classes = set(getattr(model, "_no_split_modules", None) or [])
    for module in model.modules():
        if type(module).__name__ in layer_classes:
            fully_shard(module, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    for module in model.modules():
        if isinstance(module, FSDPModule):
            module.set_gradient_divide_factor(1.0)
            module.set_force_sum_reduction_for_comms(True)


def full_model_state_dict(model: torch.nn.Module, world: World) -> dict[str, torch.Tensor]:
    """Unsharded CPU-or-device tensors on rank 0 (collective: every rank calls it); {} elsewhere."""
    options = StateDictOptions(full_state_dict=True, cpu_offload=world.distributed)
    return get_model_state_dict(model, options=options)


def clip_grad_norm(parameters: list[torch.nn.Parameter], max_norm: float) -> torch.Tensor:
    """Clip by the global norm; with FSDP the per-shard norms are combined across ranks."""
    grads = [p.grad for p in parameters if p.grad is not None]
    norm = torch.nn.utils.get_total_norm(grads, foreach=True)
    if isinstance(norm, DTensor):
        norm = norm.full_tensor()
    torch.nn.utils.clip_grads_with_norm_(parameters, max_norm, norm, foreach=True)
    return norm


def all_reduce_max(value: int, world: World) -> int:
    if not world.distributed:
        return value
    t = torch.tensor([value], device=world.device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return int(t.item())


def all_gather_json(obj: object, world: World) -> list:
    """Every rank's JSON-serialisable `obj`, in rank order (typed data, no pickles)."""
    if not world.distributed:
        return [obj]
    data = torch.frombuffer(bytearray(json.dumps(obj).encode()), dtype=torch.uint8).to(world.device)
    size = all_reduce_max(data.numel(), world)
    padded = torch.zeros(size, dtype=torch.uint8, device=world.device)
    padded[: data.numel()] = data
    gathered = [torch.empty_like(padded) for _ in range(world.world_size)]
    dist.all_gather(gathered, padded)
    return [json.loads(bytes(g.cpu().tolist()).rstrip(b"\0")) for g in gathered]


def barrier(world: World) -> None:
    if world.distributed:
        dist.barrier()
