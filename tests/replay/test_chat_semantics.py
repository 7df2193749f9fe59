"""The OpenAI chat-semantics validator, then every state every ingester produces from the ingester
test data of this suite (the real-format files, the per-defect Claude Code and Codex sessions, and the
damaged variants test_ingest builds), read by the readers themselves, before `ingest` filters anything."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_ingest import (
    damaged_claude_code, damaged_composer_prime, damaged_openai_chat, damaged_verifiers, rollouts,
)

from composer_prime.chat import Action
from composer_prime.chat import ChatMessage, ToolCall
from composer_prime.replay.chat_semantics import StepChecker, step_violations, violations
from composer_prime.replay.ingest import READERS, files_of
from composer_prime.replay.steps import IngestReport, Step
from composer_prime.traces import write_traces

DATA = Path(__file__).parent / "data"
FORMATS = {"claude_code_session.jsonl": "claude-code", "claude_code": "claude-code", "codex": "codex",
           "openai_chat_log.jsonl": "openai-chat", "verifiers_traces.jsonl": "verifiers"}


def user(text="hi"):
    return ChatMessage(role="user", content=text)


def calls(*ids):
    return ChatMessage(role="assistant", tool_calls=[ToolCall(id=i, name="f") for i in ids])


def result(call_id):
    return ChatMessage(role="tool", tool_call_id=call_id, content="ok")


@pytest.mark.parametrize(("messages", "expected"), [
    ([user(), calls("a", "b"), result("b"), result("a"), user()], []),
    ([user(), result("a")], ["orphan_tool_message at 1"]),
    ([user(), calls("a"), user(), result("a")], ["unanswered_tool_call at 1", "orphan_tool_message at 3"]),
    ([user(), calls("a"), result("a"), result("a")], ["duplicate_tool_message at 3"]),
    ([user(), calls("a"), result("a"), calls("a"), result("a")],
     ["duplicate_tool_call_id at 3", "duplicate_tool_message at 4"]),
    ([user(), calls("a", "b"), result("a")], ["unanswered_tool_call at 1"]),
    ([user(), calls(None)], ["tool_call_without_id at 1"]),
    ([user(), calls("a"), result("b")], ["orphan_tool_message at 2", "unanswered_tool_call at 1"]),
])
def test_violations(messages, expected):
    assert [v.split(":")[0] for v in violations(messages)] == expected


def ingester_data(tmp_path: Path) -> list[tuple[Path, str]]:
    files = [(f, FORMATS[f.relative_to(DATA).parts[0]]) for f in files_of(DATA)
             if f.relative_to(DATA).parts[0] in FORMATS]
    builders = {"claude-code": damaged_claude_code, "openai-chat": damaged_openai_chat, "verifiers": damaged_verifiers,
                "composer-prime": damaged_composer_prime}
    for fmt, build in builders.items():
        (tmp_path / fmt).mkdir()
        files.append((build(tmp_path / fmt), fmt))
    return files + [(write_traces(tmp_path / "clean", 0, rollouts(3)), "composer-prime")]


def test_every_state_of_every_ingester_is_valid(tmp_path):
    data = ingester_data(tmp_path)
    assert {fmt for _, fmt in data} == set(READERS)  # every ingester has data here
    assert len([f for f, _ in data if "claude_code" in f.parts]) >= 9
    checked = 0
    for path, fmt in data:
        steps = READERS[fmt](path, IngestReport())
        assert steps, path
        checker = StepChecker()  # what ingest runs: it must agree with the whole check on every step
        for step in steps:
            assert step_violations(step) == checker.violations(step) == [], (path.name, step.trace_id, step.index)
            checked += 1
    assert checked >= 60


def test_incremental_checker_agrees_with_the_whole_check():
    u, c, r = user(), calls("a"), result("a")
    late = calls("a")  # reuses an id: only the longest state breaks a rule
    states = [[u], [u, c, r], [u, c, r, user("more"), late, result("a")], [user("other trace start"), c, r]]

    def step(state, trace="t"):
        return Step(source="s", format="f", trace_id=trace, index=len(state), state=state,
                    action=Action(content="x"))

    checker = StepChecker()
    got = [checker.violations(step(state)) for state in states]
    assert got == [step_violations(step(state)) for state in states]
    assert [len(v) for v in got] == [0, 0, 2, 0]  # the last state does not extend the one before: checked whole
