"""Where broadcast versions are kept: a local directory or any fsspec URL (s3:// through s3fs).

Layout under the store root: `step_<N>/shards/<index>` and `step_<N>/manifest.json`. Shards are
written first and the manifest last, so a version with a manifest is complete; and readers
verify every shard anyway, so a half-written shard is a detected error, never a loaded one.
"""

from __future__ import annotations

import re
from typing import Annotated

import fsspec
from pydantic import Field
from pydantic_config import BaseConfig

from composer_prime.broadcast.manifest import MANIFEST_FILE
from composer_prime.utils.fs import atomic_write_bytes

_STEP = re.compile(r"^step_(\d+)$")


class StoreConfig(BaseConfig):
    """An object store or directory; credentials come from the usual AWS environment variables."""

    url: Annotated[str, Field(description="Local directory, file://, or s3://bucket/prefix.")]
    endpoint_url: Annotated[
        str | None, Field(description="S3 endpoint of a non-AWS server (seaweedfs, minio), e.g. http://127.0.0.1:8333.")
    ] = None


def storage_options(config: StoreConfig) -> dict:
    if config.url.startswith("s3://") and config.endpoint_url:
        return {"client_kwargs": {"endpoint_url": config.endpoint_url}}
    return {}


class Store:
    def __init__(self, url: str, endpoint_url: str | None = None, **options):
        config = StoreConfig(url=url, endpoint_url=endpoint_url)
        self.url = url
        self.fs, self.root = fsspec.core.url_to_fs(url, **(storage_options(config) | options))
        self.local = "file" in (self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,))

    @classmethod
    def from_config(cls, config: StoreConfig) -> Store:
        return cls(config.url, config.endpoint_url)

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
            self.fs.rm(self.path(manifest_key(version)))
        if self.exists(f"step_{version}"):
            self.fs.rm(self.path(f"step_{version}"), recursive=True)


def manifest_key(version: int) -> str:
    return f"step_{version}/{MANIFEST_FILE}"


def shard_key(version: int, index: int) -> str:
    return f"step_{version}/shards/{index}"
