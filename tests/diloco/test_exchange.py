"""The pseudo-gradient exchange through a real directory store, attacked by whoever can write files in it.

Each attack puts real files where a site would find them (a copied blob, a blob signed by another
key, a blob of the wrong size) and checks that the honest reader refuses it with a reason and keeps going.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil

import pytest
import torch
from safetensors.torch import save as save_tensors

from composer_prime import keys
from composer_prime.diloco.exchange import HEADER_CAP, PseudoGradientExchange, claim_bytes
from composer_prime.errors import UserError
from composer_prime.store import Store

NUMEL = 32
SITES = ["a", "b", "evil"]


@pytest.fixture
def net(tmp_path):
    """site -> its exchange, all on one directory store, every site's public key known to every other."""
    private = {site: keys.generate_key() for site in SITES}
    public = {site: key.public_key() for site, key in private.items()}
    store = Store(str(tmp_path / "store"))
    return {site: PseudoGradientExchange(store, "run", site, private[site], public, poll_s=0.01) for site in SITES}


def _pg(seed: int) -> torch.Tensor:
    return torch.randn(NUMEL, generator=torch.Generator().manual_seed(seed))


def _file(net, round_: int, site: str, suffix: str):
    return net["a"].store.path(net["a"]._key(round_, site, suffix))


def test_a_signed_round_comes_back_with_its_proof(net):
    net["a"].put(0, _pg(1))
    got, missing = net["b"].gather(0, ["a"], 1.0, NUMEL)
    assert missing == {} and torch.equal(got["a"].pseudo_grad, _pg(1))
    blob = open(_file(net, 0, "a", "safetensors"), "rb").read()
    assert got["a"].sha256 == hashlib.sha256(blob).hexdigest()
    assert keys.verify(net["a"].key.public_key(), got["a"].signature, claim_bytes("run", 0, "a", got["a"].sha256))


def test_a_signed_blob_of_round_0_is_refused_as_round_1(net, tmp_path):
    net["a"].put(0, _pg(1))
    for suffix in ("safetensors", "sig"):  # the store (or anyone who can write there) replays a's round 0
        shutil.copy(_file(net, 0, "a", suffix), _file(net, 1, "a", suffix))
    got, missing = net["b"].gather(1, ["a"], 0.5, NUMEL)
    assert got == {} and missing == {"a": "bad-signature"}


def test_a_blob_of_site_a_is_refused_as_site_evils_even_under_as_own_key(net):
    """evil registered a's public key as its own and copies a's signed round into its folder: the claim names a."""
    net["b"].site_keys["evil"] = net["a"].key.public_key()
    net["a"].put(0, _pg(1))
    evil_dir = _file(net, 0, "evil", "sig").rsplit("/", 1)[0]
    os.makedirs(evil_dir)
    for suffix in ("safetensors", "sig"):
        shutil.copy(_file(net, 0, "a", suffix), _file(net, 0, "evil", suffix))
    got, missing = net["b"].gather(0, ["a", "evil"], 0.5, NUMEL)
    assert sorted(got) == ["a"] and missing == {"evil": "bad-signature"}


def test_a_blob_of_another_run_is_refused(net):
    other_run = PseudoGradientExchange(net["a"].store, "run2", "b", net["b"].key, net["b"].site_keys)
    net["a"].put(0, _pg(1))
    shutil.copytree(_file(net, 0, "a", "sig").rsplit("/", 2)[0], other_run.store.path("diloco/run2"))
    got, missing = other_run.gather(0, ["a"], 0.5, NUMEL)
    assert missing == {"a": "bad-signature"}


def _signed_by_evil(net, round_: int, blob: bytes) -> None:
    """evil writes `blob` as its round, correctly signed: only the content is wrong."""
    store = net["evil"].store
    store.write_bytes(net["evil"]._key(round_, "evil", "safetensors"), blob)
    digest = hashlib.sha256(blob).hexdigest()
    store.write_bytes(net["evil"]._key(round_, "evil", "sig"), net["evil"].key.sign(claim_bytes("run", round_, "evil", digest)))


@pytest.mark.parametrize("blob, reason", [
    (b"not a safetensors file", "malformed"),
    (save_tensors({"pseudo_grad": torch.zeros(NUMEL + 1)}), "malformed"),  # the wrong size would crash torch.stack
    (save_tensors({"pseudo_grad": torch.zeros(NUMEL, dtype=torch.float64)}), "malformed"),
    (save_tensors({"pseudo_grad": torch.zeros(4, NUMEL // 4)}), "malformed"),
    (save_tensors({"pseudo_grad": torch.zeros(NUMEL), "extra": torch.zeros(1)}), "malformed"),
    (save_tensors({"pseudo_grad": torch.zeros(NUMEL // 4 + HEADER_CAP)}), "oversized"),  # read no further than the cap
])
def test_a_signed_but_malformed_blob_is_refused_and_the_honest_round_goes_on(net, blob, reason):
    net["a"].put(0, _pg(1))
    _signed_by_evil(net, 0, blob)
    got, missing = net["b"].gather(0, ["a", "evil"], 0.5, NUMEL)
    assert sorted(got) == ["a"] and missing == {"evil": reason}


def test_a_signature_without_its_blob_is_unreadable_at_the_deadline(net):
    net["evil"].put(0, _pg(2))
    os.remove(_file(net, 0, "evil", "safetensors"))
    got, missing = net["b"].gather(0, ["evil"], 0.3, NUMEL)
    assert missing == {"evil": "unreadable: FileNotFoundError"}


def test_round_files_are_write_once_and_a_restarted_site_keeps_what_it_published(net, caplog):
    net["a"].put(0, _pg(1))
    before = open(_file(net, 0, "a", "safetensors"), "rb").read()
    with caplog.at_level(logging.WARNING):
        net["a"].put(0, _pg(99))  # a restart recomputes another pseudo-gradient for the same round
    assert open(_file(net, 0, "a", "safetensors"), "rb").read() == before
    assert "keeping that one" in caplog.text
    got, _ = net["b"].gather(0, ["a"], 0.5, NUMEL)
    assert torch.equal(got["a"].pseudo_grad, _pg(1))  # what the peers saw stands


def test_a_round_squatted_under_a_sites_prefix_stops_that_site_in_one_line(net):
    """Something else wrote a's round 1 before a did (possible where the store does not scope writes per site)."""
    _signed_by_evil(net, 1, save_tensors({"pseudo_grad": _pg(5)}))
    for suffix in ("safetensors", "sig"):
        os.makedirs(_file(net, 1, "a", suffix).rsplit("/", 1)[0], exist_ok=True)
        shutil.copy(_file(net, 1, "evil", suffix), _file(net, 1, "a", suffix))
    with pytest.raises(UserError, match=r"round_1.safetensors was written before but is not this site's signed round "
                                        r"\(bad-signature\)") as exc:
        net["a"].put(1, _pg(1))
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("field, value", [("site_id", "."), ("site_id", ".."), ("site_id", "../a"), ("site_id", "a.sig"),
                                          ("run_id", ".."), ("run_id", "run/a"), ("sites", ["a", "a"])])
def test_ids_that_would_name_another_folder_or_file_are_refused(field, value):
    """Site and run ids are folders of the exchange: none may climb out, alias another, or count twice."""
    from pydantic import ValidationError

    from composer_prime.configs.diloco import DiLoCoConfig

    settings = {"mode": "guarded", "site_id": "a", "sites": ["a", "b"], "store": {"url": "s"}, field: value}
    if field == "site_id":
        settings["sites"] = [value, "b"]
    with pytest.raises(ValidationError):
        DiLoCoConfig(**settings)
