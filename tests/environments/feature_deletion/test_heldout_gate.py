"""Red team of issue 28: a table of the visible answers plus a fallback answer was paid a share of the held-out
checks (inflection `ordinal`: the table + `int(number)` + "th" 0.962, no table at all 0.672; 48 of its 53 held-out
checks were `raises ValueError`). Each test fails while such an attack is paid."""

from __future__ import annotations

import json

from feature_deletion.behaviour import Verdict
from feature_deletion.builder.deletions import STUB
from feature_deletion.rollout import ToolSession
from feature_deletion.task import load_rows
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


def test_tasks_whose_held_out_checks_one_answer_covers_leave_the_task_set():
    rows, problems = load_rows(DEFAULT_TASKS)
    assert not problems and not {r.id for r in rows} & set(ONE_ANSWER)
    report = json.loads(DEFAULT_TASKS.with_name("tasks.checks.json").read_text())
    assert {t: report["dropped_tasks"].get(t) for t in ONE_ANSWER} == dict.fromkeys(ONE_ANSWER, "heldout_one_answer")
    assert report["kept"] == len(rows) and report["reasons"]["heldout_one_answer"] == 9  # and MRUCache.popitem:def


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
