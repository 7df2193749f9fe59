"""Where broadcast versions are kept: a local directory or any fsspec URL (s3:// through s3fs).

Layout under the store root: `step_<N>/shards/<index>` and `step_<N>/manifest.json`. Shards are
written first and the manifest last, so a version with a manifest is complete; and readers
verify every shard anyway, so a half-written shard is a detected error, never a loaded one.
"""

from __future__ import annotations

import os
import re
from typing import Annotated

import fsspec
from pydantic import Field
from pydantic_config import BaseConfig

from composer_prime.broadcast.manifest import MANIFEST_FILE
from composer_prime.errors import UserError
from composer_prime.utils.fs import atomic_write_bytes

_STEP = re.compile(r"^step_(\d+)$")


class StoreConfig(BaseConfig):
    """An object store or directory; credentials come from the environment (per role: infra/README.md)."""

    url: Annotated[str, Field(description="Local directory, file://, or s3://bucket/prefix.")]
    endpoint_url: Annotated[
        str | None, Field(description="S3 endpoint of a non-AWS server (seaweedfs, minio), e.g. http://127.0.0.1:8333.")
    ] = None
    role: Annotated[
        str | None,
        Field(pattern=r"^[A-Za-z][A-Za-z0-9_]*$",
              description="The run role this process uses the store as (orchestrator, coordinator, publisher, site_b ...): "
                          "its key comes from <ROLE>_ACCESS_KEY_ID and <ROLE>_SECRET_ACCESS_KEY; None: AWS_ACCESS_KEY_ID "
                          "and AWS_SECRET_ACCESS_KEY."),
    ] = None


def role_credentials(role: str) -> tuple[str, str]:
    """(access key, secret) of `role` from its environment variables."""
    names = [f"{role.upper()}_ACCESS_KEY_ID", f"{role.upper()}_SECRET_ACCESS_KEY"]
    missing = [name for name in names if not os.environ.get(name)]
    if missing:
        raise UserError(f"store role {role!r} needs {' and '.join(missing)} in the environment")
    return os.environ[names[0]], os.environ[names[1]]


def storage_options(config: StoreConfig) -> dict:
    if not config.url.startswith("s3://"):
        return {}
    options = {"client_kwargs": {"endpoint_url": config.endpoint_url}} if config.endpoint_url else {}
    if config.role is not None:
        options["key"], options["secret"] = role_credentials(config.role)
    return options


class Store:
    def __init__(self, url: str, endpoint_url: str | None = None, role: str | None = None, **options):
        config = StoreConfig(url=url, endpoint_url=endpoint_url, role=role)
        self.url = url
        self.fs, self.root = fsspec.core.url_to_fs(url, **(storage_options(config) | options))
        self.local = "file" in (self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,))

    @classmethod
    def from_config(cls, config: StoreConfig) -> Store:
        return cls(config.url, config.endpoint_url, config.role)

    def path(self, rel: str) -> str:
        return f"{self.root.rstrip('/')}/{rel}"

    def write_bytes(self, rel: str, data: bytes) -> None:
        if self.local:
            atomic_write_bytes(self.path(rel), data)  # an object store PUT is atomic already
        else:
            self.fs.pipe_file(self.path(rel), data)

    def read_bytes(self, rel: str, start: int | None = None, end: int | None = None) -> bytes:
        return self.fs.cat_file(self.path(rel), start=start, end=end)

    def exists(self, rel: str) -> bool:
        return self.fs.exists(self.path(rel))

    def list(self, rel: str) -> list[str]:
        """Names directly under `rel` (empty when it does not exist)."""
        try:
            entries = self.fs.ls(self.path(rel).rstrip("/"), detail=False)
        except FileNotFoundError:
            return []
        return [e.rstrip("/").rsplit("/", 1)[-1] for e in entries]

    def list_modified(self, rel: str) -> list[tuple[str, float]]:
        """(name, modification time as a UNIX timestamp) of the files directly under `rel`."""
        try:
            entries = self.fs.ls(self.path(rel).rstrip("/"), detail=True)
        except FileNotFoundError:
            return []
        out = []
        for entry in entries:
            if entry.get("type") == "directory":
                continue
            stamp = entry.get("LastModified", entry.get("mtime", 0.0))  # s3fs: a datetime; local: seconds
            out.append((entry["name"].rstrip("/").rsplit("/", 1)[-1],
                        stamp.timestamp() if hasattr(stamp, "timestamp") else float(stamp)))
        return out

    def versions(self) -> list[int]:
        """Versions with a manifest (complete), ascending."""
        found = []
        self.fs.invalidate_cache()  # s3fs caches listings: a new version must show up on the next call
        for name in self.list(""):
            match = _STEP.match(name)
            if match and self.exists(f"{name}/{MANIFEST_FILE}"):
                found.append(int(match.group(1)))
        return sorted(found)

    def delete_version(self, version: int) -> None:
        # Manifest first: from then on readers no longer consider the version.
        if self.exists(manifest_key(version)):
            self.fs.rm_file(self.path(manifest_key(version)))
        if self.local:
            if self.exists(f"step_{version}"):
                self.fs.rm(self.path(f"step_{version}"), recursive=True)
            return
        # One DELETE per object: a role scoped to broadcasts/ may delete under it, while S3's bulk delete
        # (what a recursive rm sends) is authorised on the whole bucket.
        for path in self.fs.find(self.path(f"step_{version}")):
            self.fs.rm_file(path)


def manifest_key(version: int) -> str:
    return f"step_{version}/{MANIFEST_FILE}"


def shard_key(version: int, index: int) -> str:
    return f"step_{version}/shards/{index}"
