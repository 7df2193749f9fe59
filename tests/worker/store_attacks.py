"""A volunteer that turns on the run's store, for tests only (tests/worker/test_grants.py, tests/e2e).

It holds what any volunteer holds: a registered worker id, its own key, its assignments, the coordinator's URL
and the store's address; no store credential. `attack_store` tries every way it has to write, overwrite or
delete what is not its own, and returns per attack how many attempts were made and how many the store
or the coordinator refused. The caller checks the store afterwards: a refusal must also have changed nothing.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import httpx
import msgspec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from composer_prime.coordinator.grants import UploadGrant, content_md5, grant_message
from composer_prime.coordinator.protocol import assign_message
from composer_prime.verify.rollout_batch import Assignment, SignedAssignment

REFUSED = {400, 401, 403, 404, 405, 411, 413, 422, 429}


@dataclass
class Target:
    run_url: str
    store_url: str
    """http://host:port/bucket: where the store's objects are addressed."""
    worker_id: str
    key: Ed25519PrivateKey
    victim_key: str
    """Another worker's batch in the store (rollouts/<victim>/<batch>.msgpack)."""
    shard_key: str
    """A weight shard (broadcasts/step_<N>/shards/<i>)."""
    step: int
    """A step number the orchestrator has not published yet."""
    grant_ttl_s: float
    max_bytes: int


def _with_path(url: str, store_url: str, key: str) -> str:
    """`url` (a presigned URL) pointed at another key: same signature and query."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"{urlsplit(store_url).path}/{key}"))


def attack_store(target: Target) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = defaultdict(lambda: {"attempts": 0, "refused": 0})
    http = httpx.Client(timeout=30)

    def attempt(attack: str, response: httpx.Response) -> httpx.Response:
        counts[attack]["attempts"] += 1
        counts[attack]["refused"] += response.status_code in REFUSED
        return response

    def grant(data: bytes, batch_id: str, worker_id: str | None = None) -> httpx.Response:
        """A grant request signed with this worker's key, for any batch id and claiming any worker."""
        claimed, md5, now = worker_id or target.worker_id, content_md5(data), time.time()
        signature = target.key.sign(grant_message(claimed, batch_id, len(data), md5, now)).hex()
        return http.post(f"{target.run_url}/grant", json={"worker_id": claimed, "batch_id": batch_id, "size": len(data),
                                                           "md5": md5, "time": now, "signature": signature})

    now = time.time()
    assigned = http.post(f"{target.run_url}/assign", json={
        "worker_id": target.worker_id, "time": now, "signature": target.key.sign(assign_message(target.worker_id, now)).hex()})
    assigned.raise_for_status()
    # Its one batch: every grant below is for it (a worker needs no check of its own assignment's signature).
    own_batch = msgspec.msgpack.decode(msgspec.msgpack.decode(assigned.content, type=SignedAssignment).payload,
                                       type=Assignment).assignment_id

    def own_grant(data: bytes) -> UploadGrant:
        response = grant(data, own_batch)
        response.raise_for_status()  # a grant for its own batch is what every volunteer gets
        return UploadGrant.model_validate(response.json())

    store = target.store_url
    body = b"a batch of this worker's own"
    try:
        # A forged step and its COMPLETE marker, without credentials and through its own grant.
        forged = (f"steps/step_{target.step}/rank_0.msgpack", f"steps/step_{target.step}/COMPLETE")
        for key in forged:
            attempt("forged step + marker", http.put(f"{store}/{key}", content=body))
            mine = own_grant(body)
            attempt("forged step + marker", http.put(_with_path(mine.url, store, key), content=body, headers=mine.headers))

        # Another worker's batch: a grant in its name, its key through this worker's grant, a plain PUT.
        victim_worker, victim_batch = target.victim_key.split("/")[1:]
        attempt("overwrite another worker's batch", grant(body, victim_batch.removesuffix(".msgpack"), victim_worker))
        mine = own_grant(body)
        attempt("overwrite another worker's batch",
                http.put(_with_path(mine.url, store, target.victim_key), content=body, headers=mine.headers))
        attempt("overwrite another worker's batch", http.put(f"{store}/{target.victim_key}", content=body))

        # A weight shard: a plain DELETE, and DELETEs carrying this worker's grant.
        attempt("delete a weight shard", http.delete(f"{store}/{target.shard_key}"))
        mine = own_grant(body)
        attempt("delete a weight shard", http.delete(_with_path(mine.url, store, target.shard_key)))
        attempt("delete a weight shard", http.delete(mine.url))  # the grant is for one PUT, not a DELETE

        # Outside its prefix: a batch id that climbs out, its grant pointed at other folders.
        attempt("upload outside its prefix", grant(body, "../../broadcasts/x"))
        mine = own_grant(body)
        for key in (f"rollouts/{target.worker_id}-2/x.msgpack", "broadcasts/step_999/manifest.json", "x.msgpack"):
            attempt("upload outside its prefix", http.put(_with_path(mine.url, store, key), content=body,
                                                          headers=mine.headers))

        # Over the size limit: a grant for too much, and more bytes than granted.
        attempt("exceed its size limit", grant(b"x" * (target.max_bytes + 1), own_batch))
        mine = own_grant(body)
        attempt("exceed its size limit", http.put(mine.url, content=body + b"x" * 4096, headers=mine.headers))
        attempt("exceed its size limit", http.put(mine.url, content=body[:-1] + b"!", headers=mine.headers))

        # An expired grant replayed (it worked once, within its time).
        mine = own_grant(body)
        http.put(mine.url, content=body, headers=mine.headers).raise_for_status()
        time.sleep(max(0.0, mine.expires_at - time.time()) + 1.5)
        attempt("replay an expired grant", http.put(mine.url, content=body, headers=mine.headers))
    finally:
        http.close()
    return dict(counts)
