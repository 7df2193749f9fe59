"""The task builder: source -> baseline tests with per-test coverage -> candidate deletions -> validated tasks."""

from __future__ import annotations

import ast
import hashlib
import io
import json
import logging
import os
import random
import re
import shutil
import tarfile
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field

from feature_deletion.builder.deletions import (
    Definition, definitions, delete_body, delete_class_bodies, delete_definition, drop_references, size_of,
)
from feature_deletion.grading import grade, run_pytest
from feature_deletion.sandbox import Limits, Sandbox, ensure_runner
from feature_deletion.task import (
    Deletion, Source, Target, TaskRow, extract_base, is_stripped, sha256_file, strip_tree, write_rows,
)
from feature_deletion.validate import heldout_tests, with_checks

logger = logging.getLogger("fd-build")
BUILDER_VERSION = "2"  # 2: every kept task has checks (the verdict), or is rejected with the reason
PYPI_SIMPLE = "https://pypi.org/simple/{name}/"


class PackageSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    source: str  # "pypi" or "local"
    spec: str  # name==version, or a path (relative to the config file)
    name: str | None = None  # package name for a local repo (default: the directory name)
    tests: list[str] = []  # test paths to run (default: discovered test files)
    src_paths: list[str] = []  # editable source paths (default: discovered top-level packages/modules)
    import_root: str | None = None
    ignore_tests: list[str] = []  # node id prefixes to leave out (e.g. network tests)
    # Node id prefixes of tests that time the wall clock (a 0.1 s limit, a sleeping thread): never pass-to-pass,
    # since a loaded machine fails them at random and one P2P failure zeroes a right rebuild; still fail-to-pass
    # where they test the deleted feature.
    timed_tests: list[str] = []
    # The tests' own requirements (pip specs or paths of wheels), installed into the runner venv.
    test_requirements: list[str] = []
    # A directory of test files written for the package (test_*.py, relative to the config's working directory):
    # held-out tests, kept in each task row and recorded on the gold code, never in the agent's workspace.
    heldout_tests: str | None = None


class BuildConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    output: str = "environments/feature_deletion/feature_deletion/data/tasks.jsonl.xz"
    stats: str | None = None  # default: <output stem>.stats.json
    seed: int = 0
    max_tasks_per_package: int = Field(25, ge=1)
    max_candidates_per_package: int = Field(80, ge=1)
    modes: list[str] = ["body", "definition", "class_bodies"]
    test_timeout_s: float = 120.0
    # Where P2P tests come from. "test_files" (default): the passing tests of the test files that
    # exercise the deleted code, so grading runs few tests. "whole_suite": every test that passes at
    # baseline and still passes after the deletion, so a fix that breaks the package elsewhere scores 0.
    pass_to_pass: Literal["test_files", "whole_suite"] = "test_files"
    # False: keep every candidate with F2P and P2P tests without checks, for `fd-validate TASKS --record-checks
    # --jobs N` to build them in parallel and report each one it drops with its reason (such a file is not gradable
    # until then: a row without checks is reward 0).
    checks: bool = True
    packages: list[PackageSpec]


class SkipPackage(Exception):
    """A package the build cannot use; the message says why."""


@dataclass
class PackageStats:
    spec: str
    status: str = "ok"
    message: str = ""
    baseline_passed: int = 0
    candidates_found: int = 0
    tried: int = 0
    kept: int = 0
    rejected: Counter = field(default_factory=Counter)
    rejected_tasks: dict[str, str] = field(default_factory=dict)  # task id -> why it was not kept
    dropped_test_files: dict[str, str] = field(default_factory=dict)  # file -> why it failed to import at baseline
    seconds: float = 0.0

    def to_dict(self):
        return {**self.__dict__, "rejected": dict(sorted(self.rejected.items())),
                "rejected_tasks": dict(sorted(self.rejected_tasks.items())),
                "dropped_test_files": dict(sorted(self.dropped_test_files.items()))}


# ---------------------------------------------------------------- sources

def fetch_sdist(spec: str, dest_dir: Path) -> tuple[Path, str, str, str]:
    """Download `name==version`'s sdist once (reused when present with its hash); (path, sha256, name, version)."""
    m = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)\s*==\s*([A-Za-z0-9_.\-+!]+)\s*", spec)
    if not m:
        raise SkipPackage(f"{spec!r}: expected name==version")
    name, version = m.groups()
    dest_dir.mkdir(parents=True, exist_ok=True)
    for existing in dest_dir.glob(f"{name.replace('-', '_').lower()}-{version}.*"):
        if (meta := existing.with_suffix(existing.suffix + ".sha256")).exists():
            digest = meta.read_text().strip()
            if sha256_file(existing) == digest:
                return existing, digest, name, version
    try:
        resp = httpx.get(PYPI_SIMPLE.format(name=re.sub(r"[-_.]+", "-", name).lower()), timeout=30,
                         follow_redirects=True, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    except httpx.HTTPError as exc:
        raise SkipPackage(f"{spec}: PyPI unreachable: {exc}") from None
    if resp.status_code == 404:
        raise SkipPackage(f"{spec}: no such package on PyPI")
    resp.raise_for_status()
    index = resp.json()
    if version not in index.get("versions", []):
        raise SkipPackage(f"{spec}: PyPI has no version {version} of {name}")
    norm = re.sub(r"[-_.]+", "_", name).lower()
    sdists = [f for f in index["files"] if not f.get("yanked") and f["filename"].endswith((".tar.gz", ".zip"))
              and re.sub(r"[-_.]+", "_", f["filename"].lower()).startswith(f"{norm}_{version.lower()}".replace(".", "_"))
              and re.sub(r"[-_.]+", "_", f["filename"].lower()).removesuffix("_tar_gz").removesuffix("_zip")
              == f"{norm}_{version.lower()}".replace(".", "_").replace("-", "_")]
    if not sdists:
        raise SkipPackage(f"{spec}: PyPI has no source distribution for this version")
    url = {"url": sdists[0]["url"], "filename": sdists[0]["filename"], "digests": sdists[0]["hashes"]}
    data = httpx.get(url["url"], timeout=120, follow_redirects=True).content
    digest = hashlib.sha256(data).hexdigest()
    if digest != url["digests"]["sha256"]:
        raise SkipPackage(f"{spec}: downloaded sdist hash {digest} != PyPI's {url['digests']['sha256']}")
    suffix = ".tar.gz" if url["filename"].endswith(".tar.gz") else Path(url["filename"]).suffix
    path = dest_dir / f"{name.replace('-', '_').lower()}-{version}{suffix}"
    path.write_bytes(data)
    path.with_suffix(path.suffix + ".sha256").write_text(digest + "\n")
    return path, digest, name, version


def archive_local(repo: Path, name: str, dest_dir: Path) -> tuple[Path, str]:
    """A deterministic tar.gz of a local repository (no VCS, caches or bytecode)."""
    if not repo.is_dir():
        raise SkipPackage(f"{repo}: no such directory")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for dirpath, dirnames, filenames in os.walk(repo):
            dirnames[:] = sorted(d for d in dirnames if not is_stripped(d))
            for fname in sorted(filenames):
                if is_stripped(fname):
                    continue
                path = Path(dirpath) / fname
                if path.is_symlink() or not path.is_file():
                    continue
                info = tarfile.TarInfo(f"{name}/{path.relative_to(repo)}")
                data = path.read_bytes()
                info.size, info.mtime, info.mode = len(data), 0, 0o644
                tf.addfile(info, io.BytesIO(data))
    import gzip

    raw = gzip.compress(buf.getvalue(), mtime=0)
    dest_dir.mkdir(parents=True, exist_ok=True)
    path = dest_dir / f"{name}-local.tar.gz"
    path.write_bytes(raw)
    return path, hashlib.sha256(raw).hexdigest()


# ---------------------------------------------------------------- layout

def discover_layout(repo: Path, spec: PackageSpec) -> tuple[str, list[str], list[str]]:
    """(import_root, src_paths, test paths) of a repository."""
    import_root = spec.import_root if spec.import_root is not None else ("src" if (repo / "src").is_dir() else "")
    base = repo / import_root if import_root else repo
    tests = list(spec.tests)
    if not tests:
        for cand in ("tests", "test", "testing"):
            if (repo / cand).is_dir():
                tests.append(cand)
        if not tests:
            tests = sorted(str(p.relative_to(repo)) for p in repo.glob("test_*.py")) + \
                sorted(str(p.relative_to(repo)) for p in repo.glob("*_test.py"))
    src = list(spec.src_paths)
    if not src:
        skip = {"tests", "test", "testing", "docs", "doc", "examples", "benchmarks", "bench", "scripts", "tools"}
        for p in sorted(base.iterdir()):
            rel = str(p.relative_to(repo))
            if any(rel == t or rel.startswith(t + "/") for t in tests) or p.name in skip or p.name.startswith("."):
                continue
            if p.is_dir() and (p / "__init__.py").exists():
                src.append(rel)
            elif p.suffix == ".py" and p.name not in ("setup.py", "conftest.py", "noxfile.py", "tasks.py", "fabfile.py") \
                    and not p.name.startswith("test"):
                src.append(rel)
    if not tests:
        raise SkipPackage("no test files found (give `tests` in the config)")
    if not src:
        raise SkipPackage("no source package or module found (give `src_paths` in the config)")
    return import_root, src, tests


def source_files(repo: Path, src_paths: list[str]) -> list[str]:
    files = []
    for s in src_paths:
        p = repo / s
        if p.is_file() and p.suffix == ".py":
            files.append(s)
        elif p.is_dir():
            for f in sorted(p.rglob("*.py")):
                rel = str(f.relative_to(repo))
                if not any(is_stripped(part) for part in f.relative_to(repo).parts) and \
                        not re.search(r"(^|/)(test_[^/]*|conftest)\.py$|/tests?/", rel):
                    files.append(rel)
    return files


def collection_errors(outcomes: dict[str, str], output: str) -> dict[str, str]:
    """{test file: first line of its error} for every file pytest could not collect."""
    files = [t.split("::", 1)[1] for t, o in outcomes.items() if t.startswith("<collection>::") and o == "error"]
    lines = output.splitlines()
    reasons = {}
    for f in files:
        # pytest prints "___ ERROR collecting <file> ___", a traceback, then the error on an "E   " line.
        start = next((i for i, ln in enumerate(lines) if f"ERROR collecting {f} " in ln), len(lines))
        error = next((ln[1:].strip() for ln in lines[start:] if ln.startswith("E   ")), "")
        reasons[f] = error or "collection error"
    return reasons


# ---------------------------------------------------------------- coverage

def test_map(db: Path, workspace: str, passing: set[str]) -> dict[str, dict[int, set[str]]]:
    """{relative file: {line: passing tests that ran it}} from per-test coverage contexts."""
    import coverage

    data = coverage.CoverageData(basename=str(db))
    data.read()
    result: dict[str, dict[int, set[str]]] = {}
    for measured in data.measured_files():
        if not measured.startswith(workspace + "/"):
            continue
        rel = measured[len(workspace) + 1:]
        by_line = data.contexts_by_lineno(measured)
        result[rel] = {line: {c for c in ctxs if c in passing} for line, ctxs in by_line.items()}
    return result


# ---------------------------------------------------------------- building


@dataclass
class Candidate:
    mode: str  # body | definition | class_bodies
    definition: Definition
    tests: set[str]

    @property
    def key(self) -> str:
        return f"{self.mode}:{self.definition.file}:{self.definition.qualname}"


class Builder:
    def __init__(self, config: BuildConfig, base_dir: Path):
        self.config = config
        self.base_dir = base_dir
        self.output = (base_dir / config.output).resolve() if not Path(config.output).is_absolute() else Path(config.output)
        self.repos_dir = self.output.parent / "repos"
        self.runner: Path | None = None  # the package's runner, set per package (its test requirements)
        self.limits = Limits(wall_s=config.test_timeout_s)

    def build(self) -> tuple[list[TaskRow], dict]:
        rows: list[TaskRow] = []
        stats: dict = {"builder_version": BUILDER_VERSION, "seed": self.config.seed, "packages": []}
        for spec in self.config.packages:
            st = PackageStats(spec=f"{spec.source}:{spec.spec}")
            t0 = time.monotonic()
            try:
                rows += self.build_package(spec, st)
            except SkipPackage as exc:
                st.status, st.message = "skipped", str(exc)
                logger.warning("skipping %s: %s", st.spec, exc)
            except Exception as exc:  # noqa: BLE001 - one bad package never ends the build
                st.status, st.message = "error", f"{type(exc).__name__}: {exc}"
                logger.exception("package %s failed", st.spec)
            st.seconds = round(time.monotonic() - t0, 1)
            stats["packages"].append(st.to_dict())
            logger.info("%s: %s kept %d of %d tried %s", st.spec, st.status, st.kept, st.tried, dict(st.rejected))
        stats["tasks"] = len(rows)
        stats["packages_used"] = sum(1 for p in stats["packages"] if p["kept"])
        stats["packages_skipped"] = sum(1 for p in stats["packages"] if p["status"] != "ok")
        stats["candidates_tried"] = sum(p["tried"] for p in stats["packages"])
        rejected: Counter = Counter()
        for p in stats["packages"]:
            rejected.update(p["rejected"])
        stats["rejected"] = dict(sorted(rejected.items()))
        return rows, stats

    def write(self, rows: list[TaskRow], stats: dict) -> tuple[Path, Path]:
        self.output.parent.mkdir(parents=True, exist_ok=True)
        write_rows(self.output, rows)
        stats_path = Path(self.config.stats) if self.config.stats else self.output.parent / (self.output.name.split(".")[0] + ".stats.json")
        if not stats_path.is_absolute():
            stats_path = (self.base_dir / stats_path) if self.config.stats else stats_path
        stats_path.write_text(json.dumps(stats, indent=2) + "\n")
        return self.output, stats_path

    # -- one package
    def build_package(self, spec: PackageSpec, st: PackageStats) -> list[TaskRow]:
        if spec.source == "pypi":
            archive, digest, name, version = fetch_sdist(spec.spec, self.repos_dir)
            source = Source(kind="pypi", spec=spec.spec, sha256=digest)
        elif spec.source == "local":
            path = Path(spec.spec)
            path = path if path.is_absolute() else (self.base_dir / path)
            name = spec.name or path.resolve().name
            version = "local"
            archive, digest = archive_local(path, name, self.repos_dir)
            source = Source(kind="local", spec=spec.spec, sha256=digest)
        else:
            raise SkipPackage(f"unknown source {spec.source!r} (pypi or local)")
        self.runner = ensure_runner(tuple(spec.test_requirements))
        tree = extract_base(archive, digest)
        tops = [p for p in tree.iterdir()]
        root = tops[0].name if len(tops) == 1 and tops[0].is_dir() else ""
        repo = tree / root if root else tree
        import_root, src_paths, tests = discover_layout(repo, spec)
        rel_archive = os.path.relpath(archive, self.output.parent)
        proto = dict(package=name, version=version, source=source, archive=rel_archive, root=root,
                     import_root=import_root, src_paths=src_paths, seed=self.config.seed,
                     test_requirements=spec.test_requirements,
                     heldout_tests=heldout_tests(self.base_dir / spec.heldout_tests) if spec.heldout_tests else {})

        # Baseline: the untouched repository's tests, with per-test coverage.
        with tempfile.TemporaryDirectory(prefix="fd-build.") as tmp:
            work = Path(tmp) / "repo"
            shutil.copytree(repo, work, symlinks=True)
            strip_tree(work)
            out = Path(tmp) / "out"
            out.mkdir()
            sb = Sandbox(work, runner=self.runner, limits=self.limits, outdir=out)
            result, outcomes = run_pytest(sb, import_root, tests, coverage_source=src_paths)
            broken = collection_errors(outcomes, result.output)
            if broken:
                # A test file that cannot even be imported (a test requirement missing, say) is left out
                # with its reason, instead of aborting the whole suite's collection.
                st.dropped_test_files = broken
                tests = [*tests, *(f"--ignore={sb.workspace}/{f}" for f in broken)]
                result, outcomes = run_pytest(sb, import_root, tests, coverage_source=src_paths)
            if result.timed_out:
                raise SkipPackage(f"test suite ran past {self.limits.wall_s:.0f}s before any deletion")
            passing = {t for t, o in outcomes.items() if o == "passed" and not any(t.startswith(i) for i in spec.ignore_tests)}
            failing = {t for t, o in outcomes.items() if o in ("failed", "error")}
            st.baseline_passed = len(passing)
            if len(passing) < 2:
                tail = result.output.strip().splitlines()[-3:]
                raise SkipPackage(f"tests fail before deletion ({len(passing)} passed, {len(failing)} failed/errored): "
                                  + " | ".join(tail))
            cov = test_map(out / "coverage.db", sb.workspace, passing)
        files = {f: (repo / f).read_text() for f in source_files(repo, src_paths)}
        candidates = self.candidates(files, cov)
        st.candidates_found = len(candidates)
        if not candidates:
            raise SkipPackage("no definition is exercised by a passing test")
        rng = random.Random(f"{self.config.seed}/{name}/{version}")
        rng.shuffle(candidates)
        # Interleave sizes so that small, medium and large deletions all get a chance.
        by_size: dict[str, list[Candidate]] = {}
        for c in candidates:
            by_size.setdefault(self._size_hint(c), []).append(c)
        order = []
        while any(by_size.values()):
            for size in ("small", "medium", "large"):
                if by_size.get(size):
                    order.append(by_size[size].pop())
        kept: list[TaskRow] = []
        used_files_tests: set[tuple[str, str]] = set()
        for cand in order:
            if len(kept) >= self.config.max_tasks_per_package or st.tried >= self.config.max_candidates_per_package:
                break
            dedupe = (cand.definition.file, cand.definition.qualname)
            if dedupe in used_files_tests:
                continue
            st.tried += 1
            row, reason = self.try_candidate(cand, files, passing, proto, tests, tuple(spec.timed_tests))
            if row is None:
                st.rejected[reason] += 1
                st.rejected_tasks[self.task_id(proto, cand)] = reason
                continue
            used_files_tests.add(dedupe)
            kept.append(row)
            st.kept += 1
        return sorted(kept, key=lambda r: r.id)

    @staticmethod
    def task_id(proto: dict, cand: Candidate) -> str:
        d = cand.definition
        mode_word = {"body": "body", "definition": "def", "class_bodies": "methods"}[cand.mode]
        return f"{proto['package']}-{proto['version']}/{d.file}:{d.qualname}:{mode_word}"

    @staticmethod
    def _size_hint(c: Candidate) -> str:
        d = c.definition
        return size_of(d.end - (d.body_start if c.mode == "body" else d.start) + 1)

    def candidates(self, files: dict[str, str], cov) -> list[Candidate]:
        found = []
        for rel, text in sorted(files.items()):
            try:
                defs = definitions(rel, text)
            except SyntaxError:
                continue
            lines = cov.get(rel, {})
            for d in defs:
                d.tests = set().union(*[lines.get(n, set()) for n in range(d.body_start, d.end + 1)]) if lines else set()
                if not d.tests:
                    continue
                if d.name.startswith("__") and d.name not in ("__init__", "__call__", "__iter__", "__eq__", "__repr__",
                                                               "__getitem__", "__contains__", "__len__"):
                    continue
                if d.kind == "class":
                    if "class_bodies" in self.config.modes:
                        found.append(Candidate("class_bodies", d, d.tests))
                    if "definition" in self.config.modes:
                        found.append(Candidate("definition", d, d.tests))
                else:
                    if "body" in self.config.modes and d.end - d.body_start >= 1:
                        found.append(Candidate("body", d, d.tests))
                    if "definition" in self.config.modes and d.name != "__init__":
                        found.append(Candidate("definition", d, d.tests))
        found.sort(key=lambda c: c.key)
        return found

    def apply(self, cand: Candidate, files: dict[str, str]) -> tuple[dict[str, str], int, list[Definition]]:
        d = cand.definition
        text = files[d.file]
        if cand.mode == "body":
            new, removed = delete_body(text, d)
            return {d.file: new}, removed, [d]
        if cand.mode == "class_bodies":
            new, removed, methods = delete_class_bodies(text, d)
            if not methods:
                raise ValueError("class has no method bodies")
            return {d.file: new}, removed, methods
        new, removed = delete_definition(text, d)
        changed = {d.file: new}
        if d.kind in ("function", "class"):
            for rel, other in files.items():
                current = changed.get(rel, other)
                dropped = drop_references(current, {d.name})
                if dropped is not None:
                    changed[rel] = dropped
        return changed, removed, [d]

    def try_candidate(self, cand, files, passing, proto, tests, timed: tuple[str, ...]) -> tuple[TaskRow | None, str]:
        try:
            broken, removed, targets = self.apply(cand, files)
            for rel, text in broken.items():
                ast.parse(text)
        except (SyntaxError, ValueError):
            return None, "transform_failed"
        scope_files = sorted({t.split("::", 1)[0] for t in cand.tests})
        scope = sorted(t for t in passing if t.split("::", 1)[0] in scope_files)
        if self.config.pass_to_pass == "whole_suite":
            scope_files, scope = tests, sorted(passing)
        d = cand.definition
        task_id = self.task_id(proto, cand)
        deletion = Deletion(
            mode="definition" if cand.mode == "definition" else "body", size=size_of(removed), lines_removed=removed,
            targets=[Target(file=t.file, qualname=t.qualname, kind=t.kind, signature=t.signature) for t in targets],
        )
        gold = {rel: files[rel] for rel in broken}
        draft = TaskRow(id=task_id, deletion=deletion, broken_files=broken, gold_files=gold, f2p=scope[:1],
                        p2p=scope[:1], prompt="", **proto)
        # Run the scope's tests on the broken copy.
        with tempfile.TemporaryDirectory(prefix="fd-cand.") as tmp:
            from feature_deletion.task import materialize

            work = materialize(draft, self.output.parent, Path(tmp) / "repo", git=False)
            sb = Sandbox(work, runner=self.runner, limits=self.limits)
            result, outcomes = run_pytest(sb, proto["import_root"], scope_files)
        if result.timed_out:
            return None, "timeout_after_deletion"
        f2p = sorted(t for t in scope if outcomes.get(t) != "passed")
        p2p = sorted(t for t in scope if outcomes.get(t) == "passed" and not t.startswith(timed))
        if not f2p:
            return None, "no_fail_to_pass"
        if not p2p:
            return None, "no_pass_to_pass"
        row = draft.model_copy(update={"f2p": f2p, "p2p": p2p, "prompt": make_prompt(proto, deletion, f2p)})
        row = TaskRow.model_validate(row.model_dump())
        if not self.config.checks:
            return row, "kept"
        # The verdict's checks (programs recorded on the gold code, held-out variants, gold's answers); a task that
        # cannot be graded soundly is not kept.
        try:
            checked, why = with_checks(row, self.output.parent, self.runner, self.limits)
        except Exception:  # noqa: BLE001 - one candidate whose checks cannot be built is rejected, the build goes on
            logger.exception("building the checks of %s failed", task_id)
            return None, "checks_error"
        if checked is None:
            return None, why
        # Restoring the original must make every F2P and P2P test pass again and answer every check; the untouched
        # task must score 0.
        gold_grade = grade(checked, self.output.parent, None, self.runner, self.limits,
                           changes={k: v.encode() for k, v in gold.items()})
        if gold_grade.reward != 1.0:
            return None, "gold_does_not_pass"
        if grade(checked, self.output.parent, None, self.runner, self.limits).reward != 0.0:
            return None, "untouched_pays"
        return checked, "kept"


def make_prompt(proto: dict, deletion: Deletion, f2p: list[str]) -> str:
    how = ("its body was replaced by `raise NotImplementedError(...)`" if deletion.mode == "body"
           else "the definition was removed, together with imports and `__all__` entries that named it")
    items = "\n".join(f"- `{t.file}`: {t.kind} `{t.qualname}` — `{t.signature}`" for t in deletion.targets[:12])
    if len(deletion.targets) > 12:
        items += f"\n- ... and {len(deletion.targets) - 12} more methods of the same class"
    shown = "\n".join(f"- `{t}`" for t in f2p[:8]) + (f"\n- ... ({len(f2p) - 8} more)" if len(f2p) > 8 else "")
    return (
        f"The repository in your workspace is the Python package `{proto['package']}` ({proto['version']}). "
        f"A feature was deleted from it ({how}); everything else still works.\n\n"
        f"Deleted:\n{items}\n\nRebuild the feature so that the package's tests pass again. "
        f"Tests that fail because of the deletion include:\n{shown}\n\n"
        "Use the tools: list_dir, read_file, search, edit_file, write_file, run_tests, and call submit when done. "
        "Only changes to the package's source files count; changes to tests and configuration are discarded "
        "when grading."
    )
