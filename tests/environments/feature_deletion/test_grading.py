"""Grading's reading of a test run: pytest 9 subtests counted right (the report, the summary check and so the
builder), canaries that look like the file's own tests, and grading that never raises."""

from __future__ import annotations

import ast
import re
import textwrap

from feature_deletion.grading import check_report, plant_canaries, run_pytest, safe_grade, summary_outcomes
from feature_deletion.sandbox import Sandbox, ensure_runner

SUBTESTS = '''
import unittest


class TestWords(unittest.TestCase):
    def test_cases(self):
        for value, want in [(1, 1), (2, 3), (3, 3)]:
            with self.subTest(value=value):
                self.assertEqual(value, want)


def test_fixture(subtests):
    for value in (0, 1):
        with subtests.test(msg="small", value=value):
            assert value == 0


def test_plain():
    assert True
'''
NODES = ["test_sub.py::TestWords::test_cases", "test_sub.py::test_fixture", "test_sub.py::test_plain"]


def test_a_failing_subtest_fails_its_test_in_the_report_and_the_summary(tmp_path):
    """A unittest test whose subTest fails still passes its own call report; both the grader's report and its
    reading of pytest's summary (`SUBFAILED(...)` lines come first) count it failed, and they agree."""
    (tmp_path / "test_sub.py").write_text(SUBTESTS)
    sb = Sandbox(tmp_path, runner=ensure_runner())
    result, outcomes = run_pytest(sb, "", NODES, summary=True)
    assert {n: outcomes.get(n) for n in NODES} == {NODES[0]: "failed", NODES[1]: "failed", NODES[2]: "passed"}
    assert "SUBFAILED(value=2) test_sub.py::TestWords::test_cases" in result.stdout
    assert summary_outcomes(result.stdout, NODES) == {n: outcomes[n] for n in NODES}
    assert result.returncode == 1


class _Row:
    """The fields check_report and plant_canaries read off a task row."""

    def __init__(self, f2p, p2p):
        self.f2p, self.p2p, self.tests = f2p, p2p, sorted(set(f2p) | set(p2p))


def test_canaries_look_like_the_files_own_tests(tmp_path):
    """Names made of the file's own test-name words, bodies copied from its pass-to-pass tests, placed between its
    statements; pytest runs them as it must, and the report check agrees."""
    source = textwrap.dedent('''
        import re


        def test_slug_words():
            assert re.findall("[a-z]+", "a b") == ["a", "b"]


        def test_slug_empty():
            assert re.findall("[a-z]+", "") == []


        def test_upper_case():
            assert "a".upper() == "A"
    ''')
    (tmp_path / "test_words.py").write_text(source)
    names = ["test_words.py::test_slug_words", "test_words.py::test_slug_empty", "test_words.py::test_upper_case"]
    row = _Row(f2p=names[:1], p2p=names[1:])
    canaries = plant_canaries(tmp_path, row)
    planted = (tmp_path / "test_words.py").read_text()
    assert set(canaries.values()) == {"passed", "failed"} and 2 <= len(canaries) <= 4
    words = {"slug", "words", "empty", "upper", "case"}
    for node in canaries:
        name = node.split("::")[1]
        assert re.fullmatch(r"test(_[a-z]+)+", name) and set(name.split("_")[1:]) <= words, name
    tree = ast.parse(planted)
    defined = {n.name: ast.get_source_segment(planted, n) for n in tree.body if isinstance(n, ast.FunctionDef)}
    bodies = {defined[n.split("::")[1]].split("\n", 1)[1] for n in names[1:]}
    for node, want in canaries.items():
        body = defined[node.split("::")[1]].split("\n", 1)[1]
        assert (body if want == "passed" else body.rsplit("\n", 1)[0]) in bodies, body  # a copy of a P2P test
    result, outcomes = run_pytest(Sandbox(tmp_path, runner=ensure_runner()), "", names + sorted(canaries), summary=True)
    assert {n: outcomes[n] for n in canaries} == canaries
    assert check_report(row, canaries, result, outcomes) == []


def test_a_grading_that_raises_is_reward_zero_with_its_reason(tiny_tasks):
    rows, tasks_dir, _ = tiny_tasks
    row = rows[0].model_copy(update={"f2p": ["tests/no_such_test_file.py::test_x", *rows[0].f2p[1:]]})
    g = safe_grade(row, tasks_dir, None, ensure_runner(), changes={k: v.encode() for k, v in row.gold_files.items()})
    assert g.reward == 0.0 and [i["code"] for i in g.invalid] == ["grading_error"]
    assert "FileNotFoundError" in g.invalid[0]["message"]


def test_a_summary_flooded_past_what_its_tests_could_print_is_not_read(tmp_path):
    """Red team 3 H4: entries printed into pytest's short summary (200,000 of them cost the grader 10 s of CPU and
    were still paid); a block longer than the run's tests could make is read as no summary, so the report check
    finds it disagrees."""
    (tmp_path / "test_sub.py").write_text(SUBTESTS)
    result, outcomes = run_pytest(Sandbox(tmp_path, runner=ensure_runner()), "", NODES, summary=True)
    header = next(line for line in result.stdout.splitlines() if "short test summary info" in line)
    assert summary_outcomes(result.stdout, NODES) == {n: outcomes[n] for n in NODES}
    flooded = result.stdout.replace(header, header + "\n" + "PASSED elsewhere.py::test_x\n" * 2000, 1)
    assert summary_outcomes(flooded, NODES) == {}
    few = result.stdout.replace(header, header + "\nPASSED elsewhere.py::test_x", 1)
    assert summary_outcomes(few, NODES) == {n: outcomes[n] for n in NODES}  # an unknown entry alone is skipped


def test_an_entry_names_the_longest_node_id_it_starts_with():
    nodes = ["t.py::test[a]", "t.py::test[a - b]"]
    text = "==== short test summary info ====\nFAILED t.py::test[a - b] - assert 1 == 2 - twice\nPASSED t.py::test[a]\n"
    assert summary_outcomes(text, nodes) == {"t.py::test[a - b]": "failed", "t.py::test[a]": "passed"}


def test_a_report_the_agents_conftest_inflates_or_reshapes_is_no_report(tmp_path):
    """Red team 3 H3: a conftest rewrote report.json as 14 MiB of nested lists, 357 MiB once parsed on the host and
    kept for the session; a report over REPORT_MAX_BYTES, or one whose outcomes are not text, is read as none."""
    (tmp_path / "test_one.py").write_text("def test_one():\n    assert True\n")
    sb = Sandbox(tmp_path, runner=ensure_runner())
    assert run_pytest(sb, "", ["test_one.py::test_one"])[1] == {"test_one.py::test_one": "passed"}
    for name, payload in [("big", '"{\\"x\\": [" + "[],"*(5 * 2**20 // 3) + "[]]}"'),
                          ("reshaped", '\'{"test_one.py::test_one": ["passed"]}\'')]:
        (tmp_path / "conftest.py").write_text(
            "import os\n\ndef pytest_unconfigure(config):\n"
            f"    open(os.environ['FD_REPORT'], 'w').write({payload})\n")
        result, outcomes = run_pytest(sb, "", ["test_one.py::test_one"])
        assert outcomes == {}, (name, result.output[-500:])
