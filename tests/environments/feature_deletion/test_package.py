import subprocess
import zipfile
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[3] / "environments" / "feature_deletion"


@pytest.mark.slow
def test_builds_a_hub_ready_wheel(tmp_path):
    subprocess.run(["uv", "build", "--wheel", "--out-dir", str(tmp_path), str(PACKAGE)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("feature_deletion-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        metadata = zf.read(next(n for n in names if n.endswith("METADATA"))).decode()
        entry = zf.read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "feature_deletion/__init__.py" in names and "feature_deletion/_sandbox_files/fd_sandbox_init.py" in names
    assert "feature_deletion/data/tasks.jsonl.xz" in names
    assert "Requires-Dist: verifiers<0.5,>=0.4.0" in metadata and "# feature-deletion" in metadata
    assert "fd-build" in entry and "fd-validate" in entry


def test_bundled_tasks_load_with_sdist_hashes():
    from feature_deletion.task import load_rows, sha256_file
    from feature_deletion.taskset import DEFAULT_TASKS

    rows, problems = load_rows(DEFAULT_TASKS)
    assert len(rows) >= 60 and not problems
    assert len({r.package for r in rows}) >= 3
    for row in rows:
        assert row.source.kind == "pypi" and row.f2p and row.p2p
        assert sha256_file(DEFAULT_TASKS.parent / row.archive) == row.source.sha256


def test_the_graders_commands_load_without_verifiers_and_the_exports_still_resolve():
    """fd-validate, fd-build and grading never touch verifiers (seconds of imports per process); the taskset and
    harness that verifiers' loader reads through `__all__` still resolve, and an unknown name is an AttributeError."""
    import sys

    code = ("import sys, feature_deletion.validate, feature_deletion.builder.cli, feature_deletion.grading\n"
            "assert 'verifiers' not in sys.modules, 'verifiers imported'\n"
            "import feature_deletion as fd\n"
            "from verifiers.v1 import Harness, Taskset\n"
            "assert [issubclass(getattr(fd, n), (Harness, Taskset)) for n in fd.__all__] == [True, True]\n"
            "try:\n    fd.missing\nexcept AttributeError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "has no attribute 'missing'" in out.stdout
