"""The task row (one line of tasks.jsonl) and how a row becomes a fresh workspace."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from feature_deletion.sandbox import cache_dir, ensure_runner

SCHEMA_VERSION = 2  # 2: `checks` (the verdict's programs and answers) replaced layer 4's `calls`
# Never shipped to the agent: history, caches, bytecode, build outputs, installed metadata.
STRIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".nox",
              ".eggs", "build", "dist", ".hypothesis", ".pyre", ".pytype", ".venv", "venv", ".dmypy.json", "htmlcov"}
STRIP_SUFFIXES = (".pyc", ".pyo", ".egg-info", ".dist-info", ".orig", ".rej", ".coverage")
# Tests, their fixtures and the runner's configuration: never the agent's to change, never in a replay copy.
TEST_FILE = re.compile(r"(^|/)(conftest\.py|test_[^/]*\.py|[^/]*_test\.py|pytest\.ini|tox\.ini|setup\.cfg|pyproject\.toml)$")
TEST_DIRS = frozenset({"tests", "test", "testing"})
UNSOUND = "task left out, its checks cannot tell a forger from an implementation:"


def is_test_path(rel: str) -> bool:
    """A test file, runner configuration, or anything under a tests directory."""
    return bool(TEST_FILE.search(rel)) or any(part in TEST_DIRS for part in Path(rel).parts[:-1])


class Source(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["pypi", "local"]
    spec: str  # "name==version" or the local path given to the builder
    sha256: str  # of the archive that was fetched (the sdist) or made (local repo)


class Target(BaseModel):
    model_config = ConfigDict(extra="forbid")
    file: str
    qualname: str
    kind: Literal["function", "method", "class"]
    signature: str


class Deletion(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mode: Literal["body", "definition"]
    size: Literal["small", "medium", "large"]
    targets: list[Target]
    lines_removed: int


class CheckProgram(BaseModel):
    """One program of the verdict (feature_deletion.behaviour): its steps enter the replay sandbox, the rest never."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    steps: list[dict]  # what the replay driver runs (_sandbox_files/fd_calls.py)
    expect: list[list]  # the gold code's observation of each step
    discriminating: list[bool]  # the untouched task's observation differs from gold's
    heldout: list[bool]  # an input no test uses, whose answer differs from the visible program's


class Checks(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    version: int = 1
    programs: list[CheckProgram]
    # {"initial": {name: digest}, "final": {...}, "objects": {...}}: the package's module-level state on gold, after
    # its import and after every program ran (_sandbox_files/fd_calls.package_state), the public attributes of the
    # objects each program made (fd_calls.public_attributes), and per program which readings of the objects its steps
    # were made on are equal ("<program>.(states)": [[reading, class], ...], behaviour.state_classes) and, where the
    # rebuild keeps gold's construction, their names ("<program>.(names)": [[reading, digest], ...] where they
    # change); compared name by name, gold's names only
    state: dict[str, dict[str, str | list[list[str | int]]]] | None = None

    @property
    def steps(self) -> int:
        return sum(len(p.steps) for p in self.programs)

    @property
    def discriminating(self) -> int:
        return sum(sum(p.discriminating) for p in self.programs)

    @property
    def heldout(self) -> int:
        return sum(sum(p.heldout) for p in self.programs)


class TaskRow(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    schema_version: int = SCHEMA_VERSION
    id: str
    package: str
    version: str
    source: Source
    archive: str  # path of the base tree's archive, relative to the tasks file
    root: str  # directory inside the archive that holds the repository ("" = archive root)
    import_root: str = ""  # directory (relative to the repo) put on PYTHONPATH
    src_paths: list[str]  # files/dirs the agent's changes may touch; everything else is reset at grading
    deletion: Deletion
    broken_files: dict[str, str | None]  # file -> content after the deletion (None: file removed)
    gold_files: dict[str, str]  # file -> original content
    f2p: list[str] = Field(min_length=1)
    p2p: list[str] = Field(min_length=1)
    prompt: str
    seed: int = 0
    checks: Checks | None = None  # the verdict's programs and gold's answers (feature_deletion.behaviour); never in a sandbox
    checks_status: str = ""  # what the checks hold, or why the task has none
    test_requirements: list[str] = []  # installed into the test runner beside pytest (never the package itself)
    # Test files written for the package by the task set's authors ({file name: text}), never in the agent's workspace
    # or any sandbox that runs agent code: the builder records them on the gold code as held-out programs, for what
    # the package's own tests never combine (feature_deletion.behaviour.record_programs).
    heldout_tests: dict[str, str] = {}

    @property
    def tests(self) -> list[str]:
        return sorted(set(self.f2p) | set(self.p2p))


def runner_for(row: TaskRow) -> Path:
    """The test-runner venv of a task: pytest, coverage and the package's test requirements."""
    return ensure_runner(tuple(row.test_requirements))


def load_rows(path: str | Path, upgrade: bool = False) -> tuple[list[TaskRow], list[str]]:
    """Rows of a tasks JSONL and one message per malformed line (skipped, never fatal). Rows of an older schema
    are skipped too, unless `upgrade`: then a schema-1 row loads without checks (`fd-validate --record-checks`
    builds them). A row whose checks cannot tell a forger from an implementation (`behaviour.unsound`) leaves the
    task set here, whatever file it comes from, with its reason among the problems (`fd-validate --prune` drops
    it from the file), unless `upgrade`: its checks are about to be built again."""
    from feature_deletion.behaviour import unsound

    rows, problems = [], []
    with open_text(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                if upgrade and isinstance(data, dict) and data.get("schema_version") == 1:
                    data = {k: v for k, v in data.items() if k not in ("calls", "calls_status")} | {
                        "schema_version": SCHEMA_VERSION}
                if isinstance(data, dict) and data.get("schema_version", SCHEMA_VERSION) != SCHEMA_VERSION:
                    problems.append(f"{path}:{number}: task row of schema {data['schema_version']} skipped "
                                    f"(this version reads {SCHEMA_VERSION}): rebuild it with fd-build")
                    continue
                row = TaskRow.model_validate(data)
                why = unsound(row.checks) if row.checks is not None and not upgrade else None
                if why:
                    problems.append(f"{path}:{number}: {UNSOUND} {row.id}: {why}")
                    continue
                rows.append(row)
            except (json.JSONDecodeError, ValidationError) as exc:
                first = str(exc).splitlines()
                problems.append(f"{path}:{number}: malformed task row skipped: {' '.join(first[:3])[:300]}")
    return rows, problems


def write_rows(path: str | Path, rows: list[TaskRow]) -> None:
    """A tasks JSONL (xz when the name ends with .xz), renamed into place when complete."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp" + path.suffix)
    with open_text(tmp, "w") as f:
        for row in rows:
            f.write(row.model_dump_json() + "\n")
    tmp.replace(path)


def open_text(path: str | Path, mode: str = "r"):
    """A tasks file, xz-compressed when its name ends with .xz."""
    if str(path).endswith(".xz"):
        import lzma

        return lzma.open(path, mode + "t", preset=9 | lzma.PRESET_EXTREME if "w" in mode else None)
    return open(path, mode)


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def is_stripped(name: str) -> bool:
    return name in STRIP_DIRS or name.endswith(STRIP_SUFFIXES)


def _ignore(directory, names):
    return [n for n in names if is_stripped(n)]


def extract_base(archive: Path, sha256: str) -> Path:
    """The archive unpacked once into the host cache (never reachable from a sandbox)."""
    dest = cache_dir() / "trees" / sha256
    if (dest / ".complete").exists():
        return dest / "tree"
    actual = sha256_file(archive)
    if actual != sha256:
        raise ValueError(f"{archive}: sha256 {actual} does not match the recorded {sha256}")
    tmp = Path(tempfile.mkdtemp(prefix="tree.", dir=cache_dir()))
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(tmp / "tree")
    else:
        with tarfile.open(archive) as tf:
            tf.extractall(tmp / "tree", filter="data")
    (tmp / ".complete").touch()
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        tmp.rename(dest)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest / "tree"


def strip_tree(path: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(path, topdown=True):
        for name in list(dirnames):
            if is_stripped(name):
                shutil.rmtree(os.path.join(dirpath, name), ignore_errors=True)
                dirnames.remove(name)
        for name in filenames:
            if is_stripped(name):
                os.unlink(os.path.join(dirpath, name))


GIT_ENV = {"GIT_AUTHOR_NAME": "feature-deletion", "GIT_AUTHOR_EMAIL": "fd@localhost",
           "GIT_COMMITTER_NAME": "feature-deletion", "GIT_COMMITTER_EMAIL": "fd@localhost",
           "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
           "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"}


def git_single_commit(path: Path) -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")} | GIT_ENV
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "task", "--no-gpg-sign"]):
        subprocess.run(["git", *args], cwd=path, env=env, check=True, capture_output=True)


def apply_files(dest: Path, files: dict[str, str | bytes | None]) -> None:
    """Write each file (text or bytes) under `dest`; None deletes it."""
    for rel, content in files.items():
        target = dest / rel
        if content is None:
            target.unlink(missing_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content)


def materialize(row: TaskRow, tasks_dir: Path, dest: Path, state: Literal["broken", "gold"] = "broken",
                git: bool = True) -> Path:
    """A fresh copy of the task's repository in `dest` (which must not exist)."""
    base = extract_base(Path(tasks_dir) / row.archive, row.source.sha256)
    shutil.copytree(base / row.root if row.root else base, dest, ignore=_ignore, symlinks=True)
    apply_files(dest, row.broken_files)
    if state == "gold":
        apply_files(dest, dict(row.gold_files))
    strip_tree(dest)
    if git:
        git_single_commit(dest)
    return dest
