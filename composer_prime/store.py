"""A general object store: a local directory or any fsspec URL (s3:// through s3fs), keys relative to its root.

What goes where is each user's: weight versions (broadcast/manifest.py), orchestrator steps, DiLoCo
exchanges, volunteer uploads. A local write is atomic (rename); an object store PUT already is. `write_once` never replaces what is there.
"""

from __future__ import annotations

import errno
import os

import fsspec

from composer_prime.configs.shared import StoreConfig
from composer_prime.errors import UserError
from composer_prime.utils.fs import atomic_create_bytes, atomic_write_bytes


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

    def write_once(self, rel: str, data: bytes) -> None:
        """Write `rel` unless it exists: FileExistsError when it holds other bytes; the same bytes again is a no-op.

        Atomic on both back ends: a local link(2), which never replaces, and an S3 PUT (or multipart
        completion) with `If-None-Match: *`, which the server refuses once the key exists (AWS, seaweedfs).
        Other fsspec back ends are only as atomic as their `pipe_file(mode="create")`.
        """
        try:
            if self.local:
                atomic_create_bytes(self.path(rel), data)
            else:
                self.fs.pipe_file(self.path(rel), data, mode="create")
        except OSError as exc:
            # s3fs raises FileExistsError only when the server names the failed condition; seaweedfs does not (EINVAL).
            if not (isinstance(exc, FileExistsError) or exc.errno == errno.EINVAL) or not self.exists(rel):
                raise
            if self.read_bytes(rel, 0, len(data) + 1) != data:
                raise FileExistsError(f"{self.url}: {rel} was written before, with other bytes") from None

    def read_bytes(self, rel: str, start: int | None = None, end: int | None = None) -> bytes:
        return self.fs.cat_file(self.path(rel), start=start, end=end)

    def exists(self, rel: str) -> bool:
        return self.fs.exists(self.path(rel))

    def _ls(self, rel: str, detail: bool) -> list:
        try:
            return self.fs.ls(self.path(rel).rstrip("/"), detail=detail)
        except FileNotFoundError:
            return []

    def list(self, rel: str) -> list[str]:
        """Names directly under `rel` (empty when it does not exist)."""
        return [e.rstrip("/").rsplit("/", 1)[-1] for e in self._ls(rel, detail=False)]

    def list_modified(self, rel: str) -> list[tuple[str, float]]:
        """(name, modification time as a UNIX timestamp) of the files directly under `rel`."""
        out = []
        for entry in self._ls(rel, detail=True):
            if entry.get("type") == "directory":
                continue
            stamp = entry.get("LastModified", entry.get("mtime", 0.0))  # s3fs: a datetime; local: seconds
            out.append((entry["name"].rstrip("/").rsplit("/", 1)[-1],
                        stamp.timestamp() if hasattr(stamp, "timestamp") else float(stamp)))
        return out
