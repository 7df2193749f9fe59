"""The Claude Code ingester on one minimal session per defect of issue 21 (tests/replay/data/claude_code/,
built by make_fixtures.py from lines in the shape Claude Code writes): each test states the steps the
session must give (states in order, one action per response, per-step model) and the counts of what
was skipped."""

from __future__ import annotations

import json
from pathlib import Path

from composer_prime.replay.ingest import ingest

CASES = Path(__file__).parent / "data" / "claude_code"


def read(case: str):
    return ingest(CASES / f"{case}.jsonl", "claude-code")


def view(step) -> list[tuple]:
    """The state as (role, text, call ids, answered id): what a test can compare whole."""
    return [(m.role, m.content, [c.id for c in m.tool_calls or []], m.tool_call_id) for m in step.state]


def test_each_step_carries_the_model_of_its_own_turn():
    steps, report = read("models")
    assert [s.student for s in steps] == ["claude-opus-4-1-20250805"] * 2 + ["claude-sonnet-4-5-20250929"] * 2
    assert [s.index for s in steps] == [0, 1, 2, 3] and not report.skipped


def test_synthetic_and_meta_turns_are_skipped_and_counted():
    steps, report = read("synthetic_meta")
    assert report.skipped == {"meta_turn": 1, "synthetic_turn": 1}
    assert [s.action.content for s in steps] == ["It lowercases a string and joins words with dashes.",
                                                 "There is no unslugify in this project."]
    assert {s.student for s in steps} == {"claude-opus-4-1-20250805"}  # not relabelled by "<synthetic>"
    assert [m.content for m in steps[1].state] == [
        "What does slugify do?", "It lowercases a string and joins words with dashes.",
        "[Request interrupted by user]", "And unslugify?"]
    assert not any("Caveat" in (m.content or "") or "No response requested" in (m.content or "")
                   for s in steps for m in s.state)


def test_one_response_interleaved_with_its_results_is_one_action():
    steps, report = read("interleaved")
    assert len(steps) == 2 and not report.skipped
    first, second = steps
    assert first.action.content == "Reading both files."
    assert [c.id for c in first.action.tool_calls] == ["toolu_01A", "toolu_01B"]
    assert view(first) == [("user", "Show me setup.cfg and pyproject.toml", [], None)]  # no result it had not seen
    assert view(second) == [
        ("user", "Show me setup.cfg and pyproject.toml", [], None),
        ("assistant", "Reading both files.", ["toolu_01A", "toolu_01B"], None),
        ("tool", "[metadata]\nname = proj", [], "toolu_01A"),
        ("tool", '[project]\nname = "proj"', [], "toolu_01B"),
    ]


def test_a_line_written_twice_is_read_once():
    lines = (CASES / "duplicate_line.jsonl").read_text().splitlines()
    assert lines[1] == lines[2]  # the fixture really holds the same line twice
    steps, report = read("duplicate_line")
    assert report.skipped == {"duplicate_line": 1}
    assert [[c.id for c in s.action.tool_calls] for s in steps] == [["toolu_01D"], []]
    assert view(steps[1]) == [("user", "List the tests", [], None), ("assistant", None, ["toolu_01D"], None),
                              ("tool", "tests/test_utils.py", [], "toolu_01D")]


def test_after_a_rewind_each_branch_is_its_own_trace_and_the_prefix_is_stepped_once():
    steps, report = read("rewind")
    session = steps[0].trace_id
    final = [s for s in steps if s.trace_id == session]
    old = [s for s in steps if s.trace_id != session]
    assert not report.skipped and report.noted == {"branch_trace": 1}
    # The resumed branch: no trace of the abandoned answer in any of its states.
    assert [s.index for s in final] == [0, 1, 2]
    assert [m.content for m in final[2].state if m.role == "user"] == ["Add a --verbose flag to cli.py",
                                                                       "argparse, sorry"]
    assert not any("click" in (m.content or "") or "toolu_02Old" in json.dumps(m.model_dump())
                   for s in final for m in s.state)
    # The abandoned branch: only its own steps (the first answer is already a step of the final trace).
    assert old[0].trace_id.startswith(f"{session}/branch-")
    assert [s.index for s in old] == [1, 2]
    assert [m.content for m in old[0].state] == ["Add a --verbose flag to cli.py",
                                                 "Which argument parser does cli.py use?", "click"]
    assert old[1].action.content == "Added -v."


def test_after_a_compaction_the_state_restarts_at_the_summary():
    steps, report = read("compaction")
    assert [s.index for s in steps] == [0, 1, 2, 3] and report.skipped == {"meta_event": 1}
    before, after = steps[1], steps[3]
    assert [m.role for m in before.state] == ["user", "assistant", "tool"]
    assert before.state[0].content == "Port the parser to the new API"
    assert [m.role for m in steps[2].state] == ["user"]
    assert steps[2].state[0].content.startswith("This session is being continued")
    assert view(after)[1:] == [("assistant", None, ["toolu_03C"], None),
                               ("tool", "The file parser.py has been updated. All occurrences were replaced.",
                                [], "toolu_03C")]
    assert not any("Port the parser" in (m.content or "") for m in after.state)


def test_a_sidechain_is_a_trace_of_its_own():
    steps, report = read("sidechain")
    session = steps[0].trace_id
    main = [s for s in steps if s.trace_id == session]
    side = [s for s in steps if s.trace_id == f"{session}/sidechain-6e067db7"]
    assert len(main) == 2 and len(side) == 2 and not report.skipped
    assert {s.student for s in side} == {"claude-haiku-4-5-20251001"}
    assert [m.content for m in side[0].state] == ["Search for slugify"]
    assert view(side[1])[2] == ("tool", "utils.py:3:def slugify(s):", [], "toolu_01S")
    assert not any("toolu_01S" in json.dumps(m.model_dump()) for s in main for m in s.state)


def test_unknown_blocks_are_counted():
    steps, report = read("unknown_blocks")
    assert report.skipped == {"unknown_block:document": 1, "unknown_block:server_tool_use": 1,
                              "unknown_block:web_search_tool_result": 1, "bare_string_block": 1}
    assert len(steps) == 1
    assert steps[0].state[0].content == "What changed in click 8.2?"  # the bare string's text is kept
    assert steps[0].action.content == "Click 8.2 dropped Python 3.7 support." and not steps[0].action.tool_calls


def test_blocks_are_separated_and_errors_prefixed_once():
    steps, _ = read("separators_errors")
    assert steps[0].state[0].content == "[image]\nDo you think this layout works?"
    assert steps[0].action.content == "The sidebar overlaps the header.\nI will read the CSS."
    results = [m.content for m in steps[-1].state if m.role == "tool"]
    assert results == ["<tool_use_error>File does not exist.</tool_use_error>",
                       "Error: ls: cannot access 'static': No such file or directory",
                       "Error: cat: app.css: No such file or directory"]


def test_parallel_results_on_a_fork_are_one_response():
    steps, report = read("parallel_fork")
    # The newest line is a parentless system event: it names no trace and hides nothing.
    assert {s.trace_id for s in steps} == {steps[0].trace_id} and "/" not in steps[0].trace_id
    assert not report.noted and report.skipped == {"meta_event": 1}
    first, second = steps
    assert [c.id for c in first.action.tool_calls] == ["toolu_01G", "toolu_01R"]  # the side branch's call too
    assert view(second)[1:] == [
        ("assistant", None, ["toolu_01G", "toolu_01R"], None),
        ("tool", "tests/conftest.py\ntests/test_app.py", [], "toolu_01G"),  # in call order
        ("tool", "import pytest\n\n@pytest.fixture\ndef app(): ...", [], "toolu_01R"),
    ]
