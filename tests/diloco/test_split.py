"""No split between guarded sites: two honest site processes and a third site, played by the test with its own key
and its own store credentials, that tries to make them apply different rounds.

The test also plays the network: it pauses one honest site (SIGSTOP) to give the attacker the worst timing, the
way a slow link would. Each attack, unchecked, makes the two honest sites apply different updates (the test
computes both); with the digests both sites stop before round 0 applies, with one line that says why.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
import torch
from local_s3 import start_local_s3

from composer_prime import keys
from composer_prime.configs.diloco import DiLoCoConfig
from composer_prime.diloco.exchange import PseudoGradientExchange
from composer_prime.diloco.robust import check, combine
from composer_prime.diloco.toy import make_model
from composer_prime.store import Store
from composer_prime.utils.processes import stop

pytestmark = pytest.mark.slow

SITES = ["a", "b", "evil"]
PREFIX = "split"
NUMEL = sum(p.numel() for p in make_model(0).parameters())


def _site_actions(bucket: str, site: str) -> list[str]:
    """What a guarded site needs in the store and no more: read every site's rounds, write its own (infra/README.md)."""
    return [f"Read:{bucket}/{PREFIX}/diloco/*", f"Write:{bucket}/{PREFIX}/diloco/run/{site}/*", f"List:{bucket}"]


def _config(tmp_path, site: str, store: dict, public: dict, wait_s: float) -> dict:
    return {"out": str(tmp_path / site), "outer_steps": 1, "batch_size": 16, "diloco": {
        "mode": "guarded", "site_id": site, "sync_every": 5, "sites": SITES, "key_path": str(tmp_path / f"{site}.key"),
        "site_public_keys": public, "store": store, "guard": {"wait_timeout_s": wait_s}}}


def _keys(tmp_path) -> dict:
    private = {site: keys.generate_key() for site in SITES}
    for site, key in private.items():
        keys.save_private_key(key, tmp_path / f"{site}.key")
    return private


def _wait_for(predicate, children, what: str, timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline and all(c.poll() is None for c in children), (
            what, [c.log_tail(5) for c in children])
        time.sleep(0.05)


def _both_stop(children, timeout_s: float = 120) -> list[str]:
    """Both honest sites exit 2 on their own; their last log lines."""
    deadline = time.monotonic() + timeout_s
    while any(c.poll() is None for c in children):
        assert time.monotonic() < deadline, [c.log_tail(5) for c in children]
        time.sleep(0.1)
    assert [c.poll() for c in children] == [2, 2], [c.log_tail(10) for c in children]
    return [c.log_tail(1) for c in children]


def _would_apply(received: dict, config: DiLoCoConfig) -> torch.Tensor:
    verdict = check({s: r.pseudo_grad for s, r in received.items()}, config.guard.max_norm_ratio, config.guard.min_cosine)
    assert sorted(verdict.accepted) == sorted(received)  # the attacker's blob passes every check
    return combine([received[s].pseudo_grad for s in verdict.accepted], config.guard.rule, config.guard.trim)


def _progress(tmp_path, site: str) -> int:
    return int((tmp_path / site / "progress").read_text())


def test_a_site_that_shows_each_honest_site_another_signed_round_stops_both_before_anything_applies(
        tmp_path, run_site, monkeypatch):
    """On seaweedfs with one identity per site, each allowed to write only its own prefix: evil can neither overwrite
    its round (write-once) nor write into a's, but it may delete its own files and write again, and does so between
    a's read and b's."""
    private = _keys(tmp_path)
    public = {site: keys.public_hex(key) for site, key in private.items()}
    s3 = start_local_s3(tmp_path / "s3", role_actions={f"site_{site}": _site_actions("run", site) for site in SITES})
    store = {"url": f"s3://run/{PREFIX}", "endpoint_url": s3.endpoint_url}
    children = []
    try:
        for site in ("a", "b"):
            children.append(run_site(site, _config(tmp_path, site, {**store, "role": f"site_{site}"}, public, 120.0),
                                     env=s3.role_env(f"site_{site}")))
        for name, value in s3.role_env("site_evil").items():
            monkeypatch.setenv(name, value)
        evil = _evil(Store(store["url"], s3.endpoint_url, role="site_evil"), private, public)
        honest = _when_honest_rounds_are_in(evil, children)
        os.kill(children[1].process.pid, signal.SIGSTOP)  # b is slow: it has not looked for evil's round yet
        time.sleep(0.5)
        mean = (honest["a"].pseudo_grad + honest["b"].pseudo_grad) / 2
        evil.put(0, 1.5 * mean)  # X, for a
        _wait_for(lambda: evil.store.exists(evil._key(0, "a", "digest")), children[:1], "a's digest of round 0")
        x = _evils_round(evil)
        # The store holds evil to its word and to its prefix ...
        with pytest.raises(FileExistsError):
            evil.store.write_once(evil._key(0, "evil", "safetensors"), b"another round 0")
        with pytest.raises(PermissionError):
            evil.store.write_bytes(evil._key(1, "a", "safetensors"), b"a's round 1")
        # ... but its own files it may delete, and then write Y, for b.
        for suffix in ("safetensors", "sig"):
            evil.store.fs.rm_file(evil.store.path(evil._key(0, "evil", suffix)))
        evil.put(0, 0.5 * mean)
        y = _evils_round(evil)
        os.kill(children[1].process.pid, signal.SIGCONT)
        lines = _both_stop(children)
    finally:
        _resume_and_stop(children)
        s3.stop()
    config = DiLoCoConfig.model_validate(_config(tmp_path, "a", store, public, 1.0)["diloco"])
    update_a, update_b = _would_apply({**honest, "evil": x}, config), _would_apply({**honest, "evil": y}, config)
    assert (update_a - update_b).norm() > 0.1 * update_a.norm()  # unchecked: a split from round 0 on
    assert lines == [
        f"error: diloco round 0: nothing applied: b aggregated something else: evil signed two different "
        f"pseudo-gradients for this round ({y.sha256[:12]} read by b, {x.sha256[:12]} read here, both signatures check)",
        f"error: diloco round 0: nothing applied: a aggregated something else: evil signed two different "
        f"pseudo-gradients for this round ({x.sha256[:12]} read by a, {y.sha256[:12]} read here, both signatures check)"]
    assert _progress(tmp_path, "a") == _progress(tmp_path, "b") == 0  # no outer step was taken


def test_a_round_that_lands_between_two_sites_deadlines_stops_both(tmp_path, run_site):
    """No second signature needed: evil publishes once, after a's deadline (10 s) and within b's (120 s)."""
    private = _keys(tmp_path)
    public = {site: keys.public_hex(key) for site, key in private.items()}
    store = {"url": str(tmp_path / "store")}
    children = [run_site(site, _config(tmp_path, site, store, public, wait_s))
                for site, wait_s in (("a", 10.0), ("b", 120.0))]
    try:
        evil = _evil(Store(store["url"]), private, public)
        # a waits, paused, until b's round is in: whatever the machine's load, a's set is then {a, b}.
        _wait_for(lambda: evil.store.exists(evil._key(0, "a", "sig")), children, "a's round 0")
        os.kill(children[0].process.pid, signal.SIGSTOP)
        honest = _when_honest_rounds_are_in(evil, children)
        os.kill(children[0].process.pid, signal.SIGCONT)
        _wait_for(lambda: evil.store.exists(evil._key(0, "a", "digest")), children, "a's digest of round 0")
        evil.put(0, 1.5 * (honest["a"].pseudo_grad + honest["b"].pseudo_grad) / 2)
        lines = _both_stop(children)
        late = _evils_round(evil)
    finally:
        _resume_and_stop(children)
    config = DiLoCoConfig.model_validate(_config(tmp_path, "a", store, public, 1.0)["diloco"])
    update_a, update_b = _would_apply(honest, config), _would_apply({**honest, "evil": late}, config)
    assert (update_a - update_b).norm() > 0.1 * update_a.norm()  # unchecked, b would apply evil's round and a not
    assert lines == [
        "error: diloco round 0: nothing applied: b aggregated something else: evil's pseudo-gradient counted at b "
        "but not here (too late here, or refused)",
        "error: diloco round 0: nothing applied: a aggregated something else: evil's pseudo-gradient counted here "
        "but not at a (too late there, or refused)"]
    assert _progress(tmp_path, "a") == _progress(tmp_path, "b") == 0


def _evil(store: Store, private: dict, public: dict) -> PseudoGradientExchange:
    return PseudoGradientExchange(store, "run", "evil", private["evil"],
                                  {site: keys.parse_public_key(hex_) for site, hex_ in public.items()})


def _when_honest_rounds_are_in(evil: PseudoGradientExchange, children) -> dict:
    """Once a and b published round 0 (both now wait for evil's): their pseudo-gradients, read as evil reads them."""
    _wait_for(lambda: all(evil.store.exists(evil._key(0, s, "sig")) for s in ("a", "b")), children,
              "the honest sites' round 0")
    honest, missing = evil.gather(0, ["a", "b"], 5.0, NUMEL)
    assert missing == {}
    return honest


def _evils_round(evil: PseudoGradientExchange):
    got, missing = evil.gather(0, ["evil"], 5.0, NUMEL)
    assert missing == {}
    return got["evil"]


def _resume_and_stop(children) -> None:
    for child in children:
        if child.poll() is None:
            os.kill(child.process.pid, signal.SIGCONT)
    stop(children)
