"""The inbox verifies new batches in upload order across workers, each once, remembers them across restarts,
deletes what it processed, and nothing a worker puts in the store makes it raise."""

from __future__ import annotations

import os
import time

from composer_prime.configs.verify import VerifyConfig
from composer_prime.coordinator.protocol import rollout_key
from composer_prime.store import Store
from composer_prime.verify.inbox import RolloutInbox
from composer_prime.verify.rollout_batch import signed_bytes


def _stamp(store: Store, key: str, t: float) -> None:
    os.utime(store.path(key), (t, t))


def test_batches_are_verified_in_upload_order_once_then_deleted(run, tmp_path):
    store = Store(str(tmp_path / "store"))
    registry, workers = run.registry(tmp_path / "workers.json", "ann", "bob")
    verifier = run.verifier(registry)
    uploads = []
    for (name, t) in [("ann", 30), ("bob", 10), ("bob", 20)]:
        wid, key = workers[name]
        assignment, signed = run.assign(registry, wid)
        # Version 0 while the run is at 5: dropped as stale before any scoring, but in the order verified.
        data = signed_bytes(run.batch(wid, assignment, signed, run.honest(assignment), version=0), key)
        store.write_bytes(rollout_key(wid, assignment.assignment_id), data)
        _stamp(store, rollout_key(wid, assignment.assignment_id), t)
        uploads.append((t, wid, assignment.assignment_id, data))
    inbox = RolloutInbox(store, verifier, tmp_path / "inbox.json")
    decisions = inbox.poll(lambda: 5)
    assert [(d.worker_id, d.batch_id, d.batch_reason) for d in decisions] == [
        (wid, batch, "stale") for _, wid, batch, _ in sorted(uploads)]
    assert not any(store.list(f"rollouts/{wid}") for wid, _ in workers.values())  # processed, so deleted
    assert inbox.poll(lambda: 5) == []
    # A restart remembers the answered assignments: the same batch uploaded again (a replayed grant) is a duplicate,
    # not counted; and it is deleted again.
    _, wid, batch, data = uploads[0]
    store.write_bytes(rollout_key(wid, batch), data)
    again = RolloutInbox(store, run.verifier(registry), tmp_path / "inbox.json")
    assert [d.batch_reason for d in again.poll(lambda: 5)] == ["duplicate"]
    assert not store.list(f"rollouts/{wid}") and registry.summary()[wid]["batches_dropped"] == 2


def test_what_a_worker_uploads_under_its_own_prefix_counts_against_it(run, tmp_path):
    """Uploads go by grant to the uploader's own prefix only, so garbage or another worker's name found there is
    the uploader's doing; a forged batch under the named worker's own prefix still never counts against it."""
    store = Store(str(tmp_path / "store"))
    registry, workers = run.registry(tmp_path / "workers.json", "ann", "eve")
    (aid, _), (eid, ekey) = workers["ann"], workers["eve"]
    assignment, signed = run.assign(registry, aid)
    claiming_ann = signed_bytes(run.batch(aid, assignment, signed, []), ekey)
    store.write_bytes(rollout_key(eid, "1"), b"not a batch")
    store.write_bytes(rollout_key(eid, "2"), claiming_ann)
    store.write_bytes(rollout_key(aid, "3"), claiming_ann)
    for t, key in enumerate((rollout_key(eid, "1"), rollout_key(eid, "2"), rollout_key(aid, "3"))):
        _stamp(store, key, t)
    decisions = RolloutInbox(store, run.verifier(registry)).poll(lambda: 5)
    assert [(d.worker_id, d.batch_reason) for d in decisions] == [
        (eid, "malformed"), (eid, "misplaced"), (aid, "bad-signature")]
    summary = registry.summary()
    assert summary[eid]["batches_rejected"] == 2 and summary[eid]["reasons"] == {"malformed": 1, "misplaced": 1}
    assert summary[aid]["batches_rejected"] == 0 and summary[aid]["reasons"] == {}


def test_nothing_in_the_store_makes_the_intake_raise(run, tmp_path):
    """Issue 30: a worker id `.` wrote a file where the intake expects a folder and every poll raised, after each
    restart too. Ids are bound to keys now (no `.`), and whatever is found, the intake carries on and blames
    only the worker whose prefix held it."""
    store = Store(str(tmp_path / "store"))
    registry, workers = run.registry(tmp_path / "workers.json", "eve")
    eid, _ = workers["eve"]
    store.write_bytes("rollouts/stray.msgpack", b"a file where folders are")
    store.write_bytes("rollouts/./other.msgpack", b"x")
    store.write_bytes("rollouts/unregistered/x.msgpack", b"x")
    store.write_bytes(rollout_key(eid, "big"), b"x" * 2048)  # over this inbox's limit: refused unread
    store.write_bytes(f"rollouts/{eid}/.part.tmp-1", b"x")  # a local write in progress: not a batch yet
    verifier = run.verifier(registry)
    verifier.verify = lambda *a, **k: 1 / 0  # whatever an upload makes the checks do
    store.write_bytes(rollout_key(eid, "boom"), b"y")
    inbox = RolloutInbox(store, verifier, tmp_path / "inbox.json", max_bytes=1024)
    decisions = inbox.poll(lambda: 5)
    assert sorted(d.batch_reason for d in decisions) == ["malformed", "malformed"]
    assert registry.summary()[eid]["reasons"] == {"malformed": 2}
    assert inbox.poll(lambda: 5) == []
    assert store.exists("rollouts/unregistered/x.msgpack")  # not a worker's prefix: left alone, never read


def test_an_assignment_left_unanswered_past_its_time_counts_as_failures(run, tmp_path):
    store = Store(str(tmp_path / "store"))
    registry, workers = run.registry(tmp_path / "workers.json", "shopper")
    wid, key = workers["shopper"]
    verifier = run.verifier(registry)
    kept, signed = run.assign(registry, wid)  # uploaded late but within the grace: not abandoned
    dropped, _ = run.assign(registry, wid)  # never answered: drawn, sampled, not liked
    for assignment in (kept, dropped):
        registry.workers[wid].assignments[assignment.assignment_id][0] = time.time() - 30
    store.write_bytes(rollout_key(wid, kept.assignment_id),
                      signed_bytes(run.batch(wid, kept, signed, run.honest(kept)), key))
    decisions = RolloutInbox(store, verifier, grace_s=10).poll(lambda: 1)
    assert sorted((d.batch_id, d.batch_reason) for d in decisions) == sorted(
        [(kept.assignment_id, None), (dropped.assignment_id, "abandoned")])
    assert registry.summary()[wid]["samples_rejected"] == 8 and not registry.workers[wid].assignments


def test_dropping_disliked_assignments_by_claiming_an_old_version_is_counted(run, tmp_path):
    """Red team, issue 30: a batch claiming a weight version older than its assignment was issued at (here -5,
    with nothing sampled) was dropped as `stale`, not counted and never abandoned: a worker could answer every
    assignment it disliked that way and report only the groups it picked (best-of-N). It counts in full now."""
    store = Store(str(tmp_path / "store"))
    registry, workers = run.registry(tmp_path / "workers.json", "shopper")
    wid, key = workers["shopper"]
    inbox = RolloutInbox(store, run.verifier(registry), grace_s=0)  # no ban yet: count every drop

    def draw(liked: bool) -> None:
        assignment, signed = run.assign(registry, wid, version=1)
        batch = (run.batch(wid, assignment, signed, run.honest(assignment)) if liked
                 else run.batch(wid, assignment, signed, [], version=-5))  # nothing sampled, "from version -5"
        store.write_bytes(rollout_key(wid, assignment.assignment_id), signed_bytes(batch, key))

    draw(liked=True)  # the one batch it likes: honest, accepted
    dropped = 11
    for _ in range(dropped):
        draw(liked=False)
    decisions = inbox.poll(lambda: 1)
    for entry in registry.workers[wid].assignments.values():  # whatever is still open has long expired
        entry[0] = time.time() - 3600
    decisions += inbox.poll(lambda: 1)
    assert sum(len(d.accepted) for d in decisions) == 8
    summary = registry.summary()[wid]
    assert summary["samples_rejected"] == 8 * dropped and summary["reasons"] == {"wrong-version": dropped}, summary
    assert summary["batches_dropped"] == 0 and summary["failure_rate"] > VerifyConfig().ban_failure_rate
    # Under the run's default ban rule (16 samples, 20 %), the next such drop bans it.
    inbox.verifier = run.verifier(registry, ban_min_samples=VerifyConfig().ban_min_samples)
    draw(liked=False)
    inbox.poll(lambda: 1)
    assert registry.workers[wid].banned
