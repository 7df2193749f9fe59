"""Pseudo-gradients and round digests through a store (directory or s3://), for sites that share no network fabric or trust.

One prefix per site, so a store can let each site write there and nowhere else (infra/README.md):

    diloco/<run>/<site>/round_<r>.safetensors  the flat float32 pseudo-gradient (no pickle)
    diloco/<run>/<site>/round_<r>.sig          the site's Ed25519 signature of its claim, written last
    diloco/<run>/<site>/round_<r>.digest       what the site aggregated in round r, signed (agreement.py)

The claim is (run, round, site, SHA-256 of the blob). A reader never believes what a file says about
itself: it builds the claim from what it expects (this run, this round, that site) and the hash of
the bytes it read, and keeps the blob only if that site's key signed exactly that claim. So a blob
of round 0 copied to round 1, one from another run, or one copied into another site's folder
never counts, whichever key it is checked against.

Every file is written once (Store.write_once): a site cannot replace its round with another one
after a peer read it, and a restarted site finds the round it published before the crash and
keeps it, since that is what its peers saw. Where a site may delete its own files (an S3 Write
grant includes DELETE), write-once is only a speed bump: the digests stop the split that a
delete-and-rewrite would cause (agreement.py).

Every read is bounded before it is made (a blob by the model's size, a signature by 64 bytes,
a digest by a fixed cap), and a blob of the wrong shape, dtype or size is refused, so a peer's
file can cost a reader neither its memory nor its round.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass

import msgspec
import torch
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors

from composer_prime import keys
from composer_prime.errors import UserError
from composer_prime.store import Store

logger = logging.getLogger(__name__)

SCHEMA = 2
SIGNATURE_BYTES = 64
HEADER_CAP = 64 * 1024
"""Bytes a pseudo-gradient file may hold beyond its float32 data (safetensors' length prefix and JSON header)."""
DIGEST_CAP = 1024 * 1024


class PseudoGradientClaim(msgspec.Struct, frozen=True):
    """What a site's signature on a pseudo-gradient says; encoded canonically (msgspec: declaration order)."""

    run: str
    round: int
    site: str
    sha256: str
    kind: str = "diloco-pseudo-gradient"
    """Keeps a signature on one kind of message from passing as one on another (agreement.RoundDigest)."""
    schema_version: int = SCHEMA


def claim_bytes(run: str, round_: int, site: str, sha256: str) -> bytes:
    return msgspec.json.encode(PseudoGradientClaim(run=run, round=round_, site=site, sha256=sha256))


@dataclass
class Received:
    """A pseudo-gradient whose signature checked, with what proves it: another site can check the same."""

    pseudo_grad: torch.Tensor
    sha256: str
    signature: bytes


class PseudoGradientExchange:
    def __init__(self, store: Store, run_id: str, site_id: str, key: Ed25519PrivateKey,
                 site_keys: dict[str, Ed25519PublicKey], poll_s: float = 0.05):
        self.store = store
        self.run_id = run_id
        self.site_id = site_id
        self.key = key
        self.site_keys = site_keys
        self.poll_s = poll_s
        self.bytes_sent = 0

    def _key(self, round_: int, site: str, suffix: str) -> str:
        return f"diloco/{self.run_id}/{site}/round_{round_}.{suffix}"

    def verify(self, round_: int, site: str, sha256: str, signature: bytes) -> bool:
        """Whether `site` signed the blob with this hash for this run and round."""
        public = self.site_keys.get(site)
        return public is not None and keys.verify(public, signature, claim_bytes(self.run_id, round_, site, sha256))

    def put(self, round_: int, pseudo_grad: torch.Tensor) -> None:
        blob = save_tensors({"pseudo_grad": pseudo_grad.detach().to("cpu", torch.float32).contiguous()},
                            metadata={"schema": str(SCHEMA)})
        digest = hashlib.sha256(blob).hexdigest()
        signature = self.key.sign(claim_bytes(self.run_id, round_, self.site_id, digest))
        try:
            self.store.write_once(self._key(round_, self.site_id, "safetensors"), blob)
            self.store.write_once(self._key(round_, self.site_id, "sig"), signature)
        except FileExistsError:
            self._keep_published(round_, pseudo_grad.numel())
            return
        self.bytes_sent += len(blob)

    def _keep_published(self, round_: int, numel: int) -> None:
        """This site's round is in the store already: keep it if this site signed it (published before a restart)."""
        where = self._key(round_, self.site_id, "safetensors")
        try:
            published = self._read(round_, self.site_id, numel)
        except FileNotFoundError:  # a crash between the blob and its signature
            published = "unsigned"
        if not isinstance(published, Received):
            raise UserError(f"diloco: {self.store.url}/{where} was written before but is not this site's signed round "
                            f"({published}): this site crashed between the blob and its signature, or something else "
                            f"writes under its prefix (give each site write access to its own prefix only, "
                            f"infra/README.md); resume under a new run_id")
        logger.warning("diloco round %d: this site published its pseudo-gradient before a restart; keeping that one, "
                       "which is what its peers saw", round_)

    def gather(self, round_: int, sites: list[str], timeout_s: float,
               numel: int) -> tuple[dict[str, Received], dict[str, str]]:
        """(site -> pseudo-gradient) for every site whose signed blob of `numel` floats arrived in time, and (site -> why not).

        Once the deadline passes, every pending site gets one last look, so a blob that is there counts
        however late this site itself was to look. A read that fails (network, permissions) is retried
        until then; a blob that is there but wrong is refused at once.
        """
        deadline = time.monotonic() + timeout_s
        got: dict[str, Received] = {}
        missing: dict[str, str] = {}
        pending = {site: "timeout" for site in sites}
        while pending:
            last_look = time.monotonic() > deadline
            for site in list(pending):
                try:
                    if not self.store.exists(self._key(round_, site, "sig")):
                        continue
                    outcome = self._read(round_, site, numel)
                except OSError as exc:  # FileNotFoundError included: a blob deleted between two reads
                    pending[site] = f"unreadable: {type(exc).__name__}"
                    continue
                del pending[site]
                if isinstance(outcome, str):
                    missing[site] = outcome
                else:
                    got[site] = outcome
            if last_look:
                missing.update(pending)
                break
            if pending:
                time.sleep(self.poll_s)
        return got, missing

    def _read(self, round_: int, site: str, numel: int) -> Received | str:
        cap = 4 * numel + HEADER_CAP
        blob = self.store.read_bytes(self._key(round_, site, "safetensors"), 0, cap + 1)
        signature = self.store.read_bytes(self._key(round_, site, "sig"), 0, SIGNATURE_BYTES + 1)
        if len(blob) > cap:
            return "oversized"
        digest = hashlib.sha256(blob).hexdigest()
        if len(signature) != SIGNATURE_BYTES or not self.verify(round_, site, digest, signature):
            return "bad-signature"
        try:
            tensors = load_tensors(blob)
        except Exception:  # noqa: BLE001 - safetensors raises its own error types for every kind of bad header
            return "malformed"
        pseudo_grad = tensors.get("pseudo_grad")
        if (len(tensors) != 1 or pseudo_grad is None or pseudo_grad.dtype != torch.float32 or pseudo_grad.dim() != 1
                or pseudo_grad.numel() != numel):
            return "malformed"
        return Received(pseudo_grad, digest, signature)

    def put_digest(self, round_: int, data: bytes) -> None:
        """Publish this site's signed digest of the round; FileExistsError when another one was published before."""
        self.store.write_once(self._key(round_, self.site_id, "digest"), data)

    def read_digest(self, round_: int, site: str) -> bytes | None:
        """`site`'s digest of the round as stored (at most DIGEST_CAP + 1 bytes), None while there is none."""
        try:
            return self.store.read_bytes(self._key(round_, site, "digest"), 0, DIGEST_CAP + 1)
        except FileNotFoundError:
            return None
