"""Canonical forms and the k-of-N decision."""

from __future__ import annotations

import json

from composer_prime.chat import Action, ToolCall
from composer_prime.replay.agreement import canonical, decide, parse_text_action, same


def call(name: str, **arguments) -> ToolCall:
    return ToolCall(id="x", name=name, arguments=json.dumps(arguments))


def test_tool_calls_compare_by_name_and_normalised_arguments():
    a = Action(content="Let me look.", tool_calls=[ToolCall(name="Read", arguments='{"path": "a.py", "limit": 10}')])
    b = Action(tool_calls=[ToolCall(id="other", name="Read", arguments='{ "limit":10,\n"path":"a.py"}')])
    assert canonical(a) == canonical(b)
    assert canonical(a) != canonical(Action(tool_calls=[call("Read", path="b.py", limit=10)]))
    assert canonical(a) != canonical(Action(tool_calls=[call("Write", path="a.py", limit=10)]))
    # parallel calls: order does not matter
    assert canonical(Action(tool_calls=[call("A", x=1), call("B", y=2)])) == canonical(
        Action(tool_calls=[call("B", y=2), call("A", x=1)]))
    # malformed arguments still compare (as whitespace-collapsed text)
    assert canonical(Action(tool_calls=[ToolCall(name="A", arguments="{x: 1")])) == canonical(
        Action(tool_calls=[ToolCall(name="A", arguments="{x:  1")]))


def test_text_normalisation_and_similarity():
    assert canonical(Action(content="  c  b\n a ")) == canonical(Action(content="<think>hmm</think>c b a"))
    assert canonical(Action(content="C B A")) != canonical(Action(content="c b a"))
    assert canonical(Action(content="C B A"), lowercase=True) == canonical(Action(content="c b a"), lowercase=True)
    long_a, long_b = "text:" + "the answer is 42 " * 5, "text:" + "the answer is 42 " * 5 + "!"
    assert not same(long_a, long_b) and same(long_a, long_b, similarity=0.9)
    assert not same("text:abc", "tool:abc", similarity=0.1)


def test_parse_text_action_reads_hermes_tool_calls():
    action = parse_text_action('<think>x</think>Sure.\n<tool_call>{"name": "Bash", "arguments": {"cmd": "ls"}}</tool_call>')
    assert action.content == "Sure." and action.tool_calls[0].name == "Bash"
    assert json.loads(action.tool_calls[0].arguments) == {"cmd": "ls"}
    assert parse_text_action("c b a").content == "c b a"


def test_decide_k_of_n():
    s = "text:student"
    # 2 of 3 agree on something else -> pair, chosen is the first of them
    d = decide(["text:x", s, "text:x"], s, k=2)
    assert d.chosen == 0 and d.members == [0, 2] and d.student_votes == 1
    # all different -> no pair at k=2, a pair at k=1
    assert decide(["text:x", "text:y", "text:z"], s, k=2).chosen is None
    assert decide(["text:x", "text:y", "text:z"], s, k=1).chosen == 0
    # agreeing with the student is no pair, failed calls do not vote
    assert decide([s, s, None], s, k=2).chosen is None
    assert decide(["text:x", None, None], s, k=2).votes == 1
    # similarity clusters near-identical answers
    assert decide(["text:the cat sat", "text:the cat sat.", s], s, k=2, similarity=0.9).chosen == 0
