"""GuardedDiLoCoSite: DiLoCo between sites that do not trust each other.

Every H inner steps each site publishes its signed pseudo-gradient (global_prev - local, whole
model, flat float32) to the store, reads everyone's, rejects the ones that fail the checks
(robust.check) and combines the rest (robust.combine). Each site computes the aggregate itself from
the same signed blobs with the same deterministic code, so no site has to trust an aggregator, and
honest sites that saw the same blobs end identical. Before anything is applied the sites confirm
that they did see the same blobs, from the same state, with the same settings (agreement.py); a
disagreement stops the run with one line (SplitError) and the global parameters untouched. Then
the outer Nesterov SGD steps the global parameters, and the model restarts from them.

Same trainer API as DiLoCoSite: `after_inner_step()` after each `optimizer.step()`.
Not yet here: streaming fragments (the whole model syncs at once) and overlap of the exchange
with inner steps.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch
from torch import nn

from composer_prime import keys
from composer_prime.configs.diloco import DiLoCoConfig
from composer_prime.diloco.agreement import confirm, make_digest, state_sha256
from composer_prime.diloco.exchange import PseudoGradientExchange
from composer_prime.diloco.fragments import flat
from composer_prime.diloco.robust import check, combine
from composer_prime.diloco.site import outer_optimizer
from composer_prime.errors import UserError
from composer_prime.store import Store

logger = logging.getLogger(__name__)


@dataclass
class RoundRecord:
    round: int
    accepted: list[str]
    rejected: dict[str, str]
    norms: dict[str, float]
    cosines: dict[str, float]
    unconfirmed: list[str]
    """Sites whose pseudo-gradient this site read but which never published a digest of the round."""


class GuardedDiLoCoSite:
    def __init__(self, config: DiLoCoConfig, model: nn.Module, inner_optimizer: torch.optim.Optimizer,
                 exchange: PseudoGradientExchange | None = None,
                 tamper: Callable[[torch.Tensor], torch.Tensor] | None = None):
        """`tamper` rewrites this site's outgoing pseudo-gradient: only tests and attack demos set it."""
        if config.mode != "guarded":
            raise ValueError("GuardedDiLoCoSite is the guarded path; set mode = 'guarded'")
        self.config = config
        self.model = model
        self.inner_optimizer = inner_optimizer
        self.params = [p for p in model.parameters() if p.requires_grad]
        # The global (last agreed) parameters live in float32 on the CPU, off the accelerator.
        self.global_params = [nn.Parameter(p.detach().to("cpu", torch.float32).clone()) for p in self.params]
        self.outer = outer_optimizer(self.global_params, config)
        self.exchange = exchange or self._default_exchange(config)
        self.tamper = tamper
        self.inner_steps = 0
        self.outer_step = 0
        self.history: list[RoundRecord] = []

    @staticmethod
    def _default_exchange(config: DiLoCoConfig) -> PseudoGradientExchange:
        if config.key_path is None:
            raise UserError("diloco: guarded mode needs key_path (this site's signing key)")
        key = keys.load_or_create_private_key(config.key_path)
        unknown = [site for site in config.sites if site not in config.site_public_keys]
        if unknown:
            raise UserError(f"diloco: site_public_keys has no key for {unknown}: every site of `sites` needs one")
        site_keys = {site: keys.parse_public_key(config.site_public_keys[site]) for site in config.sites}
        if keys.public_hex(site_keys[config.site_id]) != keys.public_hex(key):
            raise UserError(f"diloco: site_public_keys[{config.site_id!r}] is not the public key of {config.key_path}")
        return PseudoGradientExchange(Store.from_config(config.store), config.run_id, config.site_id, key, site_keys)

    def after_inner_step(self) -> int:
        self.inner_steps += 1
        if self.inner_steps % self.config.sync_every == 0:
            self.sync()
        return self.outer_step

    @torch.no_grad()
    def sync(self) -> RoundRecord:
        local = flat([p.detach().to("cpu", torch.float32) for p in self.params])
        pseudo_grad = flat([g.detach() for g in self.global_params]) - local
        outgoing = self.tamper(pseudo_grad.clone()) if self.tamper else pseudo_grad
        self.exchange.put(self.outer_step, outgoing)
        guard = self.config.guard
        received, missing = self.exchange.gather(self.outer_step, self.config.sites, guard.wait_timeout_s, local.numel())
        grads = {site: r.pseudo_grad for site, r in received.items()}
        if guard.checks:
            verdict = check(grads, guard.max_norm_ratio, guard.min_cosine)
        else:
            verdict = check(grads, float("inf"), -1.0)
            verdict.accepted, verdict.rejected = sorted(grads), {}  # plain: everything that arrived counts
        state = state_sha256(self.global_params, self.outer)
        digest = make_digest(self.config, self.outer_step, state, received, verdict.accepted)
        # Raises SplitError, before anything below changes a parameter, when a peer aggregated something else.
        unconfirmed = confirm(self.exchange, digest, self.config.sites, guard.wait_timeout_s)
        if unconfirmed:
            logger.warning("diloco round %d: %s never confirmed what they aggregated; applying (safe: see agreement.py)",
                           self.outer_step, unconfirmed)
        record = RoundRecord(self.outer_step, verdict.accepted, {**missing, **verdict.rejected}, verdict.norms,
                             verdict.cosines, unconfirmed)
        if verdict.accepted:
            combined = combine([grads[s] for s in verdict.accepted], guard.rule, guard.trim)
            offset = 0
            for g in self.global_params:
                g.grad = combined[offset:offset + g.numel()].view_as(g).clone()
                offset += g.numel()
            self.outer.step()
            self.outer.zero_grad(set_to_none=True)
        # With nothing accepted the global parameters stay: the round's local work is dropped, not trusted.
        for p, g in zip(self.params, self.global_params):
            p.copy_(g.to(p.device, p.dtype))
        self.history.append(record)
        logger.info("diloco round %d: %s", self.outer_step, json.dumps(asdict(record)))
        self.outer_step += 1
        return record

    def global_state_dict(self) -> dict[str, torch.Tensor]:
        names = [n for n, p in self.model.named_parameters() if p.requires_grad]
        return {n: g.detach().clone() for n, g in zip(names, self.global_params)}

    def state_dict(self) -> dict:
        """For the trainer's checkpoint: the global parameters, outer optimizer and counters."""
        return {"global": [g.detach().clone() for g in self.global_params], "outer": self.outer.state_dict(),
                "inner_steps": self.inner_steps, "outer_step": self.outer_step}

    def load_state_dict(self, state: dict) -> None:
        with torch.no_grad():
            for g, saved in zip(self.global_params, state["global"]):
                g.copy_(saved)
        self.outer.load_state_dict(state["outer"])
        self.inner_steps, self.outer_step = state["inner_steps"], state["outer_step"]

    def __enter__(self) -> GuardedDiLoCoSite:
        return self

    def __exit__(self, *exc) -> None:
        pass
