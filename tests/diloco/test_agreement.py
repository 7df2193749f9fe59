"""Round digests: what a site accepts as a peer's word, how disagreements read, and that a site that disagrees
applies nothing (a real GuardedDiLoCoSite on a real directory store; the peer is played by the test with its key)."""

from __future__ import annotations

import os
import threading

import msgspec
import pytest
import torch
from torch import nn

from composer_prime import keys
from composer_prime.configs.diloco import DiLoCoConfig
from composer_prime.diloco.agreement import (
    DigestRefused,
    RoundDigest,
    SignedDigest,
    SplitError,
    difference,
    make_digest,
    open_digest,
    sign_digest,
    state_sha256,
)
from composer_prime.diloco.exchange import PseudoGradientExchange
from composer_prime.diloco.guarded import GuardedDiLoCoSite
from composer_prime.store import Store

SITES = ["a", "b", "evil"]


@pytest.fixture
def world(tmp_path):
    """Keys saved to files, a config per site, and an exchange per site on one directory store."""
    private = {}
    for site in SITES:
        private[site] = keys.generate_key()
        keys.save_private_key(private[site], tmp_path / f"{site}.key")
    public_hex = {site: keys.public_hex(key) for site, key in private.items()}
    configs = {site: DiLoCoConfig(mode="guarded", site_id=site, sites=SITES, sync_every=1,
                                  key_path=str(tmp_path / f"{site}.key"), site_public_keys=public_hex,
                                  store={"url": str(tmp_path / "store")}, guard={"wait_timeout_s": 0.5})
               for site in SITES}
    store = Store(str(tmp_path / "store"))
    public = {site: key.public_key() for site, key in private.items()}
    exchanges = {site: PseudoGradientExchange(store, "run", site, private[site], public, poll_s=0.01) for site in SITES}
    return configs, exchanges


def _pg(seed: int, numel: int = 10) -> torch.Tensor:
    return torch.randn(numel, generator=torch.Generator().manual_seed(seed))


def _digest_of(configs, exchanges, author: str, round_: int, sites: list[str], state: str = "0" * 64) -> RoundDigest:
    received, _ = exchanges[author].gather(round_, sites, 0.5, 10)
    return make_digest(configs[author], round_, state, received, sorted(received))


def test_the_same_round_seen_alike_is_no_difference_and_one_blob_two_ways_names_its_signer(world):
    configs, exchanges = world
    for seed, site in enumerate(SITES):
        exchanges[site].put(0, _pg(seed))
    mine = _digest_of(configs, exchanges, "a", 0, SITES)
    theirs = _digest_of(configs, exchanges, "b", 0, SITES)
    assert difference(mine, theirs) is None
    # evil deletes and rewrites its round (what an S3 Write grant allows) after a read it, before b does.
    for suffix in ("safetensors", "sig"):
        exchanges["evil"].store.fs.rm_file(exchanges["evil"].store.path(exchanges["evil"]._key(0, "evil", suffix)))
    exchanges["evil"].put(0, _pg(7))
    theirs = _digest_of(configs, exchanges, "b", 0, SITES)
    x, y = (next(r.sha256 for r in d.inputs if r.site == "evil") for d in (mine, theirs))
    assert x != y and difference(mine, theirs) == (f"evil signed two different pseudo-gradients for this round "
                                                   f"({y[:12]} read by b, {x[:12]} read here, both signatures check)")
    assert difference(mine, _digest_of(configs, exchanges, "b", 0, ["a", "b"])) == (
        "evil's pseudo-gradient counted here but not at b (too late there, or refused)")


def test_a_digest_is_taken_only_as_its_authors_word_for_this_run_and_round(world):
    configs, exchanges = world
    for seed, site in enumerate(SITES):
        exchanges[site].put(0, _pg(seed))
        exchanges[site].put(1, _pg(10 + seed))
    body = _digest_of(configs, exchanges, "b", 0, SITES)
    signed = sign_digest(exchanges["b"].key, body)
    assert open_digest(signed, exchanges["a"], 0, "b") == body

    def refused(data: bytes, round_: int = 0, author: str = "b") -> str:
        with pytest.raises(DigestRefused) as exc:
            open_digest(data, exchanges["a"], round_, author)
        return str(exc.value)

    assert refused(signed, author="evil") == "not signed by evil"  # b's digest in evil's slot
    assert refused(signed, round_=1) == "signed for diloco-round-digest v1 of run 'run', round 0, site 'b'"  # replayed
    other_run = msgspec.structs.replace(body, run="run2")
    assert refused(sign_digest(exchanges["b"].key, other_run)).endswith("of run 'run2', round 0, site 'b'")
    twice = msgspec.structs.replace(body, inputs=body.inputs[:2] + [body.inputs[1]])  # b's vote counted twice
    assert refused(sign_digest(exchanges["b"].key, twice)) == (
        "its inputs are not one per site, or it accepted a site it did not read")
    invented = msgspec.structs.replace(body, inputs=body.inputs[:2] + [msgspec.structs.replace(
        body.inputs[2], sha256="f" * 64)])
    assert refused(sign_digest(exchanges["b"].key, invented)) == "it cites a pseudo-gradient evil did not sign (ffffffffffff)"
    extra = msgspec.json.encode({**msgspec.to_builtins(msgspec.json.decode(signed, type=SignedDigest)), "note": 1})
    assert refused(extra).startswith("unreadable (Object contains unknown field `note`")
    assert refused(b" " * (1024 * 1024 + 1)) == f"over {1024 * 1024} bytes"


def _site(configs, site: str, wait_s: float = 0.5) -> GuardedDiLoCoSite:
    torch.manual_seed(0)
    model = nn.Linear(3, 2)  # 8 parameters
    inner = torch.optim.SGD(model.parameters(), lr=0.1)
    guard = configs[site].guard.model_copy(update={"wait_timeout_s": wait_s})
    return GuardedDiLoCoSite(configs[site].model_copy(update={"sites": ["a", "b"], "guard": guard}), model, inner)


def _train(site: GuardedDiLoCoSite, seed: int) -> None:
    x = torch.randn(16, 3, generator=torch.Generator().manual_seed(seed))
    site.inner_optimizer.zero_grad()
    site.model(x).pow(2).mean().backward()
    site.inner_optimizer.step()


def test_a_site_whose_peer_aggregated_something_else_stops_in_one_line_with_nothing_applied(world):
    configs, exchanges = world
    a = _site(configs, "a")
    before = [g.detach().clone() for g in a.global_params]
    state_before = state_sha256(a.global_params, a.outer)
    # b published its round and a digest saying a's pseudo-gradient never reached it.
    exchanges["b"].put(0, _pg(3, numel=8))
    exchanges["b"].put_digest(0, sign_digest(exchanges["b"].key, _digest_of(configs, exchanges, "b", 0, ["b"])))
    _train(a, 0)
    with pytest.raises(SplitError) as exc:
        a.after_inner_step()
    line = str(exc.value)
    assert line.startswith("diloco round 0: nothing applied: b aggregated something else: "
                           "a's pseudo-gradient counted here but not at b") and "\n" not in line
    assert all(torch.equal(g, saved) for g, saved in zip(a.global_params, before))
    assert state_sha256(a.global_params, a.outer) == state_before and a.outer_step == 0 and a.history == []


def test_a_peer_that_never_confirms_costs_the_wait_and_the_round_applies(world):
    configs, exchanges = world
    a = _site(configs, "a")
    exchanges["b"].put(0, _pg(3, numel=8))  # b publishes its pseudo-gradient, then nothing
    _train(a, 0)
    assert a.after_inner_step() == 1
    assert a.history[0].unconfirmed == ["b"] and a.history[0].accepted == ["a", "b"]


def test_a_digest_that_cannot_be_read_is_not_passed_over_as_absent(world):
    """b's digest slot is unreadable (here a folder where the file should be): it may hold the digest a must
    compare against, so a stops at the deadline instead of applying as if b had said nothing."""
    configs, exchanges = world
    a = _site(configs, "a")
    exchanges["b"].put(0, _pg(3, numel=8))
    os.makedirs(exchanges["b"].store.path(exchanges["b"]._key(0, "b", "digest")))
    _train(a, 0)
    with pytest.raises(SplitError, match=r"^diloco round 0: nothing applied: could not read the digests of \['b'\] "
                                         r"by the deadline \(IsADirectoryError\)$"):
        a.after_inner_step()
    assert a.outer_step == 0


def test_two_sites_that_agree_apply_the_same_round(world):
    """Both sites in one process, each syncing in its own thread as it would in its own process."""
    configs, _ = world
    sites = [_site(configs, name, wait_s=60.0) for name in ("a", "b")]  # however loaded the machine, both arrive
    start = [g.detach().clone() for g in sites[0].global_params]
    for seed, site in enumerate(sites):
        _train(site, seed)
    records = []
    threads = [threading.Thread(target=lambda s=s: records.append(s.sync())) for s in sites]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.unconfirmed for r in records] == [[], []] and [s.outer_step for s in sites] == [1, 1]
    a, b = sites
    assert all(torch.equal(x, y) for x, y in zip(a.global_params, b.global_params))
    assert not all(torch.equal(x, y) for x, y in zip(a.global_params, start))
