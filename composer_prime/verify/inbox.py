"""The orchestrator's intake of volunteer rollouts: verify every new batch in the object store.

Workers upload to `<store>/rollouts/<worker_id>/<batch_id>.msgpack`. `poll()` verifies each key it
has not processed yet (RolloutVerifier), in upload order, and returns the decisions; the accepted samples are what
the orchestrator may turn into training batches. Processed keys are remembered in a JSON file so a
restarted orchestrator neither re-counts nor re-trains a batch.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from composer_prime.store import Store
from composer_prime.utils.fs import atomic_write_bytes
from composer_prime.verify.verifier import Decision, RolloutVerifier


class RolloutInbox:
    def __init__(self, store: Store, verifier: RolloutVerifier, state_path: Path | None = None):
        self.store = store
        self.verifier = verifier
        self.state_path = Path(state_path) if state_path else None
        self.processed: set[str] = set()
        if self.state_path and self.state_path.is_file():
            self.processed = set(json.loads(self.state_path.read_text()))

    def poll(self, current_version: Callable[[], int], commit: bool = True) -> list[Decision]:
        """Verify every new batch against the newest version at the time it is verified (`current_version()`:
        a batch uploaded during a long poll may come from a version published after the poll began).
        With `commit=False` the processed keys are saved only by `commit()`, so a caller that first stores
        the accepted samples loses none to a crash in between."""
        self.store.fs.invalidate_cache()
        new = []
        for worker in self.store.list("rollouts"):
            for name, modified in self.store.list_modified(f"rollouts/{worker}"):
                key = f"rollouts/{worker}/{name}"
                if name.endswith(".msgpack") and key not in self.processed:
                    new.append((modified, name, key, worker))
        decisions = []
        # Upload order across workers, first come first verified. Object stores keep seconds only; within a
        # second the time-ordered batch ids workers choose (worker/main.py) keep the order.
        for _, _, key, worker in sorted(new):
            data = self.store.read_bytes(key)
            decisions.append(self.verifier.verify(data, current_version(), uploader=worker))
            self.processed.add(key)
        if decisions and commit:
            self.commit()
        return decisions

    def commit(self) -> None:
        if self.state_path:
            atomic_write_bytes(self.state_path, json.dumps(sorted(self.processed)).encode())
