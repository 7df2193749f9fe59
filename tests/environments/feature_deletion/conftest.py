"""Fixtures: a tiny real Python package with its own pytest suite, and tasks built from it."""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path

import pytest

TINY = {
    "fdcalc/__init__.py": '''
        from fdcalc.core import Stack, add, clamp, mul
        from fdcalc.text import shout, slug

        __all__ = ["Stack", "add", "clamp", "mul", "shout", "slug"]
    ''',
    "fdcalc/core.py": '''
        def add(a, b):
            """Sum of two numbers."""
            result = a + b
            return result


        def mul(a, b):
            """Product of a number and a non-negative int, by repeated addition."""
            total = 0
            for _ in range(b):
                total = add(total, a)
            return total


        def clamp(x, lo, hi):
            """x limited to [lo, hi]."""
            if x < lo:
                return lo
            if x > hi:
                return hi
            return x


        class Stack:
            """A LIFO stack."""

            def __init__(self):
                self.items = []

            def push(self, item):
                self.items.append(item)
                return self

            def pop(self):
                if not self.items:
                    raise IndexError("pop from empty stack")
                return self.items.pop()

            def peek(self):
                if not self.items:
                    raise IndexError("peek at empty stack")
                return self.items[-1]

            def __len__(self):
                return len(self.items)
    ''',
    "fdcalc/text.py": '''
        import re


        def shout(text):
            """Upper-case text with an exclamation mark."""
            text = text.strip()
            return text.upper() + "!"


        def slug(text):
            """Lower-case words joined by dashes."""
            words = re.findall(r"[a-z0-9]+", text.lower())
            return "-".join(words)
    ''',
    "tests/test_core.py": '''
        import pytest

        from fdcalc import Stack, add, clamp, mul


        def test_add():
            assert add(2, 3) == 5


        def test_add_negative():
            assert add(-2, 1) == -1


        def test_mul():
            assert mul(4, 3) == 12
            assert mul(4, 0) == 0


        def test_clamp():
            assert clamp(5, 0, 3) == 3
            assert clamp(-1, 0, 3) == 0
            assert clamp(2, 0, 3) == 2


        def test_stack_push_pop():
            s = Stack().push(1).push(2)
            assert s.pop() == 2 and len(s) == 1


        def test_stack_peek():
            s = Stack().push(7)
            assert s.peek() == 7 and len(s) == 1


        def test_stack_empty():
            with pytest.raises(IndexError):
                Stack().pop()
    ''',
    "tests/test_text.py": '''
        from fdcalc import shout, slug


        def test_shout():
            assert shout(" hi ") == "HI!"


        def test_slug():
            assert slug("Hello, World 2") == "hello-world-2"


        def test_slug_empty():
            assert slug("") == ""
    ''',
    "pyproject.toml": '''
        [project]
        name = "fdcalc"
        version = "0.1.0"
    ''',
}


def write_tiny_repo(dest: Path, files: dict[str, str] | None = None) -> Path:
    for rel, text in (files or TINY).items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return dest


@pytest.fixture(scope="session")
def tiny_repo(tmp_path_factory) -> Path:
    return write_tiny_repo(tmp_path_factory.mktemp("tiny") / "fdcalc")


def build_tasks(out: Path, repo: Path, name: str):
    """Tasks built by the real builder from `repo` as package `name` (its files' split hashes with the name)."""
    from feature_deletion.builder.core import BuildConfig, Builder

    config = BuildConfig(output=str(out / "tasks.jsonl"), seed=0, max_tasks_per_package=6,
                         packages=[{"source": "local", "spec": str(repo), "name": name}])
    builder = Builder(config, out)
    rows, stats = builder.build()
    builder.write(rows, stats)
    return rows, stats


def shared_build(tmp_path_factory, name: str, package: str):
    """Tasks built by the real builder from the tiny repo as package `package`, once for all of pytest-xdist's
    workers (a session fixture is made once per worker, and a build takes minutes on CI's 2 cores): the first to
    take the lock builds in the directory the workers share, the others read what it wrote. Every worker reads the
    rows from the file, so all see the same tasks: (rows, tasks_dir, stats)."""
    from filelock import FileLock

    from feature_deletion.task import load_rows

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    out = shared / f"shared-{name}"
    with FileLock(str(out) + ".lock"):
        if not (out / "built").exists():
            shutil.rmtree(out, ignore_errors=True)  # a build a failed worker left half done
            repo = write_tiny_repo(out / "repo" / package)
            build_tasks(out, repo, package)
            (out / "built").touch()
    rows, problems = load_rows(out / "tasks.jsonl")
    assert not problems, problems
    return rows, out, json.loads((out / "tasks.stats.json").read_text())


@pytest.fixture(scope="session")
def tiny_tasks(tmp_path_factory):
    """Tasks built by the real builder from the tiny repo: (rows, tasks_dir, stats)."""
    return shared_build(tmp_path_factory, "tasks", "fdcalc")


@pytest.fixture(scope="session")
def heldout_tasks(tmp_path_factory):
    """The tiny repo's tasks under package name fdcalc2, whose text.py hashes into the eval split (fdcalc's files
    are all train): (train rows, eval rows, tasks.jsonl path)."""
    from feature_deletion.taskset import split_of

    rows, out, _ = shared_build(tmp_path_factory, "heldout-tasks", "fdcalc2")
    train, held_out = ([r for r in rows if split_of(r) == s] for s in ("train", "eval"))
    assert train and held_out, "fdcalc2 should give tasks in both splits"
    return train, held_out, out / "tasks.jsonl"


@pytest.fixture
def make_repo():
    """write_tiny_repo(dest, files) with the TINY files as defaults: (function, TINY)."""
    return write_tiny_repo, TINY


@pytest.fixture(scope="session")
def task_builder():
    """(write_tiny_repo, build_tasks): tasks built by the real builder from a repo of any files."""
    return write_tiny_repo, build_tasks
