"""Guarded DiLoCo between 3 site processes, one of them poisoning its pseudo-gradients.

The attacker rotates through sign flip, x100 and NaN, one per round. The same run is made twice:
with the guarded path (checks + trimmed mean) and with plain averaging. The test shows both: the
guard rejects every poisoned round and the model keeps learning; plain averaging is wrecked.
"""

from __future__ import annotations

import json
import math
import time

import pytest
import torch
from safetensors.torch import load_file

from composer_prime import keys
from composer_prime.utils.processes import stop

pytestmark = pytest.mark.slow

SITES = ["a", "b", "evil"]
ROUNDS = 6


def _config(tmp_path, site: str, guarded: bool, site_keys) -> dict:
    arm = "guarded" if guarded else "plain"
    return {
        "out": str(tmp_path / arm / site), "outer_steps": ROUNDS, "attack": "rotate" if site == "evil" else "none",
        "diloco": {
            "mode": "guarded", "site_id": site, "sync_every": 10, "sites": SITES,
            "key_path": str(tmp_path / f"{site}.key"),
            "site_public_keys": {s: keys.public_hex(k) for s, k in site_keys.items()},
            "store": {"url": str(tmp_path / f"{arm}-store")},
            "guard": {"checks": guarded, "rule": "trimmed_mean" if guarded else "mean", "wait_timeout_s": 120.0},
        },
    }


def test_poisoned_site_is_rejected_by_the_guard_and_wrecks_plain_averaging(tmp_path, run_site):
    site_keys = {s: keys.generate_key() for s in SITES}
    for site, key in site_keys.items():
        keys.save_private_key(key, tmp_path / f"{site}.key")
    children = [run_site(f"{arm}-{s}", _config(tmp_path, s, arm == "guarded", site_keys))
                for arm in ("guarded", "plain") for s in SITES]
    try:
        deadline = time.monotonic() + 240
        while any(c.poll() is None for c in children):
            assert time.monotonic() < deadline, "sites did not finish"
            time.sleep(0.2)
        assert all(c.poll() == 0 for c in children), [c.error_line() for c in children]
    finally:
        stop(children)

    def result(arm, site):
        return json.loads((tmp_path / arm / site / "result.json").read_text())

    guarded, plain = result("guarded", "a"), result("plain", "a")
    expected = ["direction", "norm", "non-finite"] * (ROUNDS // 3)  # the attacker's rotation: flip, x100, NaN
    assert [r["rejected"] for r in guarded["rounds"]] == [{"evil": why} for why in expected]
    assert all(r["accepted"] == ["a", "b"] for r in guarded["rounds"])
    # Training continues: the agreed model learns (start ~1.2), every round stays finite.
    assert all(math.isfinite(x) for x in guarded["global_losses"])
    assert guarded["global_losses"][-1] < 0.25 * guarded["start_loss"]
    # Honest sites computed the same aggregate from the same signed blobs: identical global weights.
    ga, gb = (load_file(str(tmp_path / "guarded" / s / "global.safetensors")) for s in ("a", "b"))
    assert all(torch.equal(ga[k], gb[k]) for k in ga)

    # Plain averaging let everything in: x100 in round 2 blows the loss up, NaN in round 3 destroys the model.
    assert all(r["rejected"] == {} for r in plain["rounds"])
    assert plain["global_losses"][1] > 10 * guarded["start_loss"]
    assert math.isnan(plain["global_losses"][-1])
