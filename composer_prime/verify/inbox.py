"""The orchestrator's intake of volunteer rollouts: verify every new batch in the object store.

Workers upload to `<store>/rollouts/<worker_id>/<batch_id>.msgpack`. `poll()` verifies each key it
has not processed yet (RolloutVerifier), in upload order, and returns the decisions; the accepted samples
are what the orchestrator may turn into training batches. What a worker's prefix holds is that worker's
doing: an object over the size limit is refused unread, and anything the verifier cannot take apart
counts against the uploader; nothing in an upload can make `poll` raise. Folders that are no registered
worker's id are left alone.

`commit()` saves which keys were processed and which assignments were answered (so a restarted
orchestrator neither re-counts nor re-trains a batch), then deletes the processed objects from the store.
Each poll also counts, against its worker, every assignment that expired more than `grace_s` ago with
no batch for it in the store (`abandoned`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path

from composer_prime.store import Store
from composer_prime.utils.fs import atomic_write_bytes
from composer_prime.verify.verifier import Decision, RolloutVerifier

logger = logging.getLogger(__name__)


class RolloutInbox:
    def __init__(self, store: Store, verifier: RolloutVerifier, state_path: Path | None = None,
                 max_bytes: int = 64 * 2**20, grace_s: float = 600.0):
        """`max_bytes`: the largest upload a grant allows; `grace_s`: how long after an assignment's expiry its
        upload may still land (the grant's lifetime)."""
        self.store, self.verifier, self.max_bytes, self.grace_s = store, verifier, max_bytes, grace_s
        self.state_path = Path(state_path) if state_path else None
        self.processed: set[str] = set()
        if self.state_path and self.state_path.is_file():
            state = json.loads(self.state_path.read_text())
            if isinstance(state, list):  # written before assignments: processed keys only
                state = {"processed": state, "answered": {}}
            self.processed = set(state["processed"])
            verifier.answered = {a: (digest, expires) for a, (digest, expires) in state["answered"].items()}

    def poll(self, current_version: Callable[[], int], commit: bool = True) -> list[Decision]:
        """Verify every new batch against the newest version at the time it is verified (`current_version()`:
        a batch uploaded during a long poll may come from a version published after the poll began).
        With `commit=False` the processed keys are saved (and deleted) only by `commit()`, so a caller that
        first stores the accepted samples loses none to a crash in between."""
        self.store.fs.invalidate_cache()
        registry = self.verifier.registry
        new, listed, swept = [], set(), []
        for worker in self.store.list("rollouts"):
            if worker not in registry.workers:
                continue  # no grant ever wrote there: not a worker's prefix
            try:
                files = self.store.list_files(f"rollouts/{worker}")
            except Exception as exc:  # noqa: BLE001 - a listing that fails now is tried again next poll
                logger.warning("cannot list rollouts/%s: %s", worker, exc)
                continue
            swept.append(worker)
            for name, modified, size in files:
                key = f"rollouts/{worker}/{name}"
                listed.add(key)
                if name.endswith(".msgpack") and key not in self.processed:  # not a local write still in progress
                    new.append((modified, name, key, worker, size))
        decisions = []
        # Upload order across workers, first come first verified. Object stores keep seconds only; within a
        # second the batch ids decide.
        for _, _, key, worker, size in sorted(new):
            if (decision := self._verify(key, worker, size, current_version)) is not None:
                decisions.append(decision)
                self.processed.add(key)
        decisions += self._sweep_abandoned(swept, listed)
        if decisions and commit:
            self.commit()
        return decisions

    def _verify(self, key: str, worker: str, size: int, current_version: Callable[[], int]) -> Decision | None:
        """The decision on one upload; None when it could not be read this time (tried again next poll)."""
        if size > self.max_bytes:
            return self.verifier.refuse_upload(worker, "malformed")  # no grant allows it: read nothing
        try:
            data = self.store.read_bytes(key)
        except FileNotFoundError:
            return None
        except Exception as exc:  # noqa: BLE001 - a store error now; the object is read again next poll
            logger.warning("cannot read %s: %s", key, exc)
            return None
        try:
            return self.verifier.verify(data, current_version(), uploader=worker)
        except Exception:  # noqa: BLE001 - whatever an upload makes the checks do, it is the uploader's doing
            logger.exception("verifying %s failed; counted against %s", key, worker)
            return self.verifier.refuse_upload(worker, "malformed")

    def _sweep_abandoned(self, workers: list[str], listed: set[str]) -> list[Decision]:
        now, decisions = time.time(), []
        for worker in workers:
            held = self.verifier.registry.workers[worker].assignments
            for assignment_id, (expires_at, samples, _) in list(held.items()):
                if expires_at + self.grace_s < now and f"rollouts/{worker}/{assignment_id}.msgpack" not in listed:
                    decisions.append(self.verifier.abandon(worker, assignment_id, int(samples)))
        return decisions

    def commit(self) -> None:
        """Save what was processed, then delete it from the store and save again without what is gone (a crash in
        between only deletes it later)."""
        self.verifier.forget_answered()
        self._save()
        deleted = set()
        for key in sorted(self.processed):
            try:
                self.store.delete(key)
            except FileNotFoundError:
                pass
            except Exception as exc:  # noqa: BLE001 - kept in `processed`: never verified twice, deleted next time
                logger.warning("cannot delete processed %s: %s", key, exc)
                continue
            deleted.add(key)
        if deleted:
            self.processed -= deleted
            self._save()

    def _save(self) -> None:
        if self.state_path:
            state = {"processed": sorted(self.processed),
                     "answered": {a: list(held) for a, held in self.verifier.answered.items()}}
            atomic_write_bytes(self.state_path, json.dumps(state).encode())
