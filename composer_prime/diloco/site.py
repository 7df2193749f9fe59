"""DiLoCoSite: one trainer site of a torchft Streaming DiLoCo run (trusted sites).

The site's inner optimizer runs as usual; torchft's DiLoCo hooks its `step()`. Every
H / fragments inner steps one fragment's pseudo-gradient (global_prev - local) is all-reduced
across sites (torchft Manager, quorum from the lighthouse, gloo on CPU / NCCL on GPU), the outer
Nesterov SGD steps, and the fragment's parameters become the new global ones. A site that
(re)joins behind the others heals: the Manager copies model, inner and outer optimizer state from
a peer before it trains on.

Trainer integration (per inner step, after `optimizer.step()`):

    site = DiLoCoSite(config.diloco, model, optimizer, state_dict=..., load_state_dict=...)
    with site:
        for batch in batches:
            loss.backward(); optimizer.step(); optimizer.zero_grad()
            site.after_inner_step()          # bookkeeping; the sync itself runs inside optimizer.step()
            if site.outer_step >= target: break

The plain all-reduce is blind: use GuardedDiLoCoSite (guarded.py) between sites that do not trust each other.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from datetime import timedelta

import torch
from torch import nn

from composer_prime.configs.diloco import DiLoCoConfig
from composer_prime.diloco.fragments import split_fragments
from composer_prime.utils.net import free_port

logger = logging.getLogger(__name__)


def outer_optimizer(params, config: DiLoCoConfig) -> torch.optim.Optimizer:
    return torch.optim.SGD(params, lr=config.outer.lr, momentum=config.outer.momentum, nesterov=config.outer.nesterov)


class DiLoCoSite:
    def __init__(self, config: DiLoCoConfig, model: nn.Module, inner_optimizer: torch.optim.Optimizer,
                 state_dict: Callable[[], dict] | None = None, load_state_dict: Callable[[dict], None] | None = None):
        # torchft imports are slow and pull in its Rust extension: only sites that use it pay.
        from torchft.local_sgd import DiLoCo
        from torchft.manager import Manager
        from torchft.process_group import ProcessGroupBabyNCCL, ProcessGroupGloo

        if config.mode != "torchft":
            raise ValueError("DiLoCoSite is the torchft path; use GuardedDiLoCoSite for mode = 'guarded'")
        self.config = config
        self.model = model
        self.inner_optimizer = inner_optimizer
        self.inner_steps = 0
        self.bytes_allreduced = 0
        device = next(model.parameters()).device
        backend = config.backend if config.backend != "auto" else ("nccl" if device.type == "cuda" else "gloo")
        timeout = timedelta(seconds=config.timeout_s)
        if "127.0.0.1" in config.lighthouse:
            os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # gloo would pick the first NIC, not loopback
        pg = ProcessGroupBabyNCCL(timeout=timeout) if backend == "nccl" else ProcessGroupGloo(timeout=timeout)
        # The Manager of a one-process site needs a TCPStore of its own (its local ranks meet there).
        store_port = free_port()
        self._store = torch.distributed.TCPStore("127.0.0.1", store_port, 1, is_master=True, wait_for_workers=False)
        self._state_dict = state_dict or (lambda: {"model": model.state_dict(), "inner_optim": inner_optimizer.state_dict()})
        self._load_state_dict = load_state_dict or self._default_load
        self.manager = Manager(
            pg=pg, min_replica_size=config.min_replicas, use_async_quorum=False,
            load_state_dict=self._load_state_dict, state_dict=self._state_dict, replica_id=config.site_id,
            store_addr="127.0.0.1", store_port=store_port, rank=0, world_size=1, lighthouse_addr=config.lighthouse,
            port=free_port(), hostname="127.0.0.1", timeout=timeout, quorum_timeout=timeout, connect_timeout=timeout,
        )
        self._count_allreduce_bytes()
        self.fragments = split_fragments(model, config.fragments)
        self.outer_optimizers = [outer_optimizer(f.parameters(), config) for f in self.fragments]
        self.diloco = DiLoCo(
            self.manager, self.fragments, inner_optimizer, self.outer_optimizers, sync_every=config.sync_every,
            backup_device=torch.device("cpu"), pin_memory=False, fragment_sync_delay=config.fragment_sync_delay,
        )

    def _default_load(self, state: dict) -> None:
        self.model.load_state_dict(state["model"])
        self.inner_optimizer.load_state_dict(state["inner_optim"])

    def _count_allreduce_bytes(self) -> None:
        # What this site hands to the cross-site all-reduce: benchmarks/diloco_bytes.py reads it.
        allreduce = self.manager.allreduce

        def counted(tensor, *args, **kwargs):
            self.bytes_allreduced += tensor.numel() * tensor.element_size()
            return allreduce(tensor, *args, **kwargs)

        self.manager.allreduce = counted

    @property
    def outer_step(self) -> int:
        """Fragment syncs committed by the whole quorum so far (identical on every healthy site)."""
        return self.manager.current_step()

    def global_state_dict(self) -> dict[str, torch.Tensor]:
        """The parameters as last agreed by the quorum, fragment by fragment (identical on all healthy sites).

        Between syncs each fragment's live parameters carry local progress; torchft keeps the agreed
        copy in each fragment's `original_parameters` (torchft 0.2.0 internals, read only).
        """
        return {name.replace("__", "."): tensor.detach().clone()
                for fragment in self.diloco._fragments for name, tensor in fragment.original_parameters.items()}

    def after_inner_step(self) -> int:
        self.inner_steps += 1
        return self.outer_step

    def state_dict(self) -> dict:
        """The DiLoCo part of a trainer checkpoint: each fragment's agreed parameters and outer optimizer.

        torchft 0.2.0 keeps these behind the Manager's registered state functions, with no public accessor
        for a subset of them (the site's own model state is checkpointed by the trainer). torchft's own step
        is left out on purpose: a restarted site starts at step 0, so at its first quorum it is behind every
        live peer and heals from it (or, when all sites restarted, init_sync makes them agree), instead of
        rejoining with an equal step but a different trainer step.
        """
        return {key: save() for key, save in self.manager._user_state_dicts.items()
                if key.startswith("StreamingDiLoCoFragment_")}

    def load_state_dict(self, state: dict) -> None:
        for key, fragment_state in state.items():
            self.manager._load_state_dict_fns[key](fragment_state)

    def __enter__(self) -> DiLoCoSite:
        self.diloco.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.diloco.__exit__(*exc)
        self.manager.shutdown(wait=False)
