"""The run's store roles and the least each may do, as seaweedfs S3 identity actions (infra/README.md).

Volunteer workers are not a role: they hold no credential and upload through grants the coordinator
presigns with its own (coordinator/grants.py). Every role may list the bucket (names only) because s3fs
looks up a missing key by listing its parent.

`python -m composer_prime.broadcast.store_roles DIR [--bucket run] [--sites b c]` writes fresh keys for
every role: `DIR/s3.json` (the store's `-s3.config`) and `DIR/<role>.env` (the two variables a process
of that role needs, StoreConfig.role), all readable by their owner only (infra/compose.yaml, infra/k8s).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
from pathlib import Path

ROLES: dict[str, tuple[str, ...]] = {
    # Publishes steps for remote sites; re-reads them to repair a crash between publish and upload.
    "orchestrator": ("Read:{bucket}/steps/*", "Write:{bucket}/steps/*"),
    # Verifies volunteers' batches and presigns their uploads (a presigned URL carries no more than this).
    "coordinator": ("Read:{bucket}/rollouts/*", "Write:{bucket}/rollouts/*"),
    # broadcast.watch: shards and signs weight versions, deletes old ones.
    "publisher": ("Read:{bucket}/broadcasts/*", "Write:{bucket}/broadcasts/*"),
    # Broadcast origin: serves the versions in the store.
    "origin": ("Read:{bucket}/broadcasts/*",),
    # A remote trainer site: its shard of every step (one identity per site: site_b, site_c ...).
    "site": ("Read:{bucket}/steps/*",),
}


def seaweedfs_actions(role: str, bucket: str) -> list[str]:
    """`role`'s actions on `bucket`; `site_<name>` is a site."""
    base = "site" if role.startswith("site_") else role
    return [action.format(bucket=bucket) for action in ROLES[base]] + [f"List:{bucket}"]


def new_credentials(roles: list[str] | tuple[str, ...]) -> dict[str, tuple[str, str]]:
    return {role: (f"{role}-{secrets.token_hex(4)}", secrets.token_hex(20)) for role in roles}


def seaweedfs_identities(bucket: str, credentials: dict[str, tuple[str, str]]) -> list[dict]:
    return [{"name": role, "credentials": [{"accessKey": key, "secretKey": secret}],
             "actions": seaweedfs_actions(role, bucket)} for role, (key, secret) in credentials.items()]


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def main() -> None:
    parser = argparse.ArgumentParser(description="Fresh store keys for every run role (seaweedfs identities).")
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--bucket", default="run")
    parser.add_argument("--sites", nargs="*", default=[], help="remote trainer sites, each its own identity (site_<name>)")
    args = parser.parse_args()
    roles = [role for role in ROLES if role != "site"] + [f"site_{name}" for name in args.sites]
    credentials = new_credentials(roles)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    _write_private(args.out_dir / "s3.json", json.dumps({"identities": seaweedfs_identities(args.bucket, credentials)}))
    for role, (key, secret) in credentials.items():
        _write_private(args.out_dir / f"{role}.env",
                       f"{role.upper()}_ACCESS_KEY_ID={key}\n{role.upper()}_SECRET_ACCESS_KEY={secret}\n")
    print(f"wrote {args.out_dir}/s3.json and {len(roles)} role files: {', '.join(roles)}")


if __name__ == "__main__":
    main()
