"""Guarded sites confirm they aggregated the same thing before any of them applies a round.

Each guarded site computes the outer step itself from the signed pseudo-gradients it read, so honest
sites end identical only if they read the same ones. A site that signs two pseudo-gradients for one
round and shows each peer a different one (deleting and rewriting its file between two peers'
reads), or whose pseudo-gradient lands after one peer's deadline but before another's, would split
them: each would apply a different update, and nothing would notice.

So before applying, each site publishes a signed digest of its round (write-once, exchange.py): the
state the outer step applies to (global parameters and outer optimizer state), how it combines
(guard and outer settings), every pseudo-gradient it read with its author's signature, and the
verdict. It then reads its peers' digests, waiting until every site whose pseudo-gradient it read
has answered or the deadline passes, and stops at the first one that differs or does not check, or
when one could not be read by the deadline: SplitError, one line, nothing applied. When the difference is one site's two signed
pseudo-gradients, both signatures are in hand and the line names that site.

Why no two honest sites can both apply different rounds, on a store that shows every reader an
object once it is written (S3, seaweedfs, a POSIX directory) and lets each site write only its own
prefix: of two honest sites, the one that publishes its digest second reads the first one's
afterwards, and applies only if they are equal. A site that never answers costs its peers only the
wait. Not given: a malicious site can always stop the run by publishing a digest that disagrees (it
is named; resume from the last checkpoint under a new run_id without it); and a store that shows
different readers different objects can split the sites.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable

import msgspec
import torch
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from composer_prime import keys
from composer_prime.configs.diloco import DiLoCoConfig
from composer_prime.diloco.exchange import DIGEST_CAP, PseudoGradientExchange, Received
from composer_prime.errors import UserError

SCHEMA = 1


class SplitError(UserError):
    """Sites disagree on a round (or one's digest does not check): the run stops before anything is applied."""


class DigestRefused(Exception):
    """A digest that cannot be taken as its author's word; the message is why."""


class InputRef(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    site: str
    sha256: str
    signature: str
    """The site's signature of its claim on this blob (exchange.claim_bytes), hex: anyone can check it."""


class RoundDigest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    run: str
    round: int
    site: str
    """The digest's author."""
    state_sha256: str
    config_sha256: str
    inputs: list[InputRef]
    """Every pseudo-gradient the author read this round, in site order."""
    accepted: list[str]
    kind: str = "diloco-round-digest"
    schema_version: int = SCHEMA


class SignedDigest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    body: RoundDigest
    signature: str
    """The author's Ed25519 signature of the canonical body (msgspec, declaration order), hex."""


def state_sha256(params: list[torch.Tensor], optimizer: torch.optim.Optimizer) -> str:
    """SHA-256 of the parameters and of the optimizer's state for each (tensors by key name): what a step applies to."""
    h = hashlib.sha256()

    def add(t: torch.Tensor) -> None:
        h.update(memoryview(t.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy()))

    for p in params:
        add(p)
        state = optimizer.state.get(p, {})
        for name in sorted(state):
            h.update(name.encode())
            value = state[name]
            add(value) if isinstance(value, torch.Tensor) else h.update(repr(value).encode())
    return h.hexdigest()


def config_sha256(config: DiLoCoConfig) -> str:
    """SHA-256 of the settings that turn a set of pseudo-gradients into an update (not how long to wait for them)."""
    settings = {"guard": config.guard.model_dump(exclude={"wait_timeout_s"}), "outer": config.outer.model_dump()}
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()


def make_digest(config: DiLoCoConfig, round_: int, state: str, received: dict[str, Received],
                accepted: list[str]) -> RoundDigest:
    inputs = [InputRef(site, r.sha256, r.signature.hex()) for site, r in sorted(received.items())]
    return RoundDigest(run=config.run_id, round=round_, site=config.site_id, state_sha256=state,
                       config_sha256=config_sha256(config), inputs=inputs, accepted=sorted(accepted))


def sign_digest(key: Ed25519PrivateKey, body: RoundDigest) -> bytes:
    return msgspec.json.encode(SignedDigest(body=body, signature=key.sign(msgspec.json.encode(body)).hex()))


def open_digest(data: bytes, exchange: PseudoGradientExchange, round_: int, author: str) -> RoundDigest:
    """`author`'s digest of `round_`, or DigestRefused: it must be theirs, for this run and round, and every
    pseudo-gradient it cites must carry its own site's signature (a digest cannot invent what a peer sent)."""
    if len(data) > DIGEST_CAP:
        raise DigestRefused(f"over {DIGEST_CAP} bytes")
    try:
        signed = msgspec.json.decode(data, type=SignedDigest)
        signature = bytes.fromhex(signed.signature)
    except (msgspec.DecodeError, ValueError) as exc:
        raise DigestRefused(f"unreadable ({exc})") from None
    body = signed.body
    public = exchange.site_keys.get(author)
    if public is None or not keys.verify(public, signature, msgspec.json.encode(body)):
        raise DigestRefused(f"not signed by {author}")
    if (body.kind, body.schema_version, body.run, body.round, body.site) != (
            "diloco-round-digest", SCHEMA, exchange.run_id, round_, author):
        raise DigestRefused(f"signed for {body.kind} v{body.schema_version} of run {body.run!r}, round {body.round}, "
                            f"site {body.site!r}")
    sites = [ref.site for ref in body.inputs]
    if sites != sorted(set(sites)) or not set(body.accepted) <= set(sites):
        raise DigestRefused("its inputs are not one per site, or it accepted a site it did not read")
    for ref in body.inputs:
        try:
            proof = bytes.fromhex(ref.signature)
        except ValueError:
            proof = b""
        if not exchange.verify(round_, ref.site, ref.sha256, proof):
            raise DigestRefused(f"it cites a pseudo-gradient {ref.site} did not sign ({ref.sha256[:12]})")
    return body


def difference(mine: RoundDigest, theirs: RoundDigest) -> str | None:
    """Why `theirs` would apply another update than `mine`, in one line; None when they would apply the same."""
    here, there = {r.site: r.sha256 for r in mine.inputs}, {r.site: r.sha256 for r in theirs.inputs}
    author = theirs.site
    reasons = [f"{site} signed two different pseudo-gradients for this round ({there[site][:12]} read by {author}, "
               f"{here[site][:12]} read here, both signatures check)"
               for site in sorted(here.keys() & there.keys()) if here[site] != there[site]]
    reasons += [f"{site}'s pseudo-gradient counted at {author} but not here (too late here, or refused)"
                for site in sorted(there.keys() - here.keys())]
    reasons += [f"{site}'s pseudo-gradient counted here but not at {author} (too late there, or refused)"
                for site in sorted(here.keys() - there.keys())]
    if theirs.state_sha256 != mine.state_sha256:
        reasons.append(f"{author} applies the round to other global parameters or outer state "
                       f"({theirs.state_sha256[:12]}, here {mine.state_sha256[:12]}): the sites diverged earlier "
                       f"or resumed from different checkpoints")
    if theirs.config_sha256 != mine.config_sha256:
        reasons.append(f"{author} combines with other guard or outer settings ({theirs.config_sha256[:12]}, "
                       f"here {mine.config_sha256[:12]})")
    if not reasons and theirs.accepted != mine.accepted:
        reasons.append(f"{author} accepted {theirs.accepted} and this site {mine.accepted} from the same inputs")
    return "; ".join(reasons) or None


def confirm(exchange: PseudoGradientExchange, mine: RoundDigest, sites: list[str], timeout_s: float) -> list[str]:
    """Publish `mine`, then check every peer's digest that arrives; wait for those whose pseudo-gradient this site
    read until `timeout_s`. Raises SplitError at the first that differs or does not check. Returns the sites
    this site read but which never confirmed (they cost the wait; see the module's docstring for why that is safe)."""
    round_ = mine.round
    prefix = f"diloco round {round_}: nothing applied"
    signed = sign_digest(exchange.key, mine)
    try:
        exchange.put_digest(round_, signed)
    except FileExistsError:
        # Ed25519 is deterministic: the same digest signs to the same bytes, so a restart that replays the round
        # exactly passes; one that read other pseudo-gradients than before the crash would contradict itself.
        raise SplitError(f"{prefix}: this site published another digest of this round before a restart; resume "
                         f"under a new run_id") from None
    waiting_for = {ref.site for ref in mine.inputs} - {mine.site}
    pending = [site for site in sites if site != mine.site]
    unread: dict[str, str] = {}
    deadline = time.monotonic() + timeout_s
    while True:
        last_look = time.monotonic() > deadline
        for site in list(pending):
            try:
                data = exchange.read_digest(round_, site)
            except OSError as exc:  # the network or the store: look again until the deadline
                unread[site] = type(exc).__name__
                continue
            unread.pop(site, None)
            if data is None:
                continue
            pending.remove(site)
            try:
                theirs = open_digest(data, exchange, round_, site)
            except DigestRefused as exc:
                raise SplitError(f"{prefix}: {site}'s digest does not check: {exc}") from None
            reason = difference(mine, theirs)
            if reason is not None:
                raise SplitError(f"{prefix}: {site} aggregated something else: {reason}")
        if last_look and unread:
            # Only a digest known to be absent may be passed over: one that may be there unread could be the
            # earlier digest that this site, publishing second, is the one to compare against.
            raise SplitError(f"{prefix}: could not read the digests of {sorted(unread)} by the deadline "
                             f"({', '.join(sorted(set(unread.values())))})")
        if last_look or not (waiting_for.intersection(pending) or unread):
            return sorted(waiting_for.intersection(pending))
        time.sleep(exchange.poll_s)
