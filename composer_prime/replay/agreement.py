"""Comparing actions, and deciding from N teachers' answers whether a step yields a pair.

Canonical form (what "the same action" means):
- an action with tool calls is its calls, each `name` plus its arguments parsed and re-serialised
  with sorted keys and no whitespace (so `{"b": 1, "a": 2}` == `{ "a":2,"b":1 }`); the calls are
  sorted, because parallel calls have no order; the text beside calls ("Let me check") is ignored.
  Arguments that are not valid JSON are compared as their whitespace-collapsed text;
- otherwise its text: reasoning (`<think>...</think>`) removed, whitespace collapsed, optionally
  lowercased.
Similarity: with `similarity < 1`, two canonical forms count as the same action when difflib's
ratio reaches it (tool calls only match tool calls of the same names).

Decision: the teachers' answers are clustered by sameness (greedy, in teacher order, each answer
joining the first cluster whose first member it matches). The largest cluster that is not the
student's action (ties: the earlier one) is the consensus; a pair is kept when it has >= k members,
whatever the other teachers said (the issue's rule: k of N agree on an action other than the student's).
chosen = the consensus cluster's first answer, rejected = the student's action.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from difflib import SequenceMatcher

from composer_prime.chat import Action, ToolCall

_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL)
_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)


def _normalise_arguments(arguments: str) -> object:
    try:
        return json.loads(arguments)
    except (json.JSONDecodeError, TypeError):
        return " ".join(str(arguments).split())


def canonical(action: Action, lowercase: bool = False) -> str:
    if action.tool_calls:
        calls = sorted(
            json.dumps({"name": c.name, "arguments": _normalise_arguments(c.arguments)},
                       sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            for c in action.tool_calls
        )
        return "tool:" + "|".join(calls)
    text = " ".join(_THINK.sub("", action.content or "").split())
    return "text:" + (text.lower() if lowercase else text)


def parse_text_action(text: str | None) -> Action:
    """An action from a text-only model: `<think>` removed, Hermes `<tool_call>{...}</tool_call>` blocks
    (what `render_tool_calls` writes and Qwen/Hermes templates emit) turned into tool calls."""
    text = _THINK.sub("", text or "")
    calls = []
    for body in _TOOL_CALL.findall(text):
        try:
            parsed = json.loads(body)
        except json.JSONDecodeError:
            continue
        if isinstance(parsed, dict) and isinstance(parsed.get("name"), str):
            arguments = parsed.get("arguments", {})
            calls.append(ToolCall(id=f"call_{len(calls)}", name=parsed["name"],
                                  arguments=arguments if isinstance(arguments, str) else json.dumps(arguments)))
    rest = _TOOL_CALL.sub("", text).strip() if calls else text.strip()
    return Action(content=rest or None, tool_calls=calls)


def same(a: str, b: str, similarity: float = 1.0) -> bool:
    if a == b:
        return True
    if similarity >= 1.0 or a.split(":", 1)[0] != b.split(":", 1)[0]:
        return False
    if a.startswith("tool:"):
        names = lambda s: [json.loads(c)["name"] for c in s[5:].split("|") if c.startswith("{")]  # noqa: E731
        try:
            if names(a) != names(b):
                return False
        except (json.JSONDecodeError, KeyError):
            return False
    return SequenceMatcher(None, a, b, autojunk=False).ratio() >= similarity


@dataclass
class Decision:
    chosen: int | None
    """Index (into the answers given) of the consensus action when a pair is kept, else None."""
    members: list[int]
    """Indices of the answers in the largest cluster that differs from the student (kept or not)."""
    votes: int
    """Size of the largest cluster that differs from the student's action."""
    student_votes: int
    """Answers that match the student's action."""


def decide(answers: list[str | None], student: str, k: int, similarity: float = 1.0) -> Decision:
    """`answers`: canonical forms (None for a failed call), in teacher order."""
    clusters: list[list[int]] = []
    for i, answer in enumerate(answers):
        if answer is None:
            continue
        for cluster in clusters:
            if same(answers[cluster[0]], answer, similarity):
                cluster.append(i)
                break
        else:
            clusters.append([i])
    student_votes = sum(1 for a in answers if a is not None and same(a, student, similarity))
    others = [c for c in clusters if not same(answers[c[0]], student, similarity)]
    best_other = max(others, key=len, default=[])  # max keeps the first of equal sizes: the earlier teachers
    kept = best_other if len(best_other) >= k else None
    return Decision(chosen=kept[0] if kept else None, members=best_other, votes=len(best_other),
                    student_votes=student_votes)
