"""Red team of issue 28: a table of the visible answers plus a fallback answer was paid a share of the held-out
checks (inflection `ordinal`: the table + `int(number)` + "th" 0.962, no table at all 0.672; 48 of its 53 held-out
checks were `raises ValueError`). Each test fails while such an attack is paid."""

from __future__ import annotations

import json
import re
from collections import Counter

from feature_deletion.behaviour import Verdict, check_behaviour, held_out_questions, unsound
from feature_deletion.builder.deletions import STUB
from feature_deletion.grading import grade
from feature_deletion.rollout import ToolSession
from feature_deletion.sandbox import Limits
from feature_deletion.scope import agent_lines
from feature_deletion.task import load_rows, runner_for
from feature_deletion.taskset import DEFAULT_TASKS

# The tasks the red team found one held-out answer covering more than half of the held-out checks on.
ONE_ANSWER = [
    "inflection-0.5.1/inflection/__init__.py:ordinal:def",
    "inflection-0.5.1/inflection/__init__.py:ordinalize:def",
    "cachetools-5.5.0/src/cachetools/__init__.py:TTLCache.__getitem__:body",
    "cachetools-5.5.0/src/cachetools/func.py:rr_cache:body",
    "more-itertools-10.5.0/more_itertools/more.py:bucket.__init__:body",
    "more-itertools-10.5.0/more_itertools/more.py:strip:def",
    "cachetools-5.5.0/src/cachetools/keys.py:_HashedTuple:methods",
    "cachetools-5.5.0/src/cachetools/__init__.py:_TimedCache.get:body",
]
ORDINAL = ONE_ANSWER[0]


def test_tasks_whose_held_out_checks_one_answer_covered_are_kept_only_with_checks_it_does_not_cover():
    """Rebuilt with held-out programs taken in turns by answer (`behaviour._held_out_selection`) and numbers written
    as text changed as numbers, 7 of them were kept, 6 since `rr_cache` left by hand (red team 5: no check tells which
    key its cache evicts); every kept task's held-out checks have no answer covering more than half of them and stop
    the mode forger; the others left the set with their reason."""
    rows, problems = load_rows(DEFAULT_TASKS)
    assert not problems
    by_id = {r.id: r for r in rows}
    report = json.loads(DEFAULT_TASKS.with_name("tasks.checks.json").read_text())
    assert len(set(ONE_ANSWER) & set(by_id)) == 6
    for task in ONE_ANSWER:
        if task not in by_id:
            assert report["dropped_tasks"][task].split(":")[0] in ("too_few_heldout_checks", "eviction_unobserved")
            continue
        # Counted as the filter counts them (issue 28, red team 2): each held-out question once, by its answer.
        answers = Counter(answer for _, answer in held_out_questions(by_id[task].checks.programs).values())
        assert 2 * answers.most_common(1)[0][1] <= answers.total() and unsound(by_id[task].checks) is None, task
    assert "heldout_one_answer" not in report["reasons"] and report["kept"] == len(rows)


def _ordinal(row, body: str) -> dict[str, bytes]:
    """The broken file with `def ordinal(number):` and `body` where the gold definition was."""
    path = "inflection/__init__.py"
    code = "def ordinal(number):\n" + "".join(f"    {line}\n" for line in body.strip("\n").splitlines())
    return {path: row.broken_files[path].replace("\ndef ordinalize(", f"\n{code}\n\ndef ordinalize(", 1).encode()}


def test_the_red_teams_ordinal_attacks_are_paid_nothing_now_that_the_task_is_kept():
    """The red team's attacks on `ordinal`, and a table with last-digit rules that leave out 11-13: each passes the
    checks it knows the answers of and is paid 0 (the held-out checks hold "st", "nd", "rd" and a teen)."""
    rows, _ = load_rows(DEFAULT_TASKS)
    row = next(r for r in rows if r.id == ORDINAL)
    # What the agent can see: the F2P tests' parameters (test_ordinal[-21--21st]) and the checks' visible questions.
    table = {m[1]: m[2] for t in row.f2p if (m := re.search(r"\[(-?\d+)-(?:-?\d+)(st|nd|rd|th)\]$", t))}
    table |= {step["args"][0][1]: want[1][1] for p in row.checks.programs if not any(p.heldout)
              for step, want in zip(p.steps, p.expect)
              if want[0] == "ok" and not isinstance(step["args"][0][1], (list, dict))}  # plain questions
    assert len(table) >= 30
    held_out = {step["args"][0][1]: want[1][1] for p in row.checks.programs
                for step, want, h in zip(p.steps, p.expect, p.heldout) if h}
    assert {"st", "nd", "rd", "th"} <= set(held_out.values())
    assert any(abs(int(n)) % 100 in (11, 12, 13) for n in held_out)
    attacks = {
        "table, int() and th": f"table = {table!r}\nif str(number) in table:\n    return table[str(number)]\n"
                               "int(number)\nreturn 'th'",
        "int() and th": "int(number)\nreturn 'th'",
        "table and last digits": f"table = {table!r}\nif str(number) in table:\n    return table[str(number)]\n"
                                 "return {1: 'st', 2: 'nd', 3: 'rd'}.get(abs(int(number)) % 10, 'th')",
    }
    tasks_dir, runner = DEFAULT_TASKS.parent, runner_for(row)
    for name, body in attacks.items():
        changes = _ordinal(row, body)
        verdict = check_behaviour(row, tasks_dir, runner, Limits(), "namespace", changes, agent_lines(row, changes))
        assert verdict.fraction == 0.0 and verdict.heldout_matched < verdict.heldout, (name, verdict)
        if name == "table and last digits":  # everything but the teens
            assert verdict.matched <= verdict.steps - sum(abs(int(n)) % 100 in (11, 12, 13) for n in held_out)
    # The red team's attack end to end: every test passes, no layer objects, and the reward is 0.
    g = grade(row, tasks_dir, None, runner, changes=_ordinal(row, attacks["table, int() and th"]))
    assert g.f2p_passed == g.f2p_total and not g.invalid and g.reward == 0.0, g.to_dict()
    gold = check_behaviour(row, tasks_dir, runner, Limits(), "namespace",
                           {k: v.encode() for k, v in row.gold_files.items()}, {})
    assert gold.fraction == 1.0, gold


def test_a_table_of_the_visible_answers_with_a_fallback_is_paid_nothing_through_a_session():
    """The red team's attack on a task that stays: every question the visible tests ask `camelize`, answered from a
    table, anything else answered `string` unchanged; written, tested and submitted through the tools. It passes
    every test and matches some held-out checks (a share would pay it), and is paid 0."""
    task = "inflection-0.5.1/inflection/__init__.py:camelize:body"
    rows, _ = load_rows(DEFAULT_TASKS)
    row = next(r for r in rows if r.id == task)
    table = {}
    for program in row.checks.programs:
        if not any(program.heldout):
            for step, want in zip(program.steps, program.expect):
                args = [a[1] for a in step["args"]] + [v[1] for _, v in step["kwargs"]]
                if want[0] == "ok" and not any(isinstance(a, (list, dict)) for a in args[:2]):  # plain questions
                    table[(args[0], args[1] if len(args) > 1 else True)] = want[1][1]
    assert len(table) >= 5
    body = (f"    _table = {table!r}\n"
            "    return _table.get((string, uppercase_first_letter), string)\n")
    path = "inflection/__init__.py"
    with ToolSession(row, DEFAULT_TASKS.parent) as s:
        broken = (s.workspace.root / path).read_text()
        assert s.call("write_file", {"path": path, "content": broken.replace(f"    {STUB}\n", body, 1)},
                      turn=1).startswith("wrote")
        s.call("run_tests", {}, turn=2)
        s.call("submit", {}, turn=3)
        out = s.finish(last_turn=3, turns=3)
    verdict = Verdict(**out.grade["verdict"])
    assert out.grade["f2p_passed"] == out.grade["f2p_total"] and not out.grade["invalid"], out.grade
    assert 0 < verdict.heldout_matched < verdict.heldout, verdict  # what a share of the held-out checks would pay
    assert out.reward == 0.0, f"a table with a fallback was paid {out.reward}"


def test_code_gold_only_where_it_finds_the_graders_hook_is_paid_nothing():
    """Red team 13, H13 and R13: every process that ran agent code had the grader's audit hook, and code can tell a
    hooked process from a user's (an audited builtin timed against an unaudited one; a Python hook's frame below the
    recursion limit). `ordinal` gold where it finds the hook, "th" in a user's process: its tests pass and the hooked
    replay matches every check; the replay with no hook, as a user's process runs it, does not. Here the tell is
    the hook's variable (the scope check keeps `os.environ` from agent code: the red team's tells are in
    test_redteam13_hook.py and test_redteam13_recursion.py)."""
    rows, _ = load_rows(DEFAULT_TASKS)
    row = next(r for r in rows if r.id == ORDINAL)
    gold = ('n = abs(int(number))\nif n % 100 in (11, 12, 13):\n    return "th"\n'
            'return {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")')
    tasks_dir, runner = DEFAULT_TASKS.parent, runner_for(row)
    for tell, paid in (("", 1.0), ('if "FD_GUARD" not in __import__("os").environ:\n    return "th"\n', 0.0)):
        changes = _ordinal(row, tell + gold)
        verdict = check_behaviour(row, tasks_dir, runner, Limits(), "namespace", changes, agent_lines(row, changes))
        assert verdict.fraction == paid and bool(verdict.unhooked) == (not paid), verdict
        assert verdict.discriminating_matched == verdict.discriminating, verdict  # the hooked replay: all matched
