"""The trainer -> store bridge publishes new versions once and prunes old ones."""

from __future__ import annotations

import torch

from composer_prime.broadcast.client import BroadcastClient, StoreSource
from composer_prime.broadcast.manifest import stored_versions
from composer_prime.broadcast.watch import BroadcastWatchConfig, publish_new
from composer_prime.configs.shared import StoreConfig
from composer_prime.store import Store
from composer_prime.weights import load_version_state_dict, publish_weights


def test_new_versions_are_published_and_old_ones_pruned(run_key, tmp_path):
    out = tmp_path / "run"
    config = BroadcastWatchConfig(output_dir=out, store=StoreConfig(url=str(tmp_path / "store")), run_key=tmp_path / "k",
                                  keep_last=2, shard_size=4096)
    store = Store.from_config(config.store)
    for version in (1, 2):
        publish_weights(out, version, {"w": torch.full((3000,), float(version))}, "{}")
    assert publish_new(config, store, run_key) == [1, 2]
    assert publish_new(config, store, run_key) == []  # nothing new: nothing rewritten
    publish_weights(out, 3, {"w": torch.full((3000,), 3.0)}, "{}")
    assert publish_new(config, store, run_key) == [3]
    assert stored_versions(store) == [2, 3]
    report = BroadcastClient([StoreSource(store)], run_key.public_key(), tmp_path / "w").fetch()
    assert report.version == 3 and torch.equal(load_version_state_dict(report.path)["w"], torch.full((3000,), 3.0))
