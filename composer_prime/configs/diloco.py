"""DiLoCo between trainer sites, from the same TOML as the trainer (`[trainer.diloco]` once integrated)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator
from pydantic_config import BaseConfig

from composer_prime.configs.shared import StoreConfig

# A site id and the run id name folders in the exchange store (diloco/<run>/<site>/): a letter or digit first, so
# never `.`, `..` or a path; no dots at all in a site id, so `<site>.sig` cannot be mistaken for another site's file.
SITE_ID = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
RUN_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
SiteId = Annotated[str, Field(pattern=SITE_ID)]


class OuterOptimConfig(BaseConfig):
    """The outer optimizer applied to the averaged pseudo-gradient (DiLoCo: SGD with Nesterov momentum).

    DiLoCo's 0.7 / 0.9 assume H in the hundreds. With a few inner steps per sync the momentum adds up
    about 1 / (1 - momentum) pseudo-gradients per step and the effective step grows ~7x: measured on the
    quickstart RL task with H = 2, the train reward fell from 0.43 to 0.14 in 12 steps; lr 1.0 with
    momentum 0 (plain averaging) kept it at 0.36-0.53 (tests/e2e/test_decentralised.py).
    """

    lr: Annotated[float, Field(gt=0, description="Outer learning rate (0.7 in DiLoCo).")] = 0.7
    momentum: Annotated[float, Field(ge=0, lt=1, description="Outer momentum (0.9 in DiLoCo).")] = 0.9
    nesterov: Annotated[bool, Field(description="Nesterov momentum.")] = True


class GuardConfig(BaseConfig):
    """Checks and robust combination for sites that do not trust each other."""

    rule: Annotated[
        Literal["trimmed_mean", "median", "mean"],
        Field(description="How accepted pseudo-gradients combine; `mean` is plain averaging (no robustness)."),
    ] = "trimmed_mean"
    trim: Annotated[int, Field(ge=0, description="Trimmed mean: values dropped at each end, per coordinate.")] = 1
    max_norm_ratio: Annotated[
        float, Field(gt=1, description="Reject a pseudo-gradient whose norm exceeds this multiple of the peers' median.")
    ] = 3.0
    min_cosine: Annotated[
        float, Field(ge=-1, le=1, description="Reject one whose cosine to the coordinate-wise median is below this.")
    ] = 0.0
    checks: Annotated[bool, Field(description="Run the checks at all (False: every pseudo-gradient counts).")] = True
    wait_timeout_s: Annotated[float, Field(gt=0, description="How long to wait for peers' pseudo-gradients per round.")] = 300.0


class DiLoCoConfig(BaseConfig):
    """Streaming DiLoCo across trainer sites."""

    mode: Annotated[
        Literal["torchft", "guarded"],
        Field(description="torchft: trusted sites, all-reduce through torchft; guarded: untrusted sites, exchange "
                          "through a store with checks and a robust rule."),
    ] = "torchft"
    site_id: Annotated[str, Field(pattern=SITE_ID, description="This site's name (torchft replica id).")] = "site0"
    sync_every: Annotated[int, Field(ge=1, description="H: inner steps between two syncs of the same fragment.")] = 50
    fragments: Annotated[int, Field(ge=1, description="Model fragments; more than 1 is Streaming DiLoCo.")] = 1
    fragment_sync_delay: Annotated[
        int, Field(ge=0, description="Inner steps a fragment's all-reduce may overlap before it is waited on (tau).")
    ] = 0
    outer: OuterOptimConfig = OuterOptimConfig()
    # torchft
    lighthouse: Annotated[str, Field(description="torchft lighthouse address, http://host:port.")] = "http://127.0.0.1:29510"
    min_replicas: Annotated[int, Field(ge=1, description="Sites needed for a quorum.")] = 2
    backend: Annotated[
        Literal["auto", "gloo", "nccl"], Field(description="Collective backend; auto: nccl on CUDA, gloo on CPU.")
    ] = "auto"
    timeout_s: Annotated[float, Field(gt=0, description="torchft quorum, connect and collective timeout.")] = 60.0
    # guarded
    store: Annotated[StoreConfig | None, Field(description="Guarded mode: where sites exchange pseudo-gradients.")] = None
    run_id: Annotated[
        str, Field(pattern=RUN_ID, description="Guarded mode: the run every pseudo-gradient and digest is signed for (a blob "
                                               "of another run never counts); a new run_id starts a fresh exchange, e.g. "
                                               "to resume from a checkpoint without a site that stopped the run.")
    ] = "run"
    sites: Annotated[list[SiteId], Field(description="Guarded mode: every site id of the run (this one included).")] = []
    key_path: Annotated[str | None, Field(description="Guarded mode: this site's Ed25519 key (created if missing).")] = None
    site_public_keys: Annotated[
        dict[SiteId, str], Field(description="Guarded mode: each site's public key (hex), every site of `sites`; blobs that "
                                             "do not verify are dropped.")
    ] = {}
    guard: GuardConfig = GuardConfig()

    @model_validator(mode="after")
    def _check(self) -> DiLoCoConfig:
        if self.sync_every % self.fragments:
            raise ValueError(f"sync_every ({self.sync_every}) must be a multiple of fragments ({self.fragments})")
        if self.fragment_sync_delay >= self.sync_every // self.fragments:
            raise ValueError("fragment_sync_delay must be below sync_every / fragments")
        if self.mode == "guarded" and (self.store is None or self.site_id not in self.sites):
            raise ValueError("guarded mode needs a store and a `sites` list that includes site_id")
        if self.mode == "guarded" and len(set(self.sites)) != len(self.sites):
            raise ValueError(f"guarded mode: `sites` names a site twice: {self.sites}")
        return self
