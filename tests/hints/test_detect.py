import json

from composer_prime.chat import ChatMessage, ToolCall
from composer_prime.hints.detect import detect_errors
from composer_prime.traces import ErrorRecord


def _call(name: str, arguments: str) -> ToolCall:
    return ToolCall(id="c", name=name, arguments=arguments)


def test_tool_failures_from_verifiers_text_land_on_the_calling_turn():
    messages = [
        ChatMessage(role="user", content="fix it"),
        ChatMessage(role="assistant", tool_calls=[_call("read_file", json.dumps({"path": "a.py"}))]),
        ChatMessage(role="tool", content="Error executing tool read_file: FileNotFoundError: a.py", tool_call_id="c"),
        ChatMessage(role="assistant", tool_calls=[_call("run_tests", "{}")]),
        ChatMessage(role="tool", content="....F\nFAILED tests/test_x.py::test_y\n1 failed, 4 passed in 0.2s"),
        ChatMessage(role="assistant", tool_calls=[_call("run_tests", "{}")]),
        ChatMessage(role="tool", content="5 passed in 0.2s"),
        ChatMessage(role="assistant", content="done"),
    ]
    errors = detect_errors(messages)
    assert [(e.kind, e.turn) for e in errors] == [("tool_error", 1), ("test_failure", 3)]
    assert "FileNotFoundError" in errors[0].message and "1 failed" in errors[1].message


def test_passing_outputs_that_mention_errors_are_not_failures():
    messages = [
        ChatMessage(role="assistant", tool_calls=[_call("search", json.dumps({"q": "error"}))]),
        ChatMessage(role="tool", content="src/log.py:3: def log_error(msg):\n0 failed, 3 passed"),
    ]
    assert detect_errors(messages) == []


def test_malformed_tool_calls_in_structured_and_text_form():
    messages = [
        ChatMessage(role="user", content="go"),
        ChatMessage(role="assistant", tool_calls=[_call("edit_file", '{"path": "a.py", "old": ')]),
        ChatMessage(role="assistant", tool_calls=[_call("edit_file", "[1, 2]")]),
        ChatMessage(role="assistant", content='<tool_call>{"name": "ls", "arguments": {}}</tool_call>'),
        ChatMessage(role="assistant", content='<tool_call>{"name": "ls", "arguments": {</tool_call>'),
        ChatMessage(role="assistant", content='<tool_call>{"name": "ls"'),
    ]
    errors = detect_errors(messages)
    assert [(e.kind, e.turn) for e in errors] == [("malformed_tool_call", t) for t in (1, 2, 4, 5)]
    assert "not valid JSON" in errors[0].message and "JSON object" in errors[1].message
    assert "not closed" in errors[3].message


def test_truncation_and_wrong_answer_with_feedback_on_the_last_turn():
    messages = [ChatMessage(role="user", content="a b c"), ChatMessage(role="assistant", content="c b")]
    errors = detect_errors(messages, truncated=True, reward=0.5, wrong_answer_below=1.0,
                           feedback="expected 'c b a', got 'c b'")
    assert [(e.kind, e.turn) for e in errors] == [("format_violation", 1), ("wrong_answer", 1)]
    assert errors[1].message == "expected 'c b a', got 'c b'"
    assert detect_errors(messages, reward=1.0, wrong_answer_below=1.0) == []
    assert detect_errors(messages, reward=0.2) == []  # no threshold: the reward alone marks nothing


def test_environment_records_win_over_detected_ones():
    messages = [
        ChatMessage(role="assistant", tool_calls=[_call("run", "{}")]),
        ChatMessage(role="tool", content="error: exit code 2"),
    ]
    own = ErrorRecord(kind="tool_error", turn=0, message="run: sandbox refused the command")
    assert detect_errors(messages, env_errors=[own]) == [own]


def test_the_error_reply_to_a_malformed_call_is_not_counted_again():
    messages = [
        ChatMessage(role="user", content="go"),
        ChatMessage(role="assistant", content='<tool_call>{"name": "ls", "arguments": {</tool_call>'),
        ChatMessage(role="tool", content="error: the tool call is not valid JSON"),
        ChatMessage(role="assistant", tool_calls=[_call("nope", "{}")]),
        ChatMessage(role="tool", content="error: unknown tool 'nope'"),
    ]
    env = [ErrorRecord(kind="malformed_tool_call", turn=3, message="unknown tool 'nope'")]
    assert [(e.kind, e.turn) for e in detect_errors(messages, env_errors=env)] == [
        ("malformed_tool_call", 1), ("malformed_tool_call", 3)]
