"""Multi-turn pieces on a real ChatML tokenizer: Hermes tool-call parsing and exact token extension."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from transformers import AutoTokenizer

from composer_prime.rollout.conversation import TemplateMismatch, TokenConversation, decode, encode, render
from composer_prime.tool_calls import parse_turn, tool_names

WARMSTART = Path(__file__).resolve().parents[2] / "configs/quickstart/warmstart"
TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}},
         {"type": "function", "function": {"name": "submit", "parameters": {"type": "object"}}}]
PROMPT = [{"role": "system", "content": "Fix the repo."}, {"role": "user", "content": "Task id: t1\n\nGo."}]


@pytest.fixture
def tokenizer():
    return AutoTokenizer.from_pretrained(WARMSTART)


def test_well_formed_calls_are_parsed_in_order_and_removed_from_the_text():
    text = ('Let me look.\n<tool_call>{"name": "read_file", "arguments": {"path": "a.py"}}</tool_call>\n'
            '<tool_call>{"name": "submit", "arguments": "{}"}</tool_call>')
    turn = parse_turn(text, tool_names(TOOLS), id_prefix="call_3")
    assert turn.content == "Let me look."
    assert [(p.call.id, p.call.name, json.loads(p.call.arguments), p.problem) for p in turn.calls] == [
        ("call_3_0", "read_file", {"path": "a.py"}, None), ("call_3_1", "submit", {}, None)]
    assert parse_turn("no calls here").calls == []


@pytest.mark.parametrize("text, problem", [
    ('<tool_call>{"name": "read_file", "arguments": {not json}</tool_call>', "not valid JSON"),
    ('<tool_call>{"name": "frobnicate", "arguments": {}}</tool_call>', "unknown tool 'frobnicate'"),
    ('<tool_call>{"name": "read_file", "arguments": {}}', "not closed"),
    ('<tool_call>{"arguments": {}}</tool_call>', '"name"'),
    ('<tool_call>{"name": "read_file", "arguments": [1]}</tool_call>', "must be a JSON object"),
])
def test_malformed_calls_keep_their_problem(text, problem):
    (parsed,) = parse_turn(text, tool_names(TOOLS)).calls
    assert parsed.problem is not None and problem in parsed.problem


def test_an_unreadable_block_stays_in_the_text_a_named_one_does_not():
    bad = '<tool_call>{"name": oops</tool_call>'
    assert parse_turn("a " + bad, {"read_file"}).content == "a " + bad
    unknown = parse_turn('<tool_call>{"name": "nope", "arguments": {}}</tool_call>', {"read_file"})
    assert unknown.content is None and unknown.calls[0].call.name == "nope"


def _turn(tokenizer, text: str) -> list[int]:
    return encode(tokenizer, text) + [tokenizer.eos_token_id]


def test_context_tokens_extend_the_sampled_sequence_exactly(tokenizer):
    conv = TokenConversation(tokenizer, PROMPT, TOOLS)
    assert "<tools>" in conv.messages[0]["content"] and conv.offset == 0  # ChatML has no tool support
    prompt = list(conv.ids)
    assert decode(tokenizer, prompt) == render(tokenizer, conv.messages, None)

    # A sampled turn in a non-canonical tokenisation (one token per byte): it must be kept as sampled.
    text = '<tool_call>{"name": "read_file", "arguments": {"path": "a.py"}}</tool_call>'
    sampled = [t for ch in text for t in encode(tokenizer, ch)] + [tokenizer.eos_token_id]
    assert sampled[:-1] != encode(tokenizer, text)
    assert conv.add_turn(sampled, [-0.5] * len(sampled), index=2, stop_ids={tokenizer.eos_token_id}) == text
    added = conv.add_context([{"role": "tool", "content": "print('hi')"}])
    second = _turn(tokenizer, "done")
    conv.add_turn(second, [-1.0] * len(second), index=4, stop_ids={tokenizer.eos_token_id})

    assert conv.ids[: len(prompt)] == prompt and conv.prompt_len == len(prompt)
    assert conv.ids[len(prompt) : len(prompt) + len(sampled)] == sampled
    assert conv.spans == {2: (len(prompt), len(prompt) + len(sampled)),
                          4: (len(conv.ids) - len(second), len(conv.ids))}
    assert conv.sampled == [True] * len(sampled) + [False] * added + [True] * len(second)
    assert conv.logprobs == [-0.5] * len(sampled) + [0.0] * added + [-1.0] * len(second)
    # The text of the whole sequence is the template's rendering of the whole conversation.
    full = render(tokenizer, conv.messages, None, add_generation_prompt=False)
    assert decode(tokenizer, conv.ids) + "\n" == full
    context = decode(tokenizer, conv.ids[conv.spans[2][1] : conv.spans[4][0]])
    assert context == "\n<|im_start|>tool\nprint('hi')<|im_end|>\n<|im_start|>assistant\n"


def test_a_turn_cut_at_max_tokens_is_closed_by_the_template(tokenizer):
    conv = TokenConversation(tokenizer, PROMPT, TOOLS)
    cut = encode(tokenizer, '<tool_call>{"name": "read')
    assert conv.add_turn(cut, [0.0] * len(cut), index=2, stop_ids={tokenizer.eos_token_id}) == \
        '<tool_call>{"name": "read'
    conv.add_context([{"role": "tool", "content": "error: not closed"}])
    assert decode(tokenizer, conv.ids[conv.spans[2][1] :]).startswith("<|im_end|>\n<|im_start|>tool\n")


def test_a_template_that_rewrites_earlier_turns_is_refused(tokenizer):
    # Drops every assistant turn but the last, as thinking templates drop past reasoning.
    tokenizer.chat_template = (
        "{%- for m in messages %}{%- if m['role'] != 'assistant' or loop.last %}"
        "{{- '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{%- endif %}{%- endfor %}"
        "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}")
    conv = TokenConversation(tokenizer, PROMPT, TOOLS)
    conv.add_turn(_turn(tokenizer, "hi"), [0.0] * 2, index=2, stop_ids={tokenizer.eos_token_id})
    with pytest.raises(TemplateMismatch, match="renders the conversation differently"):
        conv.add_context([{"role": "tool", "content": "x"}])


def test_a_template_with_tool_support_gets_the_schemas_itself(tokenizer):
    tokenizer.chat_template = (
        "{%- if tools %}{{- '<|im_start|>system\\nTOOLS ' + (tools | length | string) + '<|im_end|>\\n' }}{%- endif %}"
        "{%- for m in messages %}{{- '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}"
        "{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}")
    conv = TokenConversation(tokenizer, [{"role": "user", "content": "Task id: t1"}], TOOLS)
    assert conv.messages == [{"role": "user", "content": "Task id: t1"}] and conv.offset == 0
    assert decode(tokenizer, conv.ids).startswith("<|im_start|>system\nTOOLS 2<|im_end|>")


def test_a_hint_site_on_turn_i_scores_that_turn_after_everything_before_it(tokenizer):
    import asyncio

    from composer_prime.configs.hints import HintsConfig
    from composer_prime.hints.writer import TemplateHintWriter
    from composer_prime.chat import ChatMessage, ToolCall
    from composer_prime.rollout.envs import Example
    from composer_prime.orchestrator.hint_sites import build_hint_sites, rollouts_of
    from composer_prime.rollout.multi_turn import ToolGroup, ToolRollout
    from composer_prime.traces import ErrorRecord

    conv = TokenConversation(tokenizer, PROMPT, TOOLS)
    first = _turn(tokenizer, '<tool_call>{"name": "read_file", "arguments": {"path": "x"}}</tool_call>')
    conv.add_turn(first, [-0.1] * len(first), index=2, stop_ids={tokenizer.eos_token_id})
    conv.add_context([{"role": "tool", "content": "error: x: no such file or directory"}])
    second = _turn(tokenizer, '<tool_call>{"name": "submit", "arguments": {}}</tool_call>')
    conv.add_turn(second, [-0.2] * len(second), index=4, stop_ids={tokenizer.eos_token_id})
    messages = [ChatMessage(**m) for m in PROMPT] + [
        ChatMessage(role="assistant", tool_calls=[ToolCall(id="c0", name="read_file", arguments='{"path": "x"}')]),
        ChatMessage(role="tool", content="error: x: no such file or directory", tool_call_id="c0"),
        ChatMessage(role="assistant", tool_calls=[ToolCall(id="c1", name="submit")]),
        ChatMessage(role="tool", content="submitted", tool_call_id="c1"),
    ]
    rollout = ToolRollout(messages=messages, tools=TOOLS, conversation=conv, reward=1.0, metrics={},
                          errors=[ErrorRecord(kind="tool_error", turn=2, message="x: no such file or directory")],
                          weight_version=0, stop_reason="done", truncated=False, turns=2)
    group = ToolGroup(example=Example(id="train/0", prompt=PROMPT, answer=None, task=None), rollouts=[rollout],
                      total_s=0.0)
    (only,) = rollouts_of(1, 0, group, "env", HintsConfig(enabled=True))
    assert [(e.kind, e.turn) for e in only.trace.errors] == [("tool_error", 2)]
    assert json.loads(only.trace.tools) == TOOLS
    (site,) = asyncio.run(build_hint_sites([only], HintsConfig(enabled=True), TemplateHintWriter(), tokenizer,
                                           client=None, temperature=1.0))
    start, end = conv.spans[2]
    assert site.student_prompt_ids == conv.ids[:start] == conv.ids[: conv.prompt_len]
    assert site.completion_ids == first and site.completion_logprobs == pytest.approx([-0.1] * len(first))
    teacher = decode(tokenizer, site.teacher_prompt_ids)
    assert teacher.startswith(decode(tokenizer, conv.ids[: conv.prompt_len - 3]))  # same context up to the turn
    assert "<|im_start|>user\nHint: The tool call in your next step fails" in teacher
    assert teacher.endswith("<|im_start|>assistant\n")

    # An error on the second turn: the student context is the prompt, turn 1 as sampled and the tool reply.
    rollout.errors = [ErrorRecord(kind="wrong_answer", turn=4, message="tests fail")]
    messages[3] = ChatMessage(role="tool", content="1  x = 1", tool_call_id="c0")  # no longer reads as an error
    (later,) = rollouts_of(1, 0, group, "env", HintsConfig(enabled=True, wrong_answer_below=None))
    (site,) = asyncio.run(build_hint_sites([later], HintsConfig(enabled=True), TemplateHintWriter(), tokenizer,
                                           client=None, temperature=1.0))
    assert site.student_prompt_ids == conv.ids[: conv.spans[4][0]] and site.completion_ids == second
    assert decode(tokenizer, site.teacher_prompt_ids).count('"name": "read_file"') == 2  # tools prompt + turn 1


class _GraderThatFallsOver:
    """A tool environment of someone else's whose grading raises: only `submit`, and `finish` fails."""

    tools = TOOLS

    def __init__(self):
        self.done = self.closed = False

    def call(self, name, arguments, turn):
        self.done = name == "submit"
        return "submitted"

    def finish(self, last_turn, turns):
        raise RuntimeError("the grader fell over")

    def close(self):
        self.closed = True


def test_a_rollout_whose_grading_raises_scores_zero_with_its_error(tokenizer):
    """One rollout's broken grading must not end the run: reward 0, a `grading_error` on its last turn, and the
    session still closed. The policy is feature-deletion's scripted one (it submits at once)."""
    import asyncio
    from types import SimpleNamespace

    from composer_prime.configs.inference import ScriptedBackendConfig
    from composer_prime.configs.rollout import SamplingConfig
    from composer_prime.configs.shared import ModelConfig
    from composer_prime.inference.scripted import ScriptedBackend
    from composer_prime.rollout.envs import Environment, Example
    from composer_prime.rollout.multi_turn import tool_rollout
    from feature_deletion.task import load_rows
    from feature_deletion.taskset import DEFAULT_TASKS

    row = load_rows(DEFAULT_TASKS)[0][0]
    session = _GraderThatFallsOver()
    prompt = [PROMPT[0], {"role": "user", "content": f"Task id: {row.id}\n\nGo."}]
    example = Example(id="train/0", prompt=prompt, answer=None, task=SimpleNamespace(open_session=lambda: session))
    env = Environment("falls-over", {"train": [example], "eval": []})
    sampler = ScriptedBackend(ModelConfig(path=str(WARMSTART)), ScriptedBackendConfig(script="noop"))
    rollout = asyncio.run(tool_rollout(sampler, env, tokenizer, example, SamplingConfig(max_tokens=256),
                                       max_turns=3, seq_len=4096))
    assert rollout.reward == 0.0 and rollout.stop_reason == "done" and session.closed
    assert [(e.kind, e.turn) for e in rollout.errors] == [("grading_error", 2)]
    assert "RuntimeError: the grader fell over" in rollout.errors[0].message
