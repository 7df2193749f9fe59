"""Steps through an object store (a real seaweedfs S3 on 127.0.0.1) for trainer sites on other machines:
the orchestrator uploads each step after publishing it locally, a remote site takes its rank's batch only
once the step is complete there and sealed by the orchestrator, and a crash between the two is repaired
at start-up."""

from __future__ import annotations

import logging
import threading
import time

import msgspec
import pytest

from composer_prime.batch import batch_path, read_batch, store_batch_key, store_complete_key
from composer_prime import keys
from composer_prime.errors import UserError
from composer_prime.orchestrator.packing import Sample, pack_step
from composer_prime.store import Store
from composer_prime.orchestrator.step_io import mirror_missing, write_step
from composer_prime.trainer.data import fetch_from_store, wait_for_batch
from composer_prime.verify.step_seal import seal_step

pytestmark = pytest.mark.slow
KEY = keys.generate_key()  # the orchestrator's step_key
PUBLIC = KEY.public_key()


def _batches(step: int, world_size: int = 2, advantage: float = 0.5):
    samples = [Sample([1, 2], [3, 4, 5], [-0.1, -0.2, -0.3], advantage + step, step - 1) for _ in range(3)]
    return pack_step(samples, step=step, seq_len=8, micro_batch_rows=1, world_size=world_size, pad_token_id=0,
                     temperature=1.0)


@pytest.fixture
def store(s3, monkeypatch, request):
    for key, value in s3.env.items():
        monkeypatch.setenv(key, value)
    return Store(f"s3://run/{request.node.name}", s3.endpoint_url)


def test_a_remote_site_waits_for_the_complete_step_and_gets_its_rank(store, tmp_path):
    run, site = tmp_path / "run", tmp_path / "site-b"
    write_step(run, 1, _batches(1), {}, store, KEY)
    assert store.exists(store_complete_key(1)) and store.exists(store_batch_key(1, 1))
    batch, _ = wait_for_batch(site, 1, 1, 2, timeout_s=30, store=store, public_key=PUBLIC)
    assert batch_path(site, 1, 1).read_bytes() == batch_path(run, 1, 1).read_bytes()
    assert (batch.step, batch.rank, batch.world_size) == (1, 1, 2)

    # Rank files without the marker: an upload in progress, not taken.
    store.write_bytes(store_batch_key(2, 1), batch_path(run, 1, 1).read_bytes())
    assert not fetch_from_store(store, PUBLIC, site, 2, 1, 2) and not batch_path(site, 2, 1).exists()

    # A step published while the site waits arrives through the store.
    publisher = threading.Timer(1.0, write_step, (run, 2, _batches(2), {}, store, KEY))
    publisher.start()
    t0 = time.monotonic()
    batch, waited = wait_for_batch(site, 2, 1, 2, timeout_s=60, store=store, public_key=PUBLIC)
    publisher.join()
    assert batch.step == 2 and waited >= 0.9 and time.monotonic() - t0 < 30
    assert read_batch(batch_path(site, 2, 1)).micro_batches[0].advantages.numpy().tolist() == \
        read_batch(batch_path(run, 2, 1)).micro_batches[0].advantages.numpy().tolist()

    with pytest.raises(UserError, match=f"no batch for step 9 in {store.url} after 1 s"):
        wait_for_batch(site, 9, 1, 2, timeout_s=1, store=store, public_key=PUBLIC)


def test_steps_published_before_a_crash_but_not_uploaded_are_uploaded_at_start(store, tmp_path):
    run = tmp_path / "run"
    write_step(run, 1, _batches(1), {}, store, KEY)
    write_step(run, 2, _batches(2), {})  # the process died before the upload
    write_step(run, 3, _batches(3), {})
    assert not store.exists(store_complete_key(2))
    assert mirror_missing(store, KEY, run, 2) == [2, 3]
    assert all(store.read_bytes(store_batch_key(step, rank)) == batch_path(run, step, rank).read_bytes()
               for step in (2, 3) for rank in (0, 1))
    assert mirror_missing(store, KEY, run, 2) == []


def test_a_site_refuses_a_step_without_the_orchestrators_seal_and_waits_for_a_sealed_one(store, tmp_path, caplog):
    run, site = tmp_path / "run", tmp_path / "site-b"
    write_step(run, 1, _batches(1), {})  # the real step 1, not yet uploaded
    # What an attacker with write access puts in its place: other advantages, sealed with its own key.
    forged_bytes = msgspec.msgpack.encode(_batches(1, advantage=100.0)[1])
    attacker = keys.generate_key()
    store.write_bytes(store_batch_key(1, 1), forged_bytes)
    store.write_bytes(store_complete_key(1), seal_step(attacker, 1, [b"", forged_bytes]))
    publisher = threading.Timer(1.5, lambda: write_step(run, 1, _batches(1), {}, store, KEY))
    publisher.start()
    with caplog.at_level(logging.WARNING, logger="composer_prime.trainer.data"):
        batch, _ = wait_for_batch(site, 1, 1, 2, timeout_s=60, store=store, public_key=PUBLIC)
    publisher.join()
    assert batch_path(site, 1, 1).read_bytes() == batch_path(run, 1, 1).read_bytes() != forged_bytes
    refusals = [r.getMessage() for r in caplog.records if "refused step 1" in r.getMessage()]
    assert len(refusals) == 1 and "not the orchestrator's" in refusals[0], refusals

    # A genuine seal for another step, or over other bytes, is refused with its reason; the timeout says why.
    store.write_bytes(store_batch_key(5, 1), batch_path(run, 1, 1).read_bytes())
    store.write_bytes(store_complete_key(5), store.read_bytes(store_complete_key(1)))
    with pytest.raises(UserError, match="refused: step 5: the seal is the orchestrator's for step 1"):
        wait_for_batch(site, 5, 1, 2, timeout_s=1, store=store, public_key=PUBLIC)
    store.write_bytes(store_complete_key(6), seal_step(KEY, 6, [b"a", b"b"]))
    store.write_bytes(store_batch_key(6, 1), forged_bytes)
    with pytest.raises(UserError, match="rank 1's batch is not the one the orchestrator sealed"):
        wait_for_batch(site, 6, 1, 2, timeout_s=1, store=store, public_key=PUBLIC)
    assert not batch_path(site, 5, 1).exists() and not batch_path(site, 6, 1).exists()
