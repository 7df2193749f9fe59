"""A real worker process joins a run, pulls verified weights, uploads signed batches the verifier accepts."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import tomli_w
from safetensors.torch import load_file

from composer_prime.broadcast import keys
from composer_prime.broadcast.publish import publish_version
from composer_prime.broadcast.server import create_origin_app
from composer_prime.broadcast.store import Store
from composer_prime.utils.serve import ServedApp
from composer_prime.verify.inbox import RolloutInbox
from composer_prime.verify.registry import WorkerRegistry
from composer_prime.verify.scorer import ModelScorer
from composer_prime.verify.verifier import RolloutVerifier, VerifyConfig
from composer_prime.weights import publish_weights
from composer_prime.worker.coordinator import create_coordinator_app
from composer_prime.worker.protocol import JoinResponse

pytestmark = pytest.mark.slow
WARMSTART = Path(__file__).resolve().parents[2] / "configs" / "quickstart" / "warmstart"




def test_worker_joins_pulls_samples_uploads_and_resumes_its_journal(tmp_path):
    run_key = keys.generate_key()
    version_dir = publish_weights(tmp_path / "trainer", 0, load_file(str(WARMSTART / "model.safetensors")),
                                  (WARMSTART / "config.json").read_text(), assets_dir=WARMSTART)
    store_root = tmp_path / "store"
    publish_version(version_dir, Store(str(store_root / "broadcasts")), run_key, 0, shard_size=256 * 1024)
    registry = WorkerRegistry(tmp_path / "workers.json")
    origin = ServedApp(create_origin_app(Store(str(store_root / "broadcasts")))).start()
    info = JoinResponse(run_id="t", run_public_key=keys.public_hex(run_key), broadcast_servers=[origin.url],
                        store_url=str(store_root), env_id="reverse-text", temperature=1.0, max_tokens=16,
                        samples_per_prompt=2, prompts_per_batch=2, current_version=0)
    coordinator = ServedApp(create_coordinator_app(registry, "s3cret", lambda: info, lambda: 0)).start()
    config = {"run_url": coordinator.url, "join_token": "s3cret", "worker_id": "vol-1",
              "state_dir": str(tmp_path / "worker"), "max_batches": 2, "heartbeat_s": 0.5, "num_threads": 1}
    cfg = tmp_path / "worker.toml"
    argv = [sys.executable, "-m", "composer_prime.worker.main", "@", str(cfg)]
    try:
        cfg.write_text(tomli_w.dumps({**config, "join_token": "wrong"}))
        refused = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert refused.returncode == 2 and "bad join token" in refused.stderr.strip().splitlines()[-1]

        cfg.write_text(tomli_w.dumps(config))
        first = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        assert first.returncode == 0, first.stderr[-2000:]
        workers = httpx.get(f"{coordinator.url}/workers").json()
        assert workers["vol-1"]["last_heartbeat"]["batches_uploaded"] == 2
        assert (tmp_path / "worker" / "broadcasts" / "step_0" / "STABLE").is_file()  # verified weights installed

        # A crash between journaling and upload confirmation: the batch is pending again at restart.
        uploaded = sorted((tmp_path / "worker" / "journal" / "uploaded").iterdir())
        shutil.move(str(uploaded[0]), tmp_path / "worker" / "journal" / "pending" / uploaded[0].name)
        cfg.write_text(tomli_w.dumps({**config, "max_batches": 1}))
        second = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        assert second.returncode == 0, second.stderr[-2000:]
    finally:
        coordinator.stop()
        origin.stop()

    assert not list((tmp_path / "worker" / "journal" / "pending").iterdir())
    keys_in_store = sorted(p.name for p in (store_root / "rollouts" / "vol-1").iterdir())
    assert len(keys_in_store) == 3  # 2 + 1 new; the re-uploaded one landed on its own key again

    scorer = ModelScorer(lambda version: version_dir)
    verifier = RolloutVerifier(registry, scorer, VerifyConfig(), vocab_size=scorer.model(0).config.vocab_size)
    decisions = RolloutInbox(Store(str(store_root)), verifier).poll(lambda: 0)
    assert len(decisions) == 3 and all(d.ok for d in decisions), [(d.batch_reason, d.rejected) for d in decisions]
    assert sum(len(d.accepted) for d in decisions) == 12  # 3 batches x 2 prompts x 2 samples, 100% accepted
    assert registry.summary()["vol-1"]["samples_accepted"] == 12
