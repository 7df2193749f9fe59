"""Pseudo-gradients through a store (directory or s3://), for sites that share no network fabric or trust.

Round r of site s: `<store>/diloco/round_<r>/<s>.safetensors` (the flat float32 pseudo-gradient,
no pickle), then `<s>.sig`, the site's Ed25519 signature over those bytes, written last: a
signature file means a complete blob. A reader keeps a blob only if the signature verifies with
that site's configured public key, so no site can speak for another.
"""

from __future__ import annotations

import time

import torch
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors

from composer_prime import keys
from composer_prime.store import Store

SCHEMA = "1"


class PseudoGradientExchange:
    def __init__(self, store: Store, site_id: str, key: Ed25519PrivateKey, site_keys: dict[str, Ed25519PublicKey],
                 poll_s: float = 0.05):
        self.store = store
        self.site_id = site_id
        self.key = key
        self.site_keys = site_keys
        self.poll_s = poll_s
        self.bytes_sent = 0

    @staticmethod
    def _key(round_: int, site: str, suffix: str) -> str:
        return f"diloco/round_{round_}/{site}.{suffix}"

    def put(self, round_: int, pseudo_grad: torch.Tensor) -> None:
        blob = save_tensors({"pseudo_grad": pseudo_grad.detach().to("cpu", torch.float32).contiguous()},
                            metadata={"schema": SCHEMA, "site": self.site_id, "round": str(round_)})
        self.store.write_bytes(self._key(round_, self.site_id, "safetensors"), blob)
        self.store.write_bytes(self._key(round_, self.site_id, "sig"), self.key.sign(blob))
        self.bytes_sent += len(blob)

    def gather(self, round_: int, sites: list[str], timeout_s: float) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
        """(site -> pseudo-gradient) for every site whose signed blob arrived in time, and (site -> why not)."""
        deadline = time.monotonic() + timeout_s
        got: dict[str, torch.Tensor] = {}
        missing: dict[str, str] = {}
        pending = list(sites)
        while pending:
            for site in list(pending):
                if not self.store.exists(self._key(round_, site, "sig")):
                    continue
                pending.remove(site)
                blob = self.store.read_bytes(self._key(round_, site, "safetensors"))
                signature = self.store.read_bytes(self._key(round_, site, "sig"))
                public = self.site_keys.get(site)
                if public is None or not keys.verify(public, signature, blob):
                    missing[site] = "bad-signature"
                    continue
                got[site] = load_tensors(blob)["pseudo_grad"]
            if pending and time.monotonic() > deadline:
                missing.update({site: "timeout" for site in pending})
                break
            if pending:
                time.sleep(self.poll_s)
        return got, missing
