"""Held-out inputs (feature_deletion.behaviour.variants) that reach what the red team's paid wrong rebuilds got
wrong (FINDINGS.md F5): a test's clock on another schedule (cachetools' expiry), the items of an iterator handed over
as a list (`ichunked` without `iter()`), arguments left out so that a default answers (`lfu_cache()`, `juxt(f)`),
and the tests' own argument-free calls asked at the end of a changed program (`repr`, `popitem`).

The generator's operators are checked here on plain data (no sandbox); that the rebuilt bundled tasks pay those
wrong rebuilds nothing is `test_the_red_teams_wrong_rebuilds_fail_the_rebuilt_checks` (sandbox, slow)."""

from __future__ import annotations

import json
import random

import pytest
from feature_deletion import mutation
from feature_deletion.behaviour import PROBES, _clock, _probes, _reshape, check_behaviour, mutate, variants
from feature_deletion.sandbox import Limits
from feature_deletion.scope import agent_lines
from feature_deletion.task import load_rows, runner_for

TIMER = ["callback", {"calls": [[[[], []], ["int", t]] for t in (0, 0, 1, 1, 2)], "names": {}}]


def _times(callback: list) -> list:
    return [a[1] for _, a in callback[1]["calls"]]


def test_a_tests_clock_runs_on_another_schedule_that_still_only_moves_forward():
    pool = {"int": [600, 2]}
    schedules = set()
    for seed in range(60):
        changed = _clock(TIMER[1], random.Random(seed), pool)
        assert changed is not None and changed[0] == "callback"
        assert all(key == [[], []] for key, _ in changed[1]["calls"])
        times = [float(t) for t in _times(changed)]
        assert times == sorted(times) and times != [0, 0, 1, 1, 2]
        schedules.add(tuple(times))
    # Steps and jumps of 1, of the numbers the tests pass (a ttl of 600 or 2) and of half of them.
    assert any(t[-1] - t[-2] == 300 for t in schedules) and any(600 in t or 601 in t for t in schedules)
    assert len(schedules) > 10
    # Not a clock: a callback that takes arguments, or answers what is not a number, keeps the old substitutes.
    assert _clock({"calls": [[[[["int", 1]], []], ["int", 1]]]}, random.Random(0), pool) is None
    assert _clock({"calls": [[[[], []], ["str", "x"]]]}, random.Random(0), pool) is None
    assert mutate(["callback", {"calls": [[[[["int", 1]], []], ["int", 1]]], "names": {}}], random.Random(0),
                  pool)[0] == "ref"


def test_an_iterator_the_tests_pass_is_also_handed_over_as_a_list_and_never_is_a_time():
    stream = ["stream", {"items": [["int", 1], ["int", 2], ["int", 3]], "end": True}]
    kinds = {mutate(stream, random.Random(seed), {})[0] for seed in range(40)}
    assert kinds == {"stream", "list"}
    assert ["list", stream[1]["items"]] in [mutate(stream, random.Random(s), {}) for s in range(40)]
    # An infinite ttl (cachetools' default in its tests) becomes a finite one, with its sign.
    # (Some arguments are given another type instead, `behaviour.retyped`: only the floats are asked about here.)
    def floats(value):
        made = [mutate(["float", value], random.Random(s), {}) for s in range(40)]
        return [float(m[1]) for m in made if m and m[0] == "float"]

    assert floats("inf") and set(floats("inf")) <= {0.5, 1.0, 2.0, 10.0}
    assert floats("-inf") and all(x < 0 for x in floats("-inf"))
    assert floats("nan") == []


def test_arguments_left_out_let_defaults_answer():
    shapes = set()
    for seed in range(40):
        step = {"op": "new", "args": [["int", 1], ["int", 2], ["int", 3]], "kwargs": [["maxsize", ["int", 2]]]}
        assert _reshape(step, random.Random(seed))
        shapes.add(json.dumps([step["args"], step["kwargs"]]))
    assert shapes == {json.dumps(s) for s in (
        [[["int", 1], ["int", 2], ["int", 3]], []],  # the keyword left out: its default answers (lfu_cache())
        [[["int", 1], ["int", 2]], [["maxsize", ["int", 2]]]],
        [[["int", 1]], [["maxsize", ["int", 2]]]],  # one function where the tests give three (juxt(f))
    )}
    assert not _reshape({"op": "call", "args": [], "kwargs": []}, random.Random(0))


def test_held_out_programs_end_with_the_argument_free_calls_the_tests_make_on_that_class():
    cache = ["ref", "cachetools", "TTLCache"]
    programs = [
        {"steps": [{"op": "new", "cls": cache, "args": [["int", 2]], "kwargs": [["timer", TIMER]]},
                   {"op": "method", "obj": ["slot", 0, []], "name": "__setitem__", "args": [["int", 1], ["int", 1]],
                    "kwargs": []},
                   {"op": "method", "obj": ["slot", 0, []], "name": "popitem", "args": [], "kwargs": []}]},
        {"steps": [{"op": "new", "cls": cache, "args": [["int", 3]], "kwargs": []},
                   {"op": "method", "obj": ["slot", 0, []], "name": "__repr__", "args": [], "kwargs": []},
                   {"op": "getattr", "obj": ["slot", 0, []], "name": "currsize"},
                   {"op": "method", "obj": ["slot", 0, []], "name": "get", "args": [["int", 1]], "kwargs": []}]},
    ]
    assert _probes(programs) == {json.dumps(cache): [("method", "popitem"), ("method", "__repr__"),
                                                     ("getattr", "currsize")]}
    made = variants(programs, "probes", limit=40)
    asked = {("method", "popitem"), ("method", "__repr__"), ("getattr", "currsize")}
    probed = 0
    for program, parent, site in made:
        steps, base = program["steps"], programs[parent]["steps"]
        kept = max(n for n in range(min(len(steps), len(base)) + 1)
                   if all(steps[j] == base[j] for j in range(n) if j != site))
        added = steps[kept:]
        assert len(added) <= PROBES
        assert all(s["obj"] == ["slot", 0, []] and (s["op"], s["name"]) in asked and not s.get("args")
                   for s in added), added
        probed += bool(added)
    assert probed > len(made) // 2
    # Clocks moved in some of them.
    assert any(v["steps"][0]["kwargs"] and v["steps"][0]["kwargs"][0][1] != TIMER for v, p, _ in made if p == 0)


# The red team's wrong rebuilds that the bundled checks paid 1.0 before this generator (FINDINGS.md F5), as
# mutation.mutants labels them, with what each one changed: each must now fail the verdict of its rebuilt task.
PAID = [
    ("ichunked:def", "ichunked:SDL#0", "iterable = iter(iterable)"),
    ("TLRUCache.popitem:def", "TLRUCache.popitem:SDL#1", "self.expire(time)"),
    ("TTLCache.popitem:body", "TTLCache.popitem:SDL#1", "self.expire(time)"),
    ("_TimedCache:methods", "_TimedCache.__repr__:SDL#1", "self.expire(time)"),
    ("lfu_cache:body", "lfu_cache:CRP#0", "maxsize=128"),
    ("juxt:methods", "juxt.__init__:LCR#0", "len(funcs) == 1 and (not callable(funcs[0]))"),
]


@pytest.mark.slow
@pytest.mark.parametrize("task,label,changed", PAID, ids=[p[1] for p in PAID])
def test_the_red_teams_wrong_rebuilds_fail_the_rebuilt_checks(task, label, changed):
    from pathlib import Path

    import feature_deletion

    tasks = Path(feature_deletion.__file__).parent / "data" / "tasks.jsonl.xz"
    rows, _ = load_rows(tasks)
    row = next(r for r in rows if r.id.endswith(":" + task))
    made = {m.label: m for m in mutation.mutants(row)}
    mutant = made[label]
    gold_def = mutation.definition(__import__("ast").parse(row.gold_files[mutant.file]), label.split(":")[0])
    assert changed in __import__("ast").unparse(gold_def)  # the mutant changes what the red team's did
    changes = {mutant.file: mutant.text.encode()}
    verdict = check_behaviour(row, tasks.parent, runner_for(row), Limits(), "namespace", changes,
                              agent_lines(row, changes))
    assert verdict.fraction == 0.0, (label, verdict)
    # Refused by a check it answers unlike gold: a discriminating or held-out one, or one the untouched code answers
    # like gold (`broke`: TLRUCache.popitem's checks rebuilt with the answer-based held-out filter catch it there).
    assert verdict.heldout_matched < verdict.heldout or verdict.discriminating_matched < verdict.discriminating \
        or verdict.broke
