import base64
import hashlib
import json
import subprocess
import sys
import zipfile
from pathlib import Path

from feature_deletion.builder.core import BuildConfig, Builder
from feature_deletion.task import load_rows, materialize
from feature_deletion.validate import main as validate_main



def test_built_tasks_are_validated_fail_to_pass_and_pass_to_pass(tiny_tasks):
    rows, out, stats = tiny_tasks
    assert len(rows) >= 4
    assert stats["packages"][0]["kept"] == len(rows) and stats["candidates_tried"] >= len(rows)
    sizes, modes = set(), set()
    for row in rows:
        assert row.f2p and row.p2p and not set(row.f2p) & set(row.p2p)
        assert row.source.kind == "local" and len(row.source.sha256) == 64
        for rel, content in row.broken_files.items():
            assert content != row.gold_files[rel]
        sizes.add(row.deletion.size)
        modes.add(row.deletion.mode)
    assert modes == {"body", "definition"}
    saved = (out / "tasks.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in saved] == [r.id for r in rows]
    assert json.loads((out / "tasks.stats.json").read_text())["tasks"] == len(rows)


def test_workspace_has_one_commit_and_no_caches(tiny_tasks, tmp_path):
    rows, out, _ = tiny_tasks
    repo = materialize(rows[0], out, tmp_path / "repo")
    log = subprocess.run(["git", "log", "--all", "--oneline"], cwd=repo, capture_output=True, text=True).stdout
    assert len(log.strip().splitlines()) == 1
    assert not list(repo.rglob("__pycache__")) and not list(repo.rglob("*.pyc"))
    for rel, content in rows[0].broken_files.items():
        assert (repo / rel).read_text() == content


def test_build_is_deterministic_for_a_seed(tiny_tasks, tmp_path):
    """The same repository and seed build the same tasks, checks and gold's answers included (each answer is
    recorded in processes with their own hash seeds and time zones): a build with room for two gives two of the
    shared build's six, the same to the byte, though that one was made by another process, in another directory, at
    another time."""
    _, out, _ = tiny_tasks
    config = BuildConfig(output=str(tmp_path / "tasks.jsonl"), seed=0, max_tasks_per_package=2,
                         packages=[{"source": "local", "spec": str(out / "repo" / "fdcalc"), "name": "fdcalc"}])
    builder = Builder(config, tmp_path)
    builder.write(*builder.build())
    shared = {json.loads(line)["id"]: line for line in (out / "tasks.jsonl").read_text().splitlines()}
    built = (tmp_path / "tasks.jsonl").read_text().splitlines()
    assert len(built) == 2 and all(line == shared.get(json.loads(line)["id"]) for line in built)


# The builds below are about which packages, test files and candidates are kept, not the verdict: `checks=False` (the
# checks are fd-validate --record-checks's to make then) keeps each to a pytest run per candidate, not minutes.
def test_bad_inputs_are_skipped_with_a_reason(tiny_repo, tmp_path, make_repo):
    write_tiny_repo, TINY = make_repo
    broken = write_tiny_repo(tmp_path / "broken", dict(TINY, **{"tests/test_core.py": "def test_x():\n    assert False\n",
                                                                  "tests/test_text.py": "def test_y():\n    assert 0\n"}))
    config = BuildConfig(output=str(tmp_path / "o" / "tasks.jsonl"), max_tasks_per_package=1, checks=False, packages=[
        {"source": "local", "spec": str(broken), "name": "broken"},
        {"source": "local", "spec": str(tmp_path / "missing")},
        {"source": "nowhere", "spec": "x"},
        {"source": "local", "spec": str(tiny_repo), "name": "fdcalc"},
    ])
    rows, stats = Builder(config, tmp_path).build()
    statuses = [(p["status"], p["message"]) for p in stats["packages"]]
    assert statuses[0][0] == "skipped" and "tests fail before deletion" in statuses[0][1]
    assert statuses[1][0] == "skipped" and "no such directory" in statuses[1][1]
    assert statuses[2][0] == "skipped" and "unknown source" in statuses[2][1]
    assert statuses[3][0] == "ok" and len(rows) == 1 and stats["packages_skipped"] == 3


def test_package_coverage_settings_do_not_hide_the_mapping(tmp_path, make_repo):
    """`parallel = true` in a package's own coverage config used to send the per-test data elsewhere,
    so the builder found no definition exercised by a passing test and skipped the package."""
    write_tiny_repo, TINY = make_repo
    pyproject = TINY["pyproject.toml"] + "\n[tool.coverage.run]\nparallel = true\nrelative_files = true\n"
    repo = write_tiny_repo(tmp_path / "fdcalc", dict(TINY, **{"pyproject.toml": pyproject}))
    config = BuildConfig(output=str(tmp_path / "o" / "tasks.jsonl"), max_tasks_per_package=2, checks=False,
                         packages=[{"source": "local", "spec": str(repo), "name": "fdcalc"}])
    rows, stats = Builder(config, tmp_path).build()
    assert stats["packages"][0]["status"] == "ok" and len(rows) == 2, stats["packages"]


def test_a_test_file_that_cannot_import_is_dropped_with_its_reason(tmp_path, make_repo):
    write_tiny_repo, TINY = make_repo
    extra = "import fd_missing_requirement\n\n\ndef test_needs_it():\n    assert fd_missing_requirement\n"
    repo = write_tiny_repo(tmp_path / "fdcalc", dict(TINY, **{"tests/test_extra.py": extra}))
    config = BuildConfig(output=str(tmp_path / "o" / "tasks.jsonl"), max_tasks_per_package=2, checks=False,
                         packages=[{"source": "local", "spec": str(repo), "name": "fdcalc"}])
    rows, stats = Builder(config, tmp_path).build()
    package = stats["packages"][0]
    assert package["status"] == "ok" and len(rows) == 2, package
    assert package["dropped_test_files"] == {
        "tests/test_extra.py": "ModuleNotFoundError: No module named 'fd_missing_requirement'"}
    assert all(not t.startswith("tests/test_extra.py") for r in rows for t in r.tests)


def test_whole_suite_pass_to_pass(tiny_repo, tiny_tasks, tmp_path):
    """By default P2P comes from the deleted code's test files; `whole_suite` takes every test that
    still passes, so a task in core.py also guards text.py's tests."""
    config = BuildConfig(output=str(tmp_path / "o" / "tasks.jsonl"), max_tasks_per_package=2, pass_to_pass="whole_suite",
                         checks=False, packages=[{"source": "local", "spec": str(tiny_repo), "name": "fdcalc"}])
    rows, _ = Builder(config, tmp_path).build()
    assert len(rows) == 2
    for row in rows:
        assert len(row.f2p) + len(row.p2p) == 10  # the tiny suite: 7 tests in test_core.py, 3 in test_text.py
        assert {t.split("::")[0] for t in row.p2p} == {"tests/test_core.py", "tests/test_text.py"}
    default_rows, _, _ = tiny_tasks
    assert all(len({t.split("::")[0] for t in r.tests}) == 1 for r in default_rows)


def test_timed_tests_are_never_pass_to_pass_but_stay_fail_to_pass(tiny_repo, tmp_path):
    """A test that times the wall clock fails at random on a loaded machine; as P2P it would zero a right rebuild
    (CI saw more-itertools' `TimeLimitedTests` do it to gold), so it is left out of P2P and kept in F2P."""
    timed = ["tests/test_core.py::test_stack", "tests/test_text.py::test_s"]
    config = BuildConfig(output=str(tmp_path / "o" / "tasks.jsonl"), max_tasks_per_package=4, pass_to_pass="whole_suite",
                         checks=False, packages=[{"source": "local", "spec": str(tiny_repo), "name": "fdcalc",
                                                  "timed_tests": timed}])
    rows, _ = Builder(config, tmp_path).build()
    assert len(rows) == 4
    untimed = {f"tests/test_core.py::test_{n}" for n in ("add", "add_negative", "mul", "clamp")}
    for row in rows:
        assert set(row.p2p) == untimed - set(row.f2p), (row.f2p, row.p2p)
    assert any(t.startswith(tuple(timed)) for r in rows for t in r.f2p), [r.f2p for r in rows]


def _wheel(dest: Path, name: str, source: str) -> Path:
    """A minimal pure-Python wheel, so that installing a test requirement needs no index."""
    files = {f"{name}/__init__.py": source,
             f"{name}-0.1.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n",
             f"{name}-0.1.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = []
    path = dest / f"{name}-0.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for rel, text in files.items():
            z.writestr(rel, text)
            digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
            record.append(f"{rel},sha256={digest},{len(text)}")
        z.writestr(f"{name}-0.1.dist-info/RECORD", "\n".join(record + [f"{name}-0.1.dist-info/RECORD,,"]) + "\n")
    return path


def test_test_requirements_are_installed_into_the_runner_and_kept_with_the_task(tmp_path, make_repo):
    write_tiny_repo, TINY = make_repo
    wheel = _wheel(tmp_path, "fdextra", "def triple(x):\n    return 3 * x\n")
    extra = ("import fdextra\nfrom fdcalc import mul\n\n\ndef test_triple():\n    assert fdextra.triple(mul(2, 2)) == 12\n"
             "\n\ndef test_triple_alone():\n    assert fdextra.triple(1) == 3\n")
    repo = write_tiny_repo(tmp_path / "fdcalc", dict(TINY, **{"tests/test_extra.py": extra}))
    # that test file only: each candidate (add or mul) is a task whose tests import the requirement
    config = BuildConfig(output=str(tmp_path / "o" / "tasks.jsonl"), max_tasks_per_package=1,
                         packages=[{"source": "local", "spec": str(repo), "name": "fdcalc",
                                    "tests": ["tests/test_extra.py"], "test_requirements": [str(wheel)]}])
    builder = Builder(config, tmp_path)
    rows, stats = builder.build()
    builder.write(rows, stats)
    assert stats["packages"][0]["dropped_test_files"] == {} and stats["packages"][0]["baseline_passed"] == 2
    assert len(rows) == 1 and rows[0].test_requirements == [str(wheel)]
    assert rows[0].f2p == ["tests/test_extra.py::test_triple"] and rows[0].checks
    assert validate_main([str(tmp_path / "o" / "tasks.jsonl")]) == 0


def test_checks_keep_what_the_tasks_file_cannot_hold_as_text(tmp_path, make_repo):
    """A call with a lone surrogate (python-slugify's tests make one) cannot be written as UTF-8 text: its string
    is kept as its bytes (`strx`), so the build neither fails at write time nor loses the check."""
    write_tiny_repo, TINY = make_repo
    tests = TINY["tests/test_text.py"] + (
        "\n\n        def test_shout_surrogate():\n            assert shout(' \\ud800 ') == '\\ud800!'\n")
    repo = write_tiny_repo(tmp_path / "fdcalc", dict(TINY, **{"tests/test_text.py": tests}))
    # text.py's bodies only: shout and slug, two tasks
    config = BuildConfig(output=str(tmp_path / "o" / "tasks.jsonl"), max_tasks_per_package=2, modes=["body"],
                         packages=[{"source": "local", "spec": str(repo), "name": "fdcalc",
                                    "tests": ["tests/test_text.py"]}])
    builder = Builder(config, tmp_path)
    rows, stats = builder.build()
    builder.write(rows, stats)
    shout = [r for r in load_rows(tmp_path / "o" / "tasks.jsonl")[0] if r.deletion.targets[0].qualname == "shout"]
    assert shout and shout[0].checks, [r.id for r in rows]
    args = [step["args"][0] for p in shout[0].checks.programs for step in p.steps if not any(p.heldout)]
    assert ["str", " hi "] in args and ["strx", " \ud800 ".encode("utf-8", "surrogatepass").hex()] in args


def test_fd_build_command_reports_bad_config(tmp_path):
    cfg = tmp_path / "b.toml"
    cfg.write_text("seed = 'x'\npackages = []\n")
    proc = subprocess.run([sys.executable, "-m", "feature_deletion.builder.cli", "@", str(cfg)], capture_output=True, text=True)
    assert proc.returncode == 2 and "seed" in proc.stderr and "Traceback" not in proc.stderr


def test_validate_scores_gold_1_and_untouched_0_and_skips_malformed_rows(tiny_tasks, tmp_path, capsys):
    rows, out, _ = tiny_tasks
    assert validate_main([str(out / "tasks.jsonl"), "--limit", "3"]) == 0
    assert "3/3 tasks valid (100.0%)" in capsys.readouterr().out
    bad = out / "with_bad_rows.jsonl"
    lines = (out / "tasks.jsonl").read_text().splitlines()[:1] + ['{"id": "x"}', "not json"]
    bad.write_text("\n".join(lines) + "\n")
    loaded, problems = load_rows(bad)
    assert len(loaded) == 1 and len(problems) == 2 and all("malformed task row skipped" in p for p in problems)
    assert validate_main([str(bad)]) == 1
    captured = capsys.readouterr()
    assert "1/1 tasks valid" in captured.out and "2 malformed rows skipped" in captured.out
    # A row of the previous schema (layer 4's `calls`, no checks) is no task of this one: skipped with the reason,
    # and read without checks only to rebuild them (fd-validate --record-checks).
    old = json.loads(lines[0]) | {"schema_version": 1, "calls": [], "calls_status": "not recorded"}
    old.pop("checks")
    (out / "v1.jsonl").write_text(json.dumps(old) + "\n")
    assert load_rows(out / "v1.jsonl")[0] == [] and "schema 1 skipped" in load_rows(out / "v1.jsonl")[1][0]
    (upgraded,), problems = load_rows(out / "v1.jsonl", upgrade=True)
    assert not problems and upgraded.checks is None and upgraded.id == rows[0].id


def test_taskset_loads_by_id_through_verifiers(tiny_tasks):
    from verifiers.v1.utils import loaders

    rows, out, _ = tiny_tasks
    cls = loaders.taskset_class("feature-deletion")
    config_type = loaders.taskset_config_type("feature-deletion")
    tasks = list(cls(config_type(tasks_path=str(out / "tasks.jsonl"), split="train"))) + \
        list(cls(config_type(tasks_path=str(out / "tasks.jsonl"), split="eval")))
    assert sorted(t.data.id for t in tasks) == sorted(r.id for r in rows)
    assert all(t.data.prompt.startswith(f"Task id: {t.data.id}") for t in tasks)



def test_committed_build_configs_parse_and_name_the_held_out_test_requirements():
    from feature_deletion.builder.cli import parse

    configs = Path(__file__).parents[3] / "configs" / "feature_deletion"
    assert len(parse(["@", str(configs / "build.toml")])[0].packages) == 5
    held_out = parse(["@", str(configs / "build_heldout.toml")])[0]
    assert {p.spec: p.test_requirements for p in held_out.packages} == {
        "python-slugify==9.2.0": ["text_unidecode"], "humanize==4.17.0": ["freezegun"]}
