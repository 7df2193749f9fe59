"""The trainer as a DiLoCo site: real trainer processes, a real torchft lighthouse, batch files as the orchestrator
writes them (2 shards per step), a site killed and restarted mid-run."""

import re
import sys
import time

import numpy as np
import pytest
import torch

from composer_prime.batch import batch_path, read_batch
from composer_prime.diloco.lighthouse import start_lighthouse
from composer_prime.trainer.data import own_share
from composer_prime.utils.metrics import read_metrics
from composer_prime.utils.net import free_port
from composer_prime.utils.processes import spawn, stop
from composer_prime.weights import list_versions

STEPS = 24


def _site(helpers, tmp_path, tiny_model_dir, name: str, shard: int, diloco: dict, **overrides):
    out = tmp_path / name
    settings = {"max_steps": STEPS, "publish_weights": shard == 0, "diloco": {"site_id": name, **diloco},
                "data.dir": str(tmp_path / "run"), "data.shard": shard, "data.shards": 2, "ckpt.interval": 4,
                "ckpt.keep_last": 2, "num_threads": 1, "batch_timeout_s": 300.0}
    return out, helpers.trainer_config(out, tiny_model_dir, **{**settings, **overrides})


def _start(name, config, tmp_path):
    return spawn(name, [sys.executable, "-m", "composer_prime.trainer.main", "@", str(config)], tmp_path / "logs",
                 env={"GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"})


def _agreed(out, step):
    """Each fragment's agreed parameters in a site's checkpoint, flattened (torchft names)."""
    state = torch.load(out / "checkpoints" / f"step_{step}" / "diloco.pt", weights_only=True)
    return {f"{key}/{name}": t for key, frag in state.items()
            for name, t in frag["original_parameters"].items()}


@pytest.mark.slow
def test_two_torchft_sites_train_shards_and_a_killed_site_heals_and_jumps(tmp_path, tiny_model_dir, helpers):
    run = tmp_path / "run"
    port = free_port()
    lighthouse = start_lighthouse(f"127.0.0.1:{port}", 2, tmp_path / "logs")
    diloco = {"mode": "torchft", "lighthouse": f"http://127.0.0.1:{port}", "sync_every": 2, "fragments": 2,
              "min_replicas": 2, "timeout_s": 60.0}
    out_a, cfg_a = _site(helpers, tmp_path, tiny_model_dir, "a", 0, diloco)
    out_b, cfg_b = _site(helpers, tmp_path, tiny_model_dir, "b", 1, diloco)
    children = [lighthouse]
    written = 0

    def write_until(step):  # the test plays the orchestrator: steps appear over time, as in a real run
        nonlocal written
        while written < step:
            written += 1
            helpers.write_step(run, written, helpers.make_samples(written, 8), world_size=2)

    try:
        write_until(7)
        a, b = _start("site-a", cfg_a, tmp_path), _start("site-b", cfg_b, tmp_path)
        children += [a, b]
        deadline = time.monotonic() + 240
        # Both sites train 1..7 and wait for step 8; b's newest checkpoint is step 4.
        while not any(r["step"] == 7 for r in read_metrics(out_b, "trainer") if "loss" in r):
            assert time.monotonic() < deadline and b.poll() is None, b.log_tail(10)
            time.sleep(0.05)
        stop([b], grace_s=0)
        # The lead trains step 8, then waits in its quorum (min_replicas 2) for b to come back.
        write_until(12)
        time.sleep(2)
        b2 = _start("site-b-restarted", cfg_b, tmp_path)
        children.append(b2)
        write_until(STEPS)
        for child in (a, b2):
            while child.poll() is None:
                assert time.monotonic() < deadline, child.log_tail(10)
                time.sleep(0.1)
        assert a.poll() == 0 and b2.poll() == 0, [a.log_tail(10), b2.log_tail(10)]
    finally:
        stop(children)

    log_b = (tmp_path / "logs" / "site-b-restarted.log").read_text()
    # Restarted from its step-4 checkpoint, b healed from the lead at its first sync and jumped to the lead's step.
    assert "healed from a peer during step 5: continuing from the peer's step 8" in log_b, log_b[-3000:]
    steps_a = [r["step"] for r in read_metrics(out_a, "trainer") if "loss" in r]
    assert steps_a == list(range(1, STEPS + 1))
    restarted = [int(m) for m in re.findall(r"trainer INFO step (\d+)/", log_b)]
    assert restarted == list(range(8, STEPS + 1))  # its step 5 became step 8; 6 and 7 were never trained again
    assert list_versions(out_a)[-1] == STEPS and not list_versions(out_b)  # only the lead publishes
    agreed_a, agreed_b = _agreed(out_a, STEPS), _agreed(out_b, STEPS)
    assert agreed_a.keys() == agreed_b.keys() and all(torch.equal(agreed_a[k], agreed_b[k]) for k in agreed_a)


@pytest.mark.slow
def test_two_guarded_sites_train_through_a_store(tmp_path, tiny_model_dir, helpers):
    from composer_prime import keys

    run, steps = tmp_path / "run", 6
    for step in range(1, steps + 1):
        helpers.write_step(run, step, helpers.make_samples(step, 8), world_size=2)
    public = {}
    for name in ("a", "b"):
        key = keys.load_or_create_private_key(tmp_path / f"{name}.key")
        public[name] = keys.public_hex(key)
    children, outs = [], []
    try:
        for shard, name in enumerate(("a", "b")):
            diloco = {"mode": "guarded", "sync_every": 3, "sites": ["a", "b"], "key_path": str(tmp_path / f"{name}.key"),
                      "site_public_keys": public, "store": {"url": str(tmp_path / "store")},
                      "guard": {"rule": "mean", "wait_timeout_s": 60.0}}
            out, cfg = _site(helpers, tmp_path, tiny_model_dir, name, shard, diloco, max_steps=steps,
                             **{"ckpt.interval": 3})
            outs.append(out)
            children.append(_start(f"guarded-{name}", cfg, tmp_path))
        deadline = time.monotonic() + 180
        while any(c.poll() is None for c in children):
            assert time.monotonic() < deadline, [c.log_tail(10) for c in children]
            time.sleep(0.1)
        assert all(c.poll() == 0 for c in children), [c.log_tail(10) for c in children]
    finally:
        stop(children)
    globals_ = [torch.load(out / "checkpoints" / f"step_{steps}" / "diloco.pt", weights_only=True) for out in outs]
    assert globals_[0]["outer_step"] == globals_[1]["outer_step"] == 2  # 6 steps, a round every 3
    assert all(torch.equal(x, y) for x, y in zip(globals_[0]["global"], globals_[1]["global"]))
    for site in ("a", "b"):  # each round: the pseudo-gradient, its signature and the site's digest, under its prefix
        files = (tmp_path / "store" / "diloco" / "run" / site).iterdir()
        assert sorted(p.name for p in files) == [f"round_{r}.{suffix}" for r in (0, 1) for suffix in
                                                 ("digest", "safetensors", "sig")]


def test_a_site_normalises_by_its_own_tokens(tmp_path, helpers):
    samples = helpers.make_samples(3, 10)
    helpers.write_step(tmp_path, 1, samples, world_size=2)
    for rank in (0, 1):
        batch = read_batch(batch_path(tmp_path, 1, rank))
        assert batch.num_loss_tokens == int(sum(s["loss_mask"].sum() for s in samples))  # the step's global count
        own = int(np.sum([s["loss_mask"].sum() for s in samples[rank::2]]))
        assert own_share(batch).num_loss_tokens == own < batch.num_loss_tokens


def test_shard_must_be_below_shards():
    from pydantic import ValidationError

    from composer_prime.configs.trainer import TrainerConfig

    with pytest.raises(ValidationError, match="data.shard 2 must be below data.shards 2"):
        TrainerConfig(data={"shard": 2, "shards": 2})
