"""The verdict (feature_deletion.behaviour): programs recorded on the gold code, held-out variants whose answers
never enter a sandbox, replayed on a fresh source-only copy and compared by the grader.

On tasks the real builder makes from the tiny fdcalc package; each attack is also shown to pay where the
verdict is left out, so that its zero comes from the verdict and not from a broken attack.
"""

from __future__ import annotations

import collections
import importlib.util
import json
import re
import string
import textwrap
from pathlib import Path

import pytest
from feature_deletion.behaviour import (DEADLINE_EXIT, NAMES, STATES, Replay, Verdict, compare, kept_state, mode_forger,
                                        program_key, run_programs, source_copy, unsound)
from feature_deletion import validate
from feature_deletion.builder.deletions import STUB
from feature_deletion.grading import grade
from feature_deletion.sandbox import FILES, Limits, ensure_runner
from feature_deletion.task import UNSOUND, CheckProgram, Checks, is_test_path, load_rows, write_rows

PAY_ON_THE_REPORT = frozenset({"canaries", "report"})  # the in-process layers alone: what a forge must beat there


def _task(rows, task_id_part):
    return next(r for r in rows if task_id_part in r.id)


def _with_body(row, body: str, extra: str = "") -> dict[str, bytes]:
    """The broken file with the deleted body replaced by `body` (and `extra` appended)."""
    rel = row.deletion.targets[0].file
    text = row.broken_files[rel]
    stub = next(line for line in text.splitlines() if line.strip() == STUB)
    indent = stub[: len(stub) - len(stub.lstrip())]
    text = text.replace(stub + "\n", textwrap.indent(textwrap.dedent(body).strip("\n") + "\n", indent), 1)
    return {rel: (text + extra).encode()}


def test_every_kept_task_has_held_out_checks_with_different_answers(tiny_tasks):
    rows, _, stats = tiny_tasks
    assert rows and all(r.checks is not None for r in rows)
    for row in rows:
        heldout = [json.dumps(e) for p in row.checks.programs for e, h in zip(p.expect, p.heldout) if h]
        assert len(heldout) >= 3 and len(set(heldout)) >= 2, row.id
        assert all(len(p.steps) == len(p.expect) == len(p.discriminating) == len(p.heldout) for p in row.checks.programs)
        assert row.checks_status.startswith(f"{len(row.checks.programs)} programs")
    # Methods and classes are checked too, through the objects the tests make (layer 4 of old: functions only).
    assert {t.kind for r in rows for t in r.deletion.targets} >= {"function", "method"}


def test_the_replay_copy_holds_the_package_sources_and_nothing_else(tiny_tasks, tmp_path):
    rows, tasks_dir, _ = tiny_tasks
    row = rows[0]
    root = source_copy(row, tasks_dir, tmp_path / "src", {row.deletion.targets[0].file: b"x = 1\n"})
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert files == ["fdcalc/__init__.py", "fdcalc/core.py", "fdcalc/text.py"]
    assert not any(is_test_path(f) for f in files) and (root / row.deletion.targets[0].file).read_text() == "x = 1\n"
    assert not (tmp_path / "src.full").exists()


def test_answers_never_enter_the_sandbox(tiny_tasks, tmp_path):
    """The driver gets the steps only: code that reads every file it can reach in the sandbox (the workspace, its
    output dir, /tmp) while the checks replay finds no answer, and the replay copy is read-only."""
    rows, _, _ = tiny_tasks
    row = _task(rows, "add:body")
    secret = ["ok", ["str", "EXPECTED-fd-secret"]]
    programs = [p.model_dump() | {"expect": [secret] * len(p.expect)} for p in row.checks.programs]
    (tmp_path / "fdcalc").mkdir()
    (tmp_path / "fdcalc" / "__init__.py").write_text(textwrap.dedent("""
        import os
        import sys

        def look():
            seen = []
            for top in (os.getcwd(), os.path.dirname(sys.argv[1]), "/tmp"):  # the workspace, the output dir
                for d, _, names in os.walk(top):
                    for n in names:
                        seen.append(open(os.path.join(d, n), errors="replace").read())
            text = "\\n".join(seen)
            try:
                open(os.path.join(os.getcwd(), "fdcalc", "oracle.txt"), "w").write("x")
                writable = True
            except OSError:
                writable = False
            return {"files": len(seen), "steps": '"st' + 'eps"' in text, "answers": '"exp' + 'ect"' in text,
                    "secret": "EXPECTED-fd-" + "secret" in text, "writable": writable}
    """))
    look = {"steps": [{"op": "call", "fn": ["ref", "fdcalc", "look"], "args": [], "kwargs": []}]}
    replay = run_programs(tmp_path, row, ensure_runner(), Limits(), programs + [look], {})
    (seen,) = replay.observations[-1]
    assert seen[0] == "ok", seen
    found = {k[1]: v[1] for k, v in seen[1][1]}
    assert found == {"files": found["files"], "steps": True, "answers": False, "secret": False, "writable": False}
    assert found["files"] >= 2  # the package and the programs (the results file is written once the code is done)


def _package(root: Path, source: str) -> Path:
    (root / "fdcalc").mkdir()
    (root / "fdcalc" / "__init__.py").write_text(textwrap.dedent(source))
    return root


def _call(name: str) -> dict:
    return {"steps": [{"op": "call", "fn": ["ref", "fdcalc", name], "args": [], "kwargs": []}]}


def test_agent_code_never_holds_a_descriptor_of_the_replays_results(tiny_tasks, tmp_path):
    """Red team 2 G2: `os.write` raises no audit event, so the results file must not be open while the code runs:
    the driver opens it once every program is done."""
    rows, _, _ = tiny_tasks
    root = _package(tmp_path, """
        import os

        def look():
            fds = []
            for fd in os.listdir("/proc/self/fd"):
                try:
                    fds.append(os.readlink(f"/proc/self/fd/{fd}"))
                except FileNotFoundError:  # the listing's own descriptor, closed once listed
                    pass
            # Only the suspects and a count: a whole listing can pass fd_calls.MAX_OBSERVATION and come back digested.
            return [len(fds), sorted(f for f in fds if "results" in f or "fdout" in f),
                    os.path.exists("/fdout/results.jsonl")]
    """)
    replay = run_programs(root, _task(rows, "add:body"), ensure_runner(), Limits(), [_call("look"), _call("look")], {})
    assert replay.returncode == 0, replay.output_tail
    for (obs,) in replay.observations:
        assert obs[:2] != ["digest"] and obs[0] == "ok", obs
        count, suspects, exists = (x[1] for x in obs[1][1])
        assert count >= 3 and suspects == [] and not exists, obs


def test_a_step_that_swallows_its_timeout_ends_the_replay_at_its_deadline(tiny_tasks, tmp_path):
    """Red team 2 H2: the step's SIGALRM exception is caught by a bare `except:`; the driver's watchdog ends the
    replay (a kill reason of its own, not the command's wall clock), keeping the programs done before."""
    from feature_deletion.grading import behaviour_invalid

    rows, _, _ = tiny_tasks
    row = _task(rows, "add:body")
    root = _package(tmp_path, """
        def one():
            return 1

        def spin():
            while True:
                try:
                    while True:
                        pass
                except:  # noqa: E722
                    pass
    """)
    replay = run_programs(root, row, ensure_runner(), Limits(), [_call("one"), _call("spin"), _call("one")], {})
    assert replay.returncode == DEADLINE_EXIT and replay.deadline and not replay.timed_out, replay.output_tail
    assert "past its deadline" in replay.output_tail
    assert replay.observations == [[["ok", ["int", 1]]], None, None]
    checks = Checks(programs=[CheckProgram(steps=_call(n)["steps"], expect=[["ok", ["int", 1]]], discriminating=[True],
                                           heldout=[True]) for n in ("one", "spin", "one")])
    verdict = compare(checks, replay)
    assert verdict.deadline and verdict.fraction == 0.0
    assert [i.code for i in behaviour_invalid(verdict)] == ["replay_deadline"]


def test_a_submission_that_passes_its_tests_and_loops_on_held_out_inputs_is_ended_and_paid_nothing(tiny_tasks):
    """Red team 2 H2 through the grader: the visible calls answered, the held-out ones looping in a bare `except:`.
    Grading ends at the replay's step deadline with its reason recorded, not at the command's wall clock."""
    rows, tasks_dir, _ = tiny_tasks
    row = _task(rows, "add:body")
    # the questions of the programs that are not held-out, on plain values (`types` hands lists and dicts too)
    visible = {tuple(a[1] for a in step["args"]) for p in row.checks.programs if not any(p.heldout)
               for step in p.steps if not any(isinstance(a[1], (list, dict)) for a in step["args"])}
    body = (f"if (a, b) in {sorted(visible, key=repr)!r}:\n    return a + b\nwhile True:\n    try:\n        while True:\n"
            "            pass\n    except:\n        pass\n")
    g = grade(row, tasks_dir, None, ensure_runner(), changes=_with_body(row, body))
    assert g.reward == 0.0 and g.f2p_passed == g.f2p_total, g.to_dict()
    assert [i["code"] for i in g.invalid] == ["replay_deadline"] and g.verdict["deadline"], g.invalid


def test_gold_and_untouched_and_a_partial_implementation(tiny_tasks):
    rows, tasks_dir, _ = tiny_tasks
    runner = ensure_runner()
    row = _task(rows, "Stack:methods")
    gold = grade(row, tasks_dir, None, runner, changes={k: v.encode() for k, v in row.gold_files.items()})
    assert gold.reward == 1.0 and gold.verdict["heldout_matched"] == gold.verdict["heldout"] > 0, gold.verdict
    untouched = grade(row, tasks_dir, None, runner)
    assert untouched.reward == 0.0
    rel = row.deletion.targets[0].file
    partial = row.gold_files[rel].replace("        return self.items[-1]\n", "        return None\n")
    assert partial != row.gold_files[rel]
    g = grade(row, tasks_dir, None, runner, changes={rel: partial.encode()})
    v = Verdict(**g.verdict)
    # The checks are a gate: a held-out step answered unlike gold is reward 0, whatever share of them matched.
    assert g.reward == 0.0 and not g.invalid and 0 < v.heldout_matched < v.heldout and v.fraction == 0.0, g.to_dict()


def test_a_table_of_the_visible_answers_does_not_pay(tiny_tasks):
    """Every call the visible tests make (directly and inside `mul`), answered from a table of gold's answers,
    anything else refused: the tests pass, the held-out checks do not."""
    rows, tasks_dir, _ = tiny_tasks
    row = _task(rows, "add:body")
    visible = {}
    for p in row.checks.programs:
        if not any(p.heldout):
            for step, want in zip(p.steps, p.expect):
                args = tuple(a[1] for a in step["args"])
                if want[0] == "ok" and not any(isinstance(a, (list, dict)) for a in args):  # plain questions
                    visible[args] = want[1][1]
    body = f"_table = {visible!r}\nif (a, b) in _table:\n    return _table[(a, b)]\nraise ValueError(a, b)\n"
    changes = _with_body(row, body)
    runner = ensure_runner()
    alone = grade(row, tasks_dir, None, runner, changes=changes, layers=PAY_ON_THE_REPORT)
    assert alone.reward == 1.0 and not alone.invalid, alone.failing  # every visible test passes
    g = grade(row, tasks_dir, None, runner, changes=changes)
    # Some held-out inputs are the visible ones retyped (`behaviour.retyped`: True for 1), which the table answers
    # as gold does; the others it cannot.
    assert g.reward == 0.0 and g.verdict["heldout_matched"] < g.verdict["heldout"], g.verdict


def test_an_oracle_written_by_the_test_run_is_not_there_for_the_replay(tiny_tasks):
    """Code that writes what the test run shows it into the workspace and answers from that later: the verdict
    replays a fresh read-only copy of the sources only. (Scope and guard left out, so the attack runs.)"""
    rows, tasks_dir, _ = tiny_tasks
    row = _task(rows, "add:body")
    body = """
        import os
        here = os.path.join(os.path.dirname(__file__), "oracle.txt")
        if "pytest" in __import__("sys").modules:
            with open(here, "a") as f:
                f.write(repr((a, b, a + b)) + "\\n")
            return a + b
        if os.path.exists(here):
            return a + b
        raise LookupError("no oracle")
    """
    changes = _with_body(row, body)
    g = grade(row, tasks_dir, None, ensure_runner(), changes=changes, layers=PAY_ON_THE_REPORT | {"behaviour"})
    assert g.f2p_passed == g.f2p_total and g.reward == 0.0, g.to_dict()
    assert g.verdict["discriminating_matched"] == 0 and g.verdict["missing"] == 0


def test_an_always_equal_object_built_without_a_class_statement(tiny_tasks):
    rows, tasks_dir, _ = tiny_tasks
    row = _task(rows, "add:body")
    body = """
        import dataclasses
        same = dataclasses.make_dataclass("Same", [], namespace={"__eq__": lambda s, o: True, "__hash__": lambda s: 0})
        return same()
    """
    changes = _with_body(row, body)
    runner = ensure_runner()
    assert grade(row, tasks_dir, None, runner, changes=changes, layers=PAY_ON_THE_REPORT).reward == 1.0
    verdict = grade(row, tasks_dir, None, runner, changes=changes, layers=PAY_ON_THE_REPORT | {"behaviour"})
    assert verdict.reward == 0.0 and verdict.verdict["discriminating_matched"] == 0
    scoped = grade(row, tasks_dir, None, runner, changes=changes)
    assert scoped.reward == 0.0 and "construct.dunder_string" in [i["code"] for i in scoped.invalid]


def test_compare_fails_closed():
    program = CheckProgram(steps=[{"op": "call"}] * 3, expect=[["ok", ["int", 1]], ["ok", ["int", 2]], ["raises", "x"]],
                           discriminating=[False, True, True], heldout=[False, False, True])
    checks = Checks(programs=[program, program])
    full = compare(checks, Replay([program.expect, program.expect], 0, False, ""))
    assert full.fraction == 1.0 and full.matched == full.steps == 6
    half = compare(checks, Replay([program.expect, program.expect[:2] + [["ok", ["int", 3]]]], 0, False, ""))
    assert (half.heldout, half.heldout_matched, half.fraction) == (2, 1, 0.0)  # a gate, not a share
    visible = compare(checks, Replay([program.expect, [program.expect[0], ["ok", ["int", 3]], program.expect[2]]],
                                     0, False, ""))
    assert (visible.heldout_matched, visible.discriminating_matched, visible.fraction) == (2, 3, 0.0)
    assert compare(checks, Replay([program.expect, None], 0, False, "")).fraction == 0.0  # a program never answered
    broke = compare(checks, Replay([[["ok", ["int", 9]]] + program.expect[1:], program.expect], 0, False, ""))
    assert broke.broke == 1 and broke.fraction == 0.0
    assert compare(checks, Replay([program.expect] * 2, 86, False, "")).fraction == 0.0  # the guard ended it
    assert Verdict().fraction == 0.0  # no checks: nothing to pay


def test_a_fresh_build_keeps_every_form_program_and_budgets_only_the_recorded_and_held_out_ones():
    """`_choose` kept the 32 smallest "form" programs of all families together, so a fresh build held one or two
    families (the smallest inputs) and none of the rest: weaker than the bundled rows, which `answer_again` gave every
    family. Every form program is kept now; the recorded and held-out ones stay within MAX_KEPT and its budgets."""
    from feature_deletion.behaviour import MAX_KEPT, MAX_KEPT_STEPS, Candidate, _choose

    def made(kind: str, i: int, steps: int) -> Candidate:
        step = {"op": "call", "fn": ["m", "f"], "args": [["int", i]]}
        return Candidate(kind, [step] * steps, [["ok", ["int", i]]] * steps, [True] * steps,
                         [kind == "heldout"] * steps, steps - 1)

    candidates = [made("form", i, 1 + i % 3) for i in range(300)] + [made("visible", i, 5) for i in range(100)] \
        + [made("heldout", i, 4) for i in range(100)] + [Candidate("form", [], [], [], [], -1)]
    chosen = [candidates[i] for i, _ in _choose(candidates, None)]
    kinds = collections.Counter(c.kind for c in chosen)
    assert kinds["form"] == 300  # every form program that is a check; the one that is none (last -1) is not
    assert kinds["visible"] <= MAX_KEPT["visible"] and kinds["heldout"] <= MAX_KEPT["heldout"]
    assert sum(len(c.steps) for c in chosen if c.kind != "form") <= MAX_KEPT_STEPS


def _fd_calls():
    """The replay's driver module, loaded from the sandbox's files."""
    spec = importlib.util.spec_from_file_location("fd_calls_under_test", Path(FILES) / "fd_calls.py")
    fd_calls = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fd_calls)
    return fd_calls


def test_an_argument_changed_in_place_is_seen_in_users_classes_and_past_the_item_limit():
    """Red team 27, M27 and L27: the driver's "mutated" read only exact builtin containers of at most `MAX_ITEMS`, so
    popping a user's `UserDict`, a `list` subclass, an `array` or a list of 5,001 items went unseen. `_state` must
    change with each, read by the builtin bases' own methods: a class whose own methods refuse is read all the same."""
    import array
    import collections

    fd_calls = _fd_calls()

    class Refusing(dict):
        def items(self):
            raise AssertionError("a user's method ran")

        __iter__ = keys = values = __getitem__ = items

    class Rows(list):
        def __iter__(self):
            raise AssertionError("a user's method ran")

    class Ordered(collections.OrderedDict):
        pass

    nested = Rows([1, 2])
    changes = [(Refusing(a=1, b=2), dict.popitem), (Rows([1, 2, 3]), list.pop),
               (collections.UserDict(a=1, b=2), collections.UserDict.popitem), (collections.UserList([1, 2]), list.pop),
               (array.array("i", [1, 2, 3]), array.array.pop), (list(range(fd_calls.MAX_ITEMS + 2)), list.pop),
               ({i: i for i in range(fd_calls.MAX_ITEMS + 2)}, dict.popitem), ([(1, nested)], lambda _: list.pop(nested))]
    for value, change in changes:
        before = fd_calls._state(value)
        assert fd_calls._plain(value) is not None and fd_calls._state(value) == before  # reading changes nothing
        change(value.data if isinstance(value, collections.UserList) else value)
        assert fd_calls._state(value) != before, type(value)
    ordered = Ordered(a=1, b=2)
    before = fd_calls._state(ordered)
    ordered.move_to_end("a")  # the order of an OrderedDict's subclass is its own, not its dict's
    assert fd_calls._state(ordered) != before and list(fd_calls._plain(ordered)) == ["b", "a"]
    assert fd_calls._plain(object()) is None and fd_calls._plain("text") is None


@pytest.mark.parametrize("value", [
    None, True, 3, 2**70, -0.0, float("nan"), 1 + 2j, "x\ud800y", b"\x00", bytearray(b"ab"), [1, (2, {3})],
    frozenset({1}), {"a": [1]}, range(1, 9, 2), slice(1, None), ...,
])
def test_plain_data_encodes_with_exact_types_and_decodes_back(value):
    fd_calls = _fd_calls()
    enc = fd_calls.encode(value, fd_calls.no_other)
    back = fd_calls.decode(json.loads(json.dumps(enc)), None)
    assert type(back) is type(value) and repr(back) == repr(value)
    with pytest.raises(fd_calls.Unrecordable):
        fd_calls.encode(type("Str", (str,), {})("x"), fd_calls.no_other)  # a subclass is not the type it claims


def _checks(answers: dict[str, list]) -> Checks:
    """One-step programs calling `fn` with gold's answers, every step discriminating and held-out."""
    def step(fn, i):
        return {"op": "call", "fn": ["ref", "m", fn], "args": [["int", i]], "kwargs": []}

    return Checks(programs=[CheckProgram(steps=[step(fn, i)], expect=[want], discriminating=[True], heldout=[True])
                            for fn, wants in answers.items() for i, want in enumerate(wants)])


def test_checks_a_per_function_constant_would_pass_are_unsound():
    """Held-out checks must tell a table with a fallback answer from an implementation (issue 28: 48 of inflection
    `ordinal`'s 53 held-out checks were `raises ValueError`, and the table + `int()` + "th" was paid 0.962)."""
    ok, th, st = ["ok", ["int", 1]], ["ok", ["str", "th"]], ["ok", ["str", "st"]]
    err = ["raises", "builtins.ValueError"]
    assert unsound(_checks({"f": [err] * 4 + [th, st]})) == "heldout_one_answer"
    assert unsound(_checks({"f": [err, th]})) == "too_few_heldout_checks"
    # No answer covers more than half, but each function always answers the same: a constant per function passes.
    assert unsound(_checks({"f": [err] * 3, "g": [ok] * 3})) == "heldout_forgeable"
    sound = _checks({"f": [err, err, st], "g": [ok, st, err]})
    assert unsound(sound) is None
    # The mode forger, judged by the grader's compare, misses exactly the steps off each function's mode.
    v = compare(sound, mode_forger(sound))
    assert (v.heldout, v.heldout_matched, v.fraction) == (6, 3, 0.0)  # f: 2 of 3, g: 1 of 3


def _echoing(fn: str, items: list[int], answer: list) -> CheckProgram:
    """One held-out call of `fn` on a list, answered `answer` with the driver's echo of the list (`["mutated", ...]`)."""
    arg = ["list", [["int", i] for i in items]]
    want = answer + [["mutated", [[0, arg]]]] if answer[0] == "ok" else answer
    return CheckProgram(steps=[{"op": "call", "fn": ["ref", "m", fn], "args": [arg], "kwargs": []}], expect=[want],
                        discriminating=[True], heldout=[True])


def test_held_out_filters_judge_the_answer_not_the_echoed_arguments_and_count_each_question_once():
    """Red team 2, A root cause 1: toolz `isiterable` had 28 held-out checks on lists, all answered True; the echo of
    each list made them 28 different observations, and the filters kept the task (paid 1.0 to code special-cased to
    the visible inputs). Judged by the answer they are one answer; a question asked in several programs counts once."""
    from feature_deletion.behaviour import answer_of, held_out_questions

    true, false = ["ok", ["bool", True]], ["ok", ["bool", False]]
    lists = Checks(programs=[_echoing("isiterable", [i, i + 1], true) for i in range(28)])
    assert len({json.dumps(e) for p in lists.programs for e in p.expect}) == 28  # what the old filters counted
    assert answer_of(lists.programs[0].expect[0]) == json.dumps(true)
    assert unsound(lists) == "too_few_heldout_checks"
    # Three questions answered True and one answered False, that one asked in three programs: balanced by steps,
    # three in four by questions.
    repeated = Checks(programs=[_echoing("f", [i], true) for i in range(3)] + [_echoing("f", [9], false)] * 3)
    assert len(held_out_questions(repeated.programs)) == 4
    assert unsound(repeated) == "heldout_one_answer"
    # The mode forger answers the most common answer of each function and the driver echoes the arguments as gold's
    # run did: per function one answer (f always True, g always False) is forged whatever the echoes say.
    per_function = Checks(programs=[_echoing("f", [i], true) for i in range(3)] +
                          [_echoing("g", [i], false) for i in range(3)])
    assert unsound(per_function) == "heldout_forgeable"
    assert compare(per_function, mode_forger(per_function)).fraction == 1.0
    sound = Checks(programs=[_echoing("f", [1], true), _echoing("f", [2], false), _echoing("f", [3], true),
                             _echoing("g", [1], false), _echoing("g", [2], true), _echoing("g", [3], false)])
    assert unsound(sound) is None and compare(sound, mode_forger(sound)).fraction == 0.0


def test_held_out_inputs_take_other_types_and_strings_other_separators():
    """A rebuild special-cased to the tests' types (`isiterable`: ints False, anything else True) or to their word
    boundaries (`camelize` by `split("_")`, `titleize` by `str.capitalize`) answers gold's held-out checks only where
    the held-out inputs keep those types and separators."""
    import random

    from feature_deletion.behaviour import mutate, retyped

    assert ["NoneType", None] in retyped(["int", 5]) and ["float", "5.0"] in retyped(["int", 5])
    assert ["tuple", [["int", 1]]] in retyped(["list", [["int", 1]]]) and retyped(["callback", {}]) == []
    rng = random.Random(0)
    made = [mutate(["str", "camel_case"], rng, {"str": ["x men"]}) for _ in range(300)]
    tags = {m[0] for m in made}
    texts = {m[1] for m in made if m[0] == "str"}
    assert {"str", "NoneType", "list", "bytes", "int"} <= tags
    assert {"camel__case", "_camel_case", "camel_case_"} <= texts
    assert any("-" in t for t in texts)  # a separator no argument of the task holds
    # Inside a container an item keeps its type: only an argument itself is retyped.
    inner = [mutate(["list", [["int", 1], ["int", 2]]], rng, {}) for _ in range(200)]
    assert {i[0] for m in inner if m[0] == "list" for i in m[1]} == {"int"}


def test_objects_the_tests_make_are_copied_where_the_deleted_code_defines_pickling():
    """Red team 2, A4-A6: `TTLCache` without `__setstate__`, `juxt` without `__getstate__`/`__setstate__` and
    `_HashedTuple` without `__getstate__` were paid: no recorded program pickles. A held-out program copies each
    object a recorded program made (`copy.deepcopy` runs `__reduce_ex__`, `__getstate__`, `__setstate__`) and asks
    the copy what the program asked the original."""
    from feature_deletion.behaviour import round_trips

    program = {"steps": [
        {"op": "new", "cls": ["ref", "m", "Box"], "args": [["int", 1]], "kwargs": []},
        {"op": "method", "obj": ["slot", 0, []], "name": "put", "args": [["int", 2]], "kwargs": []},
        {"op": "call", "fn": ["ref", "m", "f"], "args": [["int", 3]], "kwargs": []},
        {"op": "method", "obj": ["slot", 0, []], "name": "get", "args": [["slot", 2, []]], "kwargs": []},
        {"op": "method", "obj": ["slot", 0, []], "name": "__len__", "args": [], "kwargs": []}]}
    (made, parent, site), = round_trips([program])
    steps = made["steps"]
    assert (parent, site) == (0, 5) and steps[:5] == program["steps"]
    assert steps[5] == {"op": "call", "fn": ["ref", "copy", "deepcopy"], "args": [["slot", 0, []]], "kwargs": []}
    # The copy is asked what the original was asked after it was made (the other slots it refers to stay), then the
    # class's probes (`__len__`, the argument-free call the tests make).
    assert [(s["name"], s["obj"], s["args"]) for s in steps[6:]] == [
        ("put", ["slot", 5, []], [["int", 2]]), ("get", ["slot", 5, []], [["slot", 2, []]]),
        ("__len__", ["slot", 5, []], []), ("__len__", ["slot", 5, []], [])]


def test_held_out_programs_are_taken_in_turns_by_answer_where_one_answer_would_cover_most():
    """inflection's `ordinal` answers "th" for most numbers: smallest first, its held-out checks were mostly "th" and
    the task left the set; taken in turns by answer they are not, and every program kept is one of the candidates."""
    from collections import Counter

    from feature_deletion.behaviour import _held_out_selection

    th, st, nd = (["ok", ["str", s]] for s in ("th", "st", "nd"))
    candidates = _checks({"ordinal": [th] * 12 + [st] * 3 + [nd] * 2}).programs
    chosen = _held_out_selection(candidates)
    answers = Counter(json.dumps(p.expect[0]) for p in chosen)
    assert 2 * answers.most_common(1)[0][1] <= len(chosen) and len(answers) == 3, answers
    assert len(chosen) == 10 and all(p in candidates for p in chosen)  # 5 "th" beside the 3 "st" and 2 "nd"
    assert unsound(Checks(programs=chosen)) is None
    # Held-out checks that no answer covers most of are taken as before: the smallest first, all of them.
    balanced = _checks({"ordinal": [th, st, nd, th]}).programs
    assert _held_out_selection(balanced) == sorted(balanced, key=lambda p: len(p.model_dump_json()))
    # One answer only: nothing is left to take, and the task leaves the set.
    assert _held_out_selection(_checks({"f": [th] * 5}).programs) == []


def test_a_row_whose_checks_are_unsound_leaves_the_task_set_with_its_reason(tiny_tasks, tmp_path):
    rows, _, _ = tiny_tasks
    row = _task(rows, "add:body")
    assert unsound(row.checks) is None
    program = row.checks.programs[-1]
    one_answer = program.model_copy(update={"expect": [["raises", "builtins.ValueError"]] * len(program.expect)})
    forgeable = row.model_copy(update={"id": row.id + "-forgeable", "checks": Checks(programs=[one_answer] * 4)})
    path = tmp_path / "tasks.jsonl"
    write_rows(path, [row, forgeable])
    loaded, problems = load_rows(path)
    assert [r.id for r in loaded] == [row.id]
    assert len(problems) == 1 and problems[0].endswith(f"{UNSOUND} {forgeable.id}: too_few_heldout_checks"), problems
    # `fd-validate --prune` drops it from the file and adds it, with its reason, to the checks report.
    assert validate.main([str(path), "--prune"]) == 0
    assert [r.id for r in load_rows(path)[0]] == [row.id] and load_rows(path)[1] == []
    report = json.loads((tmp_path / "tasks.checks.json").read_text())
    assert (report["kept"], report["dropped"]) == (1, 1)
    assert report["dropped_tasks"] == {forgeable.id: "too_few_heldout_checks"}


def test_a_feature_that_draws_is_checked_on_the_draws_the_grader_replays(tiny_tasks, tmp_path):
    """Red team 3 R / red team 4 R4: checks kept where two seeds agree cannot judge a random feature (a FIFO
    `RRCache.popitem` answered them all). The grader seeds `random` with 0, so gold's draws are the same in every
    process: kept as checks, with where the stream stands after the step, a rebuild that does not draw, or draws for
    show and answers otherwise, is not gold."""
    from feature_deletion.behaviour import _settled

    gold = "import random\n\ndef f(xs):\n    return random.choice(xs)\n"
    rebuilds = ["def f(xs):\n    return xs[0]\n",
                "import random\n\ndef f(xs):\n    random.choice(xs)\n    return xs[0]\n",
                "import random\n\ndef f(xs):\n    random.random()\n    return random.choice(xs)\n"]
    step = {"op": "call", "fn": ["ref", "fdcalc", "f"], "args": [["list", [["int", i] for i in range(10)]]],
            "kwargs": []}
    first, again = (_observed(tiny_tasks, tmp_path, gold, step).observations[0] for _ in range(2))
    assert _settled(first, again) == 1 and first[0][0] == "ok" and first[0][2][0] == "rng", first
    for source in rebuilds:
        assert _observed(tiny_tasks, tmp_path, source, step).observations[0] != first, source
    assert _settled(first, [["ok", first[0][1]]]) == 0  # another process, another answer: no check


def _observed(tiny_tasks, tmp_path, source: str, step: dict | list[dict]) -> Replay:
    """The replay of one program (`step`, or a list of steps) on a package whose module is `source`."""
    rows, _, _ = tiny_tasks
    root = tmp_path / str(len(list(tmp_path.iterdir())))
    root.mkdir()
    _package(root, source)
    steps = step if isinstance(step, list) else [step]
    replay = run_programs(root, _task(rows, "add:body"), ensure_runner(), Limits(), [{"steps": steps}], {})
    assert replay.returncode == 0, replay.output_tail
    return replay


def _callback(*answers: tuple[int, int]) -> list:
    return ["callback", {"calls": [[[[["int", a]], []], ["int", b]] for a, b in answers], "names": {}}]


@pytest.mark.parametrize("gold, rebuilt, args, kwargs, told_by", [
    # red team 4 U2: a callback called twice per item doubles its side effects, answers alike
    ("def f(g):\n    return [g(1)]", "def f(g):\n    g(1)\n    return [g(1)]", [_callback((1, 2))], [], "called"),
    # U3: the same exception type with another message
    ("def f():\n    raise ValueError('too few items')", "def f():\n    raise ValueError('too many items')", [], [],
     None),
    # red team A: the caller's own dict handed back (toolz `dissoc`), equal to gold's copy
    ("def f(d):\n    return dict(d)", "def f(d):\n    return d", [["dict", [[["str", "a"], ["int", 1]]]]], [], "shares"),
    ("def f(d):\n    return [dict(d)]", "def f(d):\n    return [d]", [["dict", []]], [], "shares"),
    # a keyword argument, and a list inside a tuple, changed in place
    ("def f(d=None):\n    return 1", "def f(d=None):\n    d.append(1)\n    return 1", [], [["d", ["list", []]]],
     "mutated"),
    ("def f(t):\n    return 1", "def f(t):\n    t[0].append(1)\n    return 1", [["tuple", [["list", []]]]], [],
     "mutated"),
    # R4: a draw from random's shared stream where gold draws none
    ("def f():\n    return 1", "import random\ndef f():\n    random.random()\n    return 1", [], [], "rng"),
])
def test_the_replay_observes_what_a_step_does_besides_its_answer(tiny_tasks, tmp_path, gold, rebuilt, args, kwargs,
                                                                  told_by):
    """Each pair answers alike and differs only in what the step does besides: the observations tell them apart."""
    step = {"op": "call", "fn": ["ref", "fdcalc", "f"], "args": args, "kwargs": kwargs}
    want = _observed(tiny_tasks, tmp_path, gold, step).observations[0][0]
    got = _observed(tiny_tasks, tmp_path, rebuilt, step).observations[0][0]
    assert want[:2] == got[:2] or want[0] == got[0] == "raises", (want, got)
    assert want != got, want
    if told_by:
        assert told_by in [x[0] for x in got[2:] if isinstance(x, list)], got


@pytest.mark.parametrize("when", ["on each call", "at import"])
def test_the_packages_state_outside_the_feature_is_compared_with_golds(tiny_tasks, tmp_path, when):
    """Red team 4 U1: an `ordinal` that also adds a word to inflection's `UNCOUNTABLES`. The driver reads the
    package's module-level state after its import and after every program; the grader compares gold's names."""
    gold = "WORDS = ['a']\n\ndef f():\n    return 1\n"
    rebuilt = {"on each call": "WORDS = ['a']\n\ndef f():\n    WORDS.append('b')\n    return 1\n",
               "at import": "WORDS = ['a']\n\ndef f():\n    return 1\n\n_ = WORDS.append('b')\n"}[when]
    step = {"op": "call", "fn": ["ref", "fdcalc", "f"], "args": [], "kwargs": []}
    want = _observed(tiny_tasks, tmp_path, gold, step)
    got = _observed(tiny_tasks, tmp_path, rebuilt, step)
    assert want.observations == got.observations
    assert set(want.state) == {"initial", "final", "objects", "drift"} and "fdcalc.WORDS" in want.state["final"], \
        want.state
    checks = Checks(programs=[CheckProgram(steps=[step], expect=want.observations[0], discriminating=[True],
                                           heldout=[True])], state=want.state)
    assert compare(checks, want).fraction == 1.0
    verdict = compare(checks, got)
    assert verdict.fraction == 0.0 and verdict.state.endswith("fdcalc.WORDS"), verdict
    assert verdict.state.startswith("initial" if when == "at import" else "final"), verdict
    assert compare(checks, Replay(want.observations, 0, False, "", None)).fraction == 0.0  # no state read: closed


def test_the_public_attributes_of_the_objects_a_program_made_are_compared_with_golds(tiny_tasks, tmp_path):
    """Red team 2: more-itertools' `time_limited` starting with `timed_out = True` answered every step like gold; a
    caller reads the attribute. Public attributes are compared by gold's names (a rebuild may keep more of its own,
    and private ones are its representation)."""
    gold = "class T:\n    def __init__(self):\n        self.timed_out = False\n        self._at = 1\n"
    rebuilt = "class T:\n    def __init__(self):\n        self.timed_out = True\n        self._at = 2\n"
    extra = "class T:\n    def __init__(self):\n        self.timed_out = False\n        self.mine = 3\n"
    step = {"op": "new", "cls": ["ref", "fdcalc", "T"], "args": [], "kwargs": []}
    want = _observed(tiny_tasks, tmp_path, gold, step)
    assert want.state["objects"] == {"0.0.timed_out": want.state["objects"]["0.0.timed_out"]}, want.state
    checks = Checks(programs=[CheckProgram(steps=[step], expect=want.observations[0], discriminating=[True],
                                           heldout=[True])], state=want.state)
    got = _observed(tiny_tasks, tmp_path, rebuilt, step)
    assert got.observations == want.observations and compare(checks, got).state == "objects: 0.0.timed_out"
    assert compare(checks, _observed(tiny_tasks, tmp_path, extra, step)).fraction == 1.0


def test_a_callback_that_raised_when_recorded_raises_again_in_the_replay(tiny_tasks, tmp_path):
    """Red team 2: `iterate` that goes on where `func` raises StopIteration was paid part; a raising callback had no
    answer in its table, so no check could ask it."""
    source = "def f(g):\n    try:\n        g(1)\n    except StopIteration:\n        return 'stopped'\n    return 'went on'\n"
    stop = ["raise", ["exc", [["ref", "builtins", "StopIteration"], []]]]
    step = {"op": "call", "fn": ["ref", "fdcalc", "f"], "kwargs": [],
            "args": [["callback", {"calls": [[[[["int", 1]], []], stop]], "names": {}}]]}
    [[observation]] = _observed(tiny_tasks, tmp_path, source, step).observations
    assert observation[:2] == ["ok", ["str", "stopped"]] and ["called", [[0, 1]]] in observation[2:], observation


def test_a_callback_in_the_replay_is_a_plain_function_with_the_tests_names(tiny_tasks, tmp_path):
    """Red team 5 U5: `iterate` called `func` twice unless `func` had the replay stub's `count` attribute."""
    source = "def f(g):\n    return [type(g).__name__, hasattr(g, 'count'), g.__name__, g(1)]\n"
    names = {"__name__": "double", "__qualname__": "test_x.<locals>.double", "__module__": "tests.test_x"}
    step = {"op": "call", "fn": ["ref", "fdcalc", "f"], "kwargs": [],
            "args": [["callback", {"calls": [[[[["int", 1]], []], ["int", 2]]], "names": names}]]}
    [[observation]] = _observed(tiny_tasks, tmp_path, source, step).observations
    assert observation[1] == ["list", [["str", "function"], ["bool", False], ["str", "double"], ["int", 2]]], observation


def test_process_state_plain_code_can_change_is_compared_with_golds(tiny_tasks, tmp_path):
    """Red team 5 P5: an `ordinal` that sets `decimal.getcontext().prec = 6` answered every step like gold."""
    gold = "import decimal\n\ndef f():\n    return 1\n"
    rebuilt = "import decimal\n\ndef f():\n    decimal.getcontext().prec = 6\n    return 1\n"
    step = {"op": "call", "fn": ["ref", "fdcalc", "f"], "args": [], "kwargs": []}
    want = _observed(tiny_tasks, tmp_path, gold, step)
    checks = Checks(programs=[CheckProgram(steps=[step], expect=want.observations[0], discriminating=[True],
                                           heldout=[True])], state=want.state)
    assert compare(checks, want).fraction == 1.0
    assert compare(checks, _observed(tiny_tasks, tmp_path, rebuilt, step)).state == "final: stdlib:decimal.getcontext()"


COUNTERS = {  # red team 5, B5: state a rebuild keeps across calls where gold keeps none (a count that can turn it)
    "a new private list": "_N = []\n\ndef f():\n    _N.append(1)\n    return 1\n",
    "a closure": "def _make():\n    n = [0]\n    def up():\n        n[0] += 1\n    return up\n\n_up = _make()\n\n"
                 "def f():\n    _up()\n    return 1\n",
    "a default": "def f(_n=[0]):\n    _n[0] += 1\n    return 1\n",
    "an itertools count": "import itertools\n_N = itertools.count()\n\ndef f():\n    next(_N)\n    return 1\n",
    "an iterator": "_N = iter(range(10 ** 9))\n\ndef f():\n    next(_N)\n    return 1\n",
    "a generator": "def _g():\n    i = 0\n    while True:\n        i += 1\n        yield i\n\n_G = _g()\n\n"
                   "def f():\n    next(_G)\n    return 1\n",
    "its own Random": "import random\n_R = random.Random(0)\n\ndef f():\n    _R.random()\n    return 1\n",
    "an lru_cache": "import functools\n@functools.lru_cache(None)\ndef _n(x):\n    return x\n\n"
                    "def f():\n    _n(1)\n    return 1\n",
    "a class attribute": "class _C:\n    n = 0\n\ndef f():\n    _C.n += 1\n    return 1\n",
    "a standard function's attribute": "import textwrap\n\ndef f():\n    textwrap.dedent.n = 1\n    return 1\n",
    # red team 15, W15n: a NaN's payload, which every repr prints as `nan`
    "a NaN's payload": "import struct\n_N = [1e999 * 0]\n\ndef f():\n"
                       "    bits = struct.unpack('<Q', struct.pack('<d', _N[0]))[0] + 1\n"
                       "    _N[0] = struct.unpack('<d', struct.pack('<Q', bits))[0]\n    return 1\n",
    # W15: past the objects a walk reads (MAX_WALK): the last of 20,100 lists, read alike at both ends before
    "a structure past the walk's reach": "_T = tuple([] for _ in range(20_100))\n\ndef f():\n"
                                         "    _T[-1].append(1)\n    return 1\n",
    # red team 16, H16: an int's hash is its value modulo 2**61 - 1, so adding that read the same
    "a big int's residue": "_N = [1 << 64]\n\ndef f():\n    _N[0] += (1 << 61) - 1\n    return 1\n",
}


def test_state_a_rebuild_keeps_where_gold_keeps_none_is_not_gold(tiny_tasks, tmp_path):
    """The driver walks what every name of the package (and every public name of the allowed standard modules)
    reaches, at the start and the end of the replay: a name whose reachable state changed where gold's never does
    is state gold does not keep, however the rebuild hides it; one gold changes too may change."""
    step = {"op": "call", "fn": ["ref", "fdcalc", "f"], "args": [], "kwargs": []}
    gold = _observed(tiny_tasks, tmp_path, "def f():\n    return 1\n", step)
    checks = Checks(programs=[CheckProgram(steps=[step], expect=gold.observations[0], discriminating=[True],
                                           heldout=[True])], state=gold.state)
    assert gold.state["drift"] == {"stdlib:random.seed": "changed"} and compare(checks, gold).fraction == 1.0
    for what, source in COUNTERS.items():
        got = _observed(tiny_tasks, tmp_path, source, step)
        assert got.observations == gold.observations, what
        assert compare(checks, got).state.startswith("drift: "), (what, got.state["drift"])
    memo = _observed(tiny_tasks, tmp_path, COUNTERS["a new private list"].replace("_N", "_M"), step)
    ok = Checks(programs=checks.programs, state={**gold.state, "drift": {**gold.state["drift"], "fdcalc._M": "changed"}})
    assert compare(ok, memo).fraction == 1.0  # gold keeps that state too


def test_warnings_a_step_shows_are_observed_as_a_user_would_see_them(tiny_tasks, tmp_path):
    """Red team 16, V16: gold plus a `UserWarning` at every call (filed under `sys` by a huge stack level, where no
    state reading looks) was paid: output a user sees, and an exception under `-W error`. Each step's warnings are
    observed, under the filters a user has (a DeprecationWarning from a library is not shown) and as a fresh process
    shows them: the once-per-place registry never hides a warning because an earlier step showed it."""
    gold = "def f():\n    return 1\n"
    warns = "import warnings\n\ndef f():\n    warnings.warn('deprecated', stacklevel=10 ** 6)\n    return 1\n"
    hidden = warns.replace("'deprecated'", "'deprecated', DeprecationWarning")
    step = {"op": "call", "fn": ["ref", "fdcalc", "f"], "args": [], "kwargs": []}
    want = _observed(tiny_tasks, tmp_path, gold, [step, step]).observations[0]
    got = _observed(tiny_tasks, tmp_path, warns, [step, step]).observations[0]
    assert want == [["ok", ["int", 1]]] * 2, want
    assert got == [["ok", ["int", 1], ["warned", [["builtins.UserWarning", "deprecated"]]]]] * 2, got
    assert _observed(tiny_tasks, tmp_path, hidden, [step, step]).observations[0] == want


def test_an_object_must_return_where_golds_returns_to_an_earlier_state(tiny_tasks, tmp_path):
    """Red team 16, I16: a call counter in a private attribute of the object (wrong from the 50,001st call on one
    object) was paid on every task with a deleted method: no reading looked inside an object a user holds. Red team 17,
    M17: with only gold's unchanged steps compared, a counter bumped where gold's object changes too (a push, a pop)
    was paid; N17: a counter in which names are set read the same (an inline dict shows the collector values only).
    Each step made on a package's object reads it before and after; where gold's is as it was at an earlier reading,
    the rebuild's must be too, private attributes, names and all. Where gold's never returns, a rebuild may keep its
    own representation."""
    gold = ("class C:\n    def __init__(self):\n        self.items = []\n\n    def push(self, x):\n"
            "        self.items.append(x)\n\n    def top(self):\n        return self.items[-1]\n\n"
            "    def pop(self):\n        return self.items.pop()\n")
    counted = gold.replace("        return self.items[-1]", "        self._n = getattr(self, '_n', 0) + 1\n"
                                                           "        return self.items[-1]")
    # bumped only where gold's object changes too
    changing = gold.replace("        self.items.append(x)", "        self.items.append(x)\n"
                                                             "        self._n = getattr(self, '_n', 0) + 1")
    renamed = gold.replace("        self.items = []", "        self.items = []\n        self._a = None").replace(
        "        return self.items[-1]", "        if hasattr(self, '_a'):\n            del self._a\n"
                                        "            self._b = None\n        return self.items[-1]")
    # the class answers a lookup of `__dict__` itself: the dict is made without asking it
    hidden = renamed.replace("class C:\n", "class C:\n    __dict__ = property(lambda self: {})\n\n")
    kept_apart = gold.replace("self.items.append(x)", "self.items.append(x)\n        self._pushed = x")
    new, push, top, pop = ({"op": "new", "cls": ["ref", "fdcalc", "C"], "args": [], "kwargs": []},
                           *({"op": "method", "obj": ["slot", 0, []], "name": name, "args": args, "kwargs": []}
                             for name, args in (("push", [["int", 7]]), ("top", []), ("pop", []))))

    def checks_of(steps: list[dict]) -> tuple[Checks, Checks, str]:
        """The checks of gold's replay, as kept where the rebuild keeps gold's construction and where it makes its
        objects itself (names left out), and the state they fail on a rebuild that does not return."""
        want = _observed(tiny_tasks, tmp_path, gold, steps)
        checks = Checks(programs=[CheckProgram(steps=steps, expect=want.observations[0], discriminating=[True] * len(
            steps), heldout=[True] * len(steps))], state=kept_state([want.state]))
        own = Checks(programs=checks.programs, state={**checks.state, "objects": {
            k: v for k, v in checks.state["objects"].items() if not k.endswith(f".{NAMES}")}})
        assert compare(checks, want).fraction == 1.0 and compare(own, want).fraction == 1.0
        return checks, own, f"objects: {program_key(steps)}.{STATES}"

    # readings 1< 1 2< 2 3< 3: empty, [7], [7], [7], [7], empty
    steps = [new, push, top, pop]
    checks, own, failed = checks_of(steps)
    assert checks.state["objects"][f"{program_key(steps)}.{STATES}"] == [
        ["1<", 0], ["1", 1], ["2<", 1], ["2", 1], ["3<", 1], ["3", 0]], checks.state
    for source in (counted, changing, renamed, hidden, kept_apart):  # none returns to empty as gold's does
        got = _observed(tiny_tasks, tmp_path, source, steps)
        assert got.observations == _observed(tiny_tasks, tmp_path, gold, steps).observations, source
        assert compare(own, got).state == failed and compare(checks, got).fraction == 0.0, source
    # gold's object never returns to an earlier state after its push: where the rebuild keeps gold's construction
    # (`builds_objects`), its objects hold gold's names at every reading (red team 17, M17 on `TLRUCache.popitem`)
    # and are of gold's class; where it makes its objects itself, their representation is its own
    swapped = gold.replace("        self.items.append(x)", "        self.items.append(x)\n        self.__class__ = D") \
        + "\n\nclass D(C):\n    pass\n"
    steps = [new, push, push]
    checks, own, _ = checks_of(steps)
    names = f"{program_key(steps)}.{NAMES}"
    assert [label for label, _ in checks.state["objects"][names]] == ["1<"]  # gold's names never change
    for source in (kept_apart, changing, swapped):
        got = _observed(tiny_tasks, tmp_path, source, steps)
        assert compare(checks, got).state == f"objects: {names}", source
        assert compare(own, got).fraction == 1.0, source
    # a reading that is missing or malformed fails; a program the checks no longer hold asks nothing of the replay
    steps = [new, push, top, pop]
    checks, _, failed = checks_of(steps)
    for readings in (None, [], [["1<", "a"]], "x", [[1, 2]]):
        replay = Replay([checks.programs[0].expect], 0, False, "", {**checks.state, "objects": {
            **checks.state["objects"], failed[9:]: readings}})
        assert compare(checks, replay).state == failed, readings
    other = Checks(programs=[CheckProgram(steps=steps[:2], expect=checks.programs[0].expect[:2],
                                          discriminating=[True] * 2, heldout=[True] * 2)],
                   state={"objects": {failed[9:]: checks.state["objects"][failed[9:]]}, "drift": checks.state["drift"]})
    assert compare(other, _observed(tiny_tasks, tmp_path, counted, steps[:2])).fraction == 1.0


def test_an_answer_that_is_what_an_earlier_step_was_handed_is_observed(tiny_tasks, tmp_path):
    """Red team 7, A7: a cache that stores a copy of the value it is given answers `c[k]` equal to gold's, not the
    caller's object: the driver says which container handed to which step an answer is."""
    gold = "_S = {}\n\ndef put(k, v):\n    _S[k] = v\n\ndef get(k):\n    return _S[k]\n"
    copied = gold.replace("_S[k] = v", "_S[k] = list(v)")
    steps = [{"op": "call", "fn": ["ref", "fdcalc", "put"], "args": [["str", "a"], ["list", [["int", 1]]]],
              "kwargs": []},
             {"op": "call", "fn": ["ref", "fdcalc", "get"], "args": [["str", "a"]], "kwargs": []}]
    want = _observed(tiny_tasks, tmp_path, gold, steps).observations[0]
    got = _observed(tiny_tasks, tmp_path, copied, steps).observations[0]
    assert want[1] == ["ok", ["list", [["int", 1]]], ["shares", [[[], [0, 1]]]]], want
    assert got[1] == ["ok", ["list", [["int", 1]]]], got


def test_held_out_programs_change_a_list_after_handing_it_over_and_ask_hashes(tiny_tasks, tmp_path):
    """Red team 5, L5: a `sliced` that slices the whole list when called, where gold reads it as asked; red team 7,
    H7: a hash that no longer agrees with equality. `grown` appends to (or clears) a list a step was handed before
    the later steps on its answer; `hashes` asks `hash` of an answer."""
    from feature_deletion.behaviour import edges, grown, hashes

    # red team 8, E8: a bool and a far number where the tests hand numbers (`ordinal` planted wrong on them)
    called = {"steps": [{"op": "call", "fn": ["ref", "fdcalc", "f"], "args": [["int", 3]], "kwargs": []}]}
    assert [p["steps"][0]["args"] for p, _, _ in edges([called])] == [[["bool", True]], [["int", 10 ** 12 + 3]]]

    lazy = "def f(xs):\n    return (x for x in xs)\n"
    eager = "def f(xs):\n    return iter(list(xs))\n"
    nxt = {"op": "next", "obj": ["slot", 0, []]}
    recorded = {"steps": [{"op": "call", "fn": ["ref", "fdcalc", "f"], "args": [["list", [["int", 1], ["int", 2]]]],
                           "kwargs": []}, nxt, dict(nxt), dict(nxt)]}
    [(program, parent, site)] = grown([recorded])
    assert parent == -1 and site == 1 and program["steps"][1]["obj"] == ["given", 0, 0], program
    assert program["steps"][2:] == [{"op": "next", "obj": ["slot", 0, []]}] * 3  # step 0 is still step 0
    want = _observed(tiny_tasks, tmp_path, lazy, program["steps"]).observations[0]
    got = _observed(tiny_tasks, tmp_path, eager, program["steps"]).observations[0]
    assert [o[:2] for o in want[2:]] == [["ok", ["int", 1]], ["ok", ["int", 2]], ["ok", ["int", 2]]], want
    assert got[4][0] == "raises", got  # the eager copy never saw the third item
    tuple_key = "class K(tuple):\n    def __hash__(self):\n        return tuple.__hash__(self){}\n\n" \
                "def f():\n    return K((1, 2))\n"
    [(program, _, _)] = hashes([{"steps": [{"op": "call", "fn": ["ref", "fdcalc", "f"], "args": [], "kwargs": []}]}])
    want = _observed(tiny_tasks, tmp_path, tuple_key.format(""), program["steps"]).observations[0]
    got = _observed(tiny_tasks, tmp_path, tuple_key.format(" ^ 1"), program["steps"]).observations[0]
    assert want[0] == got[0] and want[1] == ["ok", ["bigint", str(hash((1, 2)))]] and got[1] != want[1], (want, got)


def test_other_forms_hand_a_recorded_input_as_users_also_hand_it(tiny_tasks, tmp_path):
    """Red team 12, S12: toolz `partition` and `countby` take any iterable, the tests hand them lists only, and a
    rebuild wrong for every iterator was paid; red team 13, X13: `ordinal` wrong for every int (its tests pass text),
    `pluralize` for non-ASCII words, `strip` for tuples, `transpose` past 3 rows. `forms` hands a recorded input as an
    iterator of its items, as the sibling type, at a larger size, an int as text (and back), text with a non-ASCII
    letter; the replay hands a stream over as an iterator users pass, not a class of its own."""
    from feature_deletion.behaviour import FORM_NEXT, forms

    items = ["list", [["int", i] for i in range(1, 7)]]
    step = {"op": "call", "fn": ["ref", "fdcalc", "f"], "args": [["int", 2], items], "kwargs": [["tail", ["str", "12"]]]}
    later = {"op": "method", "obj": ["given", 0, 1], "name": "append", "args": [["int", 7]], "kwargs": []}
    made = forms([{"steps": [step]}, {"steps": [step, later]}])
    handed = [(p["steps"][0]["args"], p["steps"][0]["kwargs"]) for p in made]
    assert handed == [([["str", "2"], items], step["kwargs"]),
                      ([["int", 2], ["stream", {"items": items[1], "end": True}]], step["kwargs"]),
                      ([["int", 2], ["tuple", items[1]]], step["kwargs"]),
                      ([["int", 2], ["list", items[1] + items[1][:2]]], step["kwargs"]),
                      ([["int", 2], items], [["tail", ["int", 12]]]),
                      ([["int", 2], items, items, items], step["kwargs"]),  # more of the last argument
                      (step["args"], step["kwargs"])], handed  # a list a later step changes stays a list
    assert made[-1]["steps"][1]["args"] == [["str", "7"]]
    assert forms([{"steps": [{**step, "args": [["str", "cat"]], "kwargs": []}]}])[0]["steps"][0]["args"] == \
        [["str", "écat"]]
    chars = ["list", [["str", "a"], ["str", "b"]]]
    nxt = {"op": "next", "obj": ["slot", 0, []]}
    read = {"steps": [{**step, "args": [chars], "kwargs": []}, nxt, dict(nxt)]}
    assert [p["steps"][0]["args"][0] for p in forms([read])][-1] == ["str", "ab"]  # characters as text
    [grown] = [p for p in forms([read]) if len(p["steps"][0]["args"][0][1]) == 4]  # and what a larger input adds
    assert grown["steps"][1:] == [nxt] * FORM_NEXT, grown  # is read too: `powerset`'s full set comes last
    stream = made[1]

    gold = "def f(n, xs, tail=()):\n    return [tuple(c) for c in zip(*[iter(xs)] * n)]\n"
    wrong = gold.replace("    return", "    if iter(xs) is xs:\n        n += 1\n    return")
    for program in ({"steps": [step]}, stream):
        want = _observed(tiny_tasks, tmp_path, gold, program["steps"]).observations[0]
        got = _observed(tiny_tasks, tmp_path, wrong, program["steps"]).observations[0]
        assert (want == got) == (program is not stream), (want, got)
    # The kind of iterator is drawn per stream, fixed by the program (gold's answers were recorded on it): code gold
    # for one kind only is not gold for the others; how far each was read is observed alike.
    seen = "def f(n, xs, tail=()):\n    return [type(xs).__name__, getattr(xs, '__qualname__', ''), next(xs)]\n"
    many = [p for p in forms([{"steps": [{**step, "args": [["int", n], items], "kwargs": []}]} for n in range(12)], 60)
            if p["steps"][0]["args"][1][0] == "stream"]
    kinds = {}
    for program in many:
        [observed] = _observed(tiny_tasks, tmp_path, seen, program["steps"]).observations[0]
        kinds[observed[1][1][0][1]] = observed
    assert kinds.keys() == {"generator", "list_iterator"}, kinds
    assert kinds["generator"][1][1][1] == ["str", "<genexpr>"] and kinds["list_iterator"][1][1][1] == ["str", ""]
    assert all(o[1][1][2] == ["int", 1] and ["taken", [[0, 1]]] in o[2:] for o in kinds.values()), kinds


def test_forms_read_what_they_ask_and_hand_more_arguments(tiny_tasks, tmp_path):
    """Red team 13, X13t and X13n, the two that `forms` still paid: `distinct_permutations` deduplicating a string's
    letters (its text form was cut right after the call: a check that it answers an iterator, nothing of its items),
    and toolz `dissoc` ignoring the last of 3+ keys (the tests hand one or two). An iterator no step reads is read;
    a call is handed more of its last argument, each of its mappings holding the added keys; the calls of the
    deleted definitions come first, and of each, a step whose answer the program reads."""
    from feature_deletion.behaviour import FORM_MORE, FORM_READS, forms

    f = {"op": "call", "fn": ["ref", "fdcalc", "f"], "args": [["list", [["str", "a"], ["str", "b"]]]], "kwargs": []}
    g = {**f, "fn": ["ref", "fdcalc", "g"]}
    nxt = {"op": "next", "obj": ["slot", 0, []]}
    it = ["ok", ["handle", 0, "iterator"]]
    # g is the deleted one: its forms come first; f's from the program that reads f's answer first
    made = forms([{"steps": [f], "expect": [it]}, {"steps": [f, nxt]}, {"steps": [g], "expect": [it]}],
                 targets=[["fdcalc", "g", "def"]])
    assert [p["steps"][0]["fn"][2] for p in made[:4]] == ["g"] * 4, made
    first_f = next(p for p in made if p["steps"][0]["fn"][2] == "f")
    assert first_f["steps"][1:] == [nxt], first_f  # the program that read it, as it read it
    text_g = next(p for p in made if p["steps"][0]["args"] == [["str", "ab"]] and p["steps"][0]["fn"][2] == "g")
    assert text_g["steps"][1:] == [nxt] * FORM_READS, text_g  # read, though the source program did not read it

    d = ["dict", [[["str", "a"], ["int", 1]]]]
    dissoc = {"op": "call", "fn": ["ref", "fdcalc", "dissoc"], "args": [d, ["str", "a"]], "kwargs": []}
    others = [{"steps": [{**dissoc, "args": [["dict", []], ["str", k]]}]} for k in "xyz"]
    more = next(p for p in forms([{"steps": [dissoc]}, *others]) if len(p["steps"][0]["args"]) > 2)
    args = more["steps"][0]["args"]
    assert args[1:] == [["str", k] for k in "axyz"[:1 + FORM_MORE]], args  # keys it did not hold yet
    assert [k for k, _ in args[0][1]] == args[1:], args  # and the mapping holds them

    gold = ("def f(xs):\n    return (tuple(xs[i:] + xs[:i]) for i in range(len(xs)))\n"
            "def dissoc(d, *keys):\n    return {k: v for k, v in d.items() if k not in keys}\n")
    wrong = gold.replace("for i in range(len(xs)))", "for i in range(len(xs))) if type(xs) is not str else "
                         "iter([tuple(dict.fromkeys(xs))])").replace("not in keys}", "not in keys[:2]}")
    for program in ([{**f, "args": [["str", "aab"]]}] + [nxt] * FORM_READS, more["steps"]):
        want = _observed(tiny_tasks, tmp_path, gold, program).observations[0]
        got = _observed(tiny_tasks, tmp_path, wrong, program).observations[0]
        assert want != got and (want[0] == got[0]) == (len(program) > 1), (want, got)  # the iterator: its items


def test_types_hand_a_deleted_function_every_everyday_type(tiny_tasks, tmp_path):
    """Red team 13, X13s: gold with a guard that raises the stub's error for any type no check hands the deleted
    function was paid on 47 of 51 tasks. `types` hands each deleted function's recorded inputs as the other everyday
    types, each type once for each function before any again; gold's answer (an exception too) is the check."""
    from feature_deletion.behaviour import FORM_READS, types

    chars = ["list", [["str", "a"], ["str", "b"]]]
    g = {"op": "call", "fn": ["ref", "fdcalc", "g"], "args": [chars, ["int", 2]], "kwargs": []}
    f = {**g, "fn": ["ref", "fdcalc", "f"]}
    nxt = {"op": "next", "obj": ["slot", 0, []]}
    made = types([{"steps": [f, nxt]}, {"steps": [g]}, {"steps": [g, nxt]}], [["fdcalc", "g", "def"]])
    assert made and all(p["steps"][0]["fn"][2] == "g" for p in made), made  # the deleted one's calls only
    handed = [(p["steps"][0]["args"][0][0], p["steps"][0]["args"][1][0]) for p in made]
    firsts = {}
    for i, pair in enumerate(handed):
        for tag in {pair[0] if pair[0] != "list" else None, pair[1] if pair[1] != "int" else None} - {None}:
            firsts.setdefault(tag, i)
    assert {"NoneType", "tuple", "str", "int", "set", "dict", "float", "bool"} <= firsts.keys(), handed
    assert max(firsts.values()) < len(firsts), handed  # each type once before any type again
    assert all(p["steps"][1:] in ([], [nxt] * FORM_READS) for p in made), made

    gold = "def g(xs, n=1):\n    return [str(x) * 2 for x in (xs if hasattr(xs, '__iter__') else [xs])][:n]\n"
    wrong = gold.replace("    return", "    if type(xs) is not list:\n        raise NotImplementedError\n    return")
    tupled = next(p for p in made if p["steps"][0]["args"][0][0] == "tuple")["steps"]
    want = _observed(tiny_tasks, tmp_path, gold, tupled).observations[0]
    got = _observed(tiny_tasks, tmp_path, wrong, tupled).observations[0]
    assert want[0] == ["ok", ["list", [["str", "aa"], ["str", "bb"]]]], want
    assert got[0][:2] == ["raises", "builtins.NotImplementedError"], got


def _answers(tiny_tasks, tmp_path, source: str, programs: list[dict], every: bool = False) -> list[list]:
    """Each program's first observation (or, with `every`, all of them), all replayed at once on a package whose
    module is `source`."""
    rows, _, _ = tiny_tasks
    root = tmp_path / str(len(list(tmp_path.iterdir())))
    root.mkdir()
    _package(root, source)
    replay = run_programs(root, _task(rows, "add:body"), ensure_runner(), Limits(), programs, {})
    assert replay.returncode == 0, replay.output_tail
    return [o if every else o[0] for o in replay.observations]


def test_sizes_hand_a_recorded_input_at_sizes_no_recorded_step_holds(tiny_tasks, tmp_path):
    """Red team 20, Z20: gold with a guard that raises the stub's error for any argument past 1,000 items was paid on
    60 of 62 tasks: a recorded step holds a few hundred items at most. Red team 21 then refused every long input that
    is not k copies of a shorter one (P21: the fix only repeated), and every large dict or set (D21). `sizes` hands
    each deleted function's recorded sequences, text, sets and mappings again at one size drawn from each part of
    `SIZE_PARTS` for each way the driver grows them (copies, drawn items, fresh items, sorted fresh items; new keys),
    keeps a program only where gold answers quickly (`quick`), and the replay tells each guard from gold."""
    from feature_deletion.behaviour import GROWN_HOWS, GROWN_KINDS, SIZE_PARTS, sizes

    g = {"op": "call", "fn": ["ref", "fdcalc", "g"], "kwargs": [],
         "args": [["list", [["int", 1], ["int", 2]]], ["str", "ab cd"], ["dict", [[["str", "k"], ["int", 1]]]]]}
    made = sizes([{"steps": [g]}, {"steps": [{**g, "fn": ["ref", "fdcalc", "f"]}]}], [["fdcalc", "g", "def"]],
                 limit=40)
    assert made and all(p["quick"] and p["steps"][0]["fn"][2] == "g" for p in made), made
    handed = [(key, arg[1]) for p in made for key, arg in enumerate(p["steps"][0]["args"]) if arg[0] == "grown"]
    kinds = [(key, arg[1]) for p in made for key, arg in enumerate(p["steps"][0]["args"]) if arg[0] == "sub"]
    assert len(made) == len(handed) + len(kinds) == 36 and len(kinds) == 6, made  # one argument grown per program
    # each large as two kinds of container (C23), naturally grown
    assert all(a[3][0] == "grown" and a[3][1][0] == "natural" and a[0] in GROWN_KINDS[a[3][1][1][0]] + ("array",)
               for _, a in kinds) and len({a[0] for _, a in kinds}) == 6, kinds
    first = sizes([{"steps": [g]}], [["fdcalc", "g", "def"]], limit=18)  # each type and way once before a second
    assert sorted((a[1][1][0], a[1][0]) if a[0] == "grown" else ("sub", a[1][3][1][1][0])
                  for p in first for a in p["steps"][0]["args"] if a[0] in ("grown", "sub")) == sorted(
        [(tag, how) for tag in ("list", "set", "str", "dict") for how in GROWN_HOWS[tag]]
        + [("sub", tag) for tag in ("list", "str", "dict")]), first
    for key, tag in ((0, "list"), (0, "set"), (1, "str"), (2, "dict")):  # a list of numbers as a set too
        hows = sorted((how, size) for k, (how, enc, size, _) in handed if k == key and enc[0] == tag)
        assert [h for h, _ in hows] == sorted(GROWN_HOWS[tag] * 2), hows  # each way, at one size of each part
        for (_, small), (_, large) in zip(hows[::2], hows[1::2]):
            assert SIZE_PARTS[0][0] <= small <= SIZE_PARTS[0][1] <= large <= SIZE_PARTS[1][1], hows
    number = sizes([{"steps": [{**g, "args": [["int", 7]]}]}], [["fdcalc", "g", "def"]])
    assert sorted(p["steps"][0]["args"][0][1][1][0] for p in number) == ["str"] * 4 + ["tuple"] * 4, number
    stream = ["stream", {"items": [["int", 1], ["int", 2]], "end": True}]
    streamed = sizes([{"steps": [{**g, "args": [stream]}]}], [["fdcalc", "g", "def"]])
    assert sorted(p["steps"][0]["args"][0][1][0] for p in streamed) == sorted(GROWN_HOWS["stream"] * 2)
    lengths = _answers(tiny_tasks, tmp_path, "def g(xs):\n    return [type(xs).__name__, len(list(xs))]\n", streamed)
    assert sorted(o[1][1][0][1] for o in lengths) == ["generator"] * 4 + ["list_iterator"] * 4, lengths  # G23
    for program, answer in zip(streamed, lengths):
        how, _, size, _ = program["steps"][0]["args"][0][1]
        assert answer[1][1][1][1] == size if how != "copies" else answer[1][1][1][1] >= size, (how, answer)
    assert made == sizes([{"steps": [g]}], [["fdcalc", "g", "def"]], limit=40)  # drawn from the step: made again alike

    gold = "def g(xs, text='', table=None):\n    return [len(xs), len(text), len(table or ()), len(set(xs))]\n"
    guards = {  # Z20: anything past 1,000 items; P21: long and no repetition of a shorter one; D21: large mappings
        "Z20": "any(len(v) > 1000 for v in (xs, text, table or ()))",
        "P21": "any(len(s) > 1000 and (s + s).find(s, 1) == len(s) for s in (text, ','.join(map(str, xs)) + ','))",
        "D21": "len(table or ()) > 1000",
        # N22: the shapes real data has: different items, a paragraph
        "N22": "len(xs) > 1000 and len(set(xs)) == len(xs) or len(set(text.split())) >= 60",
        # L23: a large container inside one; C23: a large one of no plain builtin type; T23: punctuated prose
        "L23": "any(type(i) in (list, tuple) and len(i) > 1000 for v in (xs, (table or {}).values()) for i in v)",
        "C23": "any(type(v) not in (list, tuple, set, str, dict) and len(v) > 1000 for v in (xs, text, table or {}))",
        "T23": "len(text) > 1000 and any(c in text for c in \"'-()0123456789\")"}
    want = _answers(tiny_tasks, tmp_path, gold, made)
    for program, answer in zip(made, want):
        grown_args = [(k, a[1]) for k, a in enumerate(program["steps"][0]["args"]) if a[0] == "grown"]
        if not grown_args or grown_args[0][1][0] == "inner":  # another kind of container, one large item
            assert answer[0] in ("ok", "raises"), (program, answer)
            continue
        (key, (how, enc, size, _)), = grown_args
        assert answer[0] == "ok" and answer[1][1][key][1] >= size, (program, answer)
        if how != "copies":
            assert answer[1][1][key][1] == size, (how, enc, answer)
            if key == 0:  # fresh items are mostly new ones
                assert answer[1][1][3][1] > (size // 2 if how != "drawn" else 0), (how, enc, answer)
    for name, guard in guards.items():
        wrong = gold.replace("    return", f"    if {guard}:\n        raise NotImplementedError\n    return")
        got = _answers(tiny_tasks, tmp_path, wrong, made)
        refused = [p["steps"][0]["args"] for p, o in zip(made, got) if o[:2] == ["raises", "builtins.NotImplementedError"]]
        assert refused, name
        if name == "P21":
            assert not any(x[0] == "grown" and x[1][0] == "copies" for a in refused for x in a) \
                and len(refused) >= 10, refused
        grown_ways = {(a[1][1][0], a[1][0]) for args in refused for a in args if a[0] == "grown"}
        if name in ("N22", "T23"):
            assert grown_ways >= {("str", "natural")} | ({("list", "natural")} if name == "N22" else set()), refused
        if name == "L23":
            assert grown_ways == {("list", "inner"), ("dict", "inner")}, refused
        if name == "C23":
            assert {a[1][3][1][1][0] for args in refused for a in args if a[0] == "sub"} == {"list", "str", "dict"}


def test_natural_growth_makes_the_shapes_real_data_has():
    """Red team 22, N22: a guard refusing large inputs of the shapes real data has (`list(range(n))`, ids, a
    vocabulary, an index `{key: i}`, `set(range(n))`, a paragraph) refused none of the other grown inputs and was paid
    on 60 of 62 tasks. `fd_calls._natural` makes them, each shape drawn by the seed, in the recorded items' kind."""
    fd_calls = _fd_calls()

    def grown(enc, size, seed):
        return fd_calls._grown("natural", enc, size, seed, None)

    ints = [grown(["list", [["int", 3], ["int", 9]]], 2000, seed) for seed in range(20)]
    assert all(len(set(x)) == len(x) == 2000 and all(type(i) is int for i in x) for x in ints)
    spans = [max(x) - min(x) + 1 for x in ints]
    # an even seed (each function's first size) is a range, `list(range(a, a + n))` mostly in order; ids spread wider
    assert spans[::2] == [2000] * 10 and min(spans[1::2]) > 2000 and max(spans[1::2]) > 4000, spans
    mixed = [grown(["list", [["int", 1], ["str", "a"], ["int", 2]]], 1500, seed) for seed in range(8)]
    assert all(type(i) is int for i in mixed[0]) and sorted(mixed[0]) == list(range(min(mixed[0]), min(mixed[0]) + 1500))
    assert any(all(type(i) is str for i in x) for x in mixed[1::2]), mixed  # a column holds one kind of item
    assert any(x == sorted(x) for x in ints) and any(x != sorted(x) for x in ints)
    names = grown(["list", [["str", "first_name"], ["str", "Max-Age"]]], 3000, 1)
    assert len(set(names)) == 3000 and all(("_" in n or "-" in n) and n.strip("_-") == n for n in names), names[:9]
    starts = sum(any(m != n and m.startswith(n) for m in names[:300]) for n in names[:300])
    assert starts < 60, starts  # a vocabulary, not the recorded names lengthened
    records = grown(["tuple", [["tuple", [["str", "k"], ["int", 1]]]]], 1500, 2)
    assert len({k for k, _ in records}) == len({v for _, v in records}) == 1500, records[:5]
    text = grown(["str", "the cat sat"], 5000, 3)
    words = [w.strip(',.?!;:"()').lower() for w in text.split()]
    assert len(text) == 5000 and len(set(words)) >= 200 and "the" in words and text.lstrip('"')[0].isupper(), text[:200]
    assert re.search(r"[a-z]'[a-z]", text) and re.search(r"[a-z]-[a-z]", text) and re.search(r"[0-9]", text), text
    assert 2 <= sum(map(len, words)) / len(words) <= 12, text[:200]
    assert grown(["str", "12"], 1200, 4).isdigit() and grown(["bytes", "6162"], 1200, 4).decode().count(" ") > 100
    tables = [grown(["dict", [[["str", "k"], ["int", 1]]]], 1200, seed) for seed in range(12)]
    assert all(type(t) is dict and len(t) == 1200 for t in tables)
    assert all(sorted(t.values()) == list(range(min(t.values()), min(t.values()) + 1200)) for t in tables[::2])  # index
    assert any(len(set(t.values())) < 10 for t in tables)  # the recorded values
    counts = grown(["Counter", [[["str", "k"], ["int", 4]]]], 1500, 5)
    assert type(counts) is collections.Counter and len(counts) == 1500 and counts.most_common(1)[0][1] > 10
    sets = [grown(["set", [["int", 0]]], 1001, seed) for seed in range(6)]
    assert all(type(s) is set and len(s) == 1001 for s in sets) and any(max(s) - min(s) == 1000 for s in sets)
    assert grown(["list", [["int", 3]]], 2000, 7) == grown(["list", [["int", 3]]], 2000, 7)  # the seed decides


def test_a_deleted_class_only_the_package_makes_is_reached_through_the_calls_that_make_it():
    """Red teams 20-21: cachetools' `TTLCache._Link` (a deleted class that only `TTLCache`'s own methods make) got
    no large or subclassed input: those programs handed only the deleted definitions' own calls, and no recorded
    step calls `_Link`. Where no call of a deleted definition has an argument to change, the calls that reach it
    are handed them; where one has, only it is."""
    from feature_deletion.behaviour import sizes, subclasses

    setitem = {"op": "method", "obj": ["slot", 0, []], "name": "__setitem__", "args": [["str", "key"], ["int", 1]],
               "kwargs": []}
    made = {"op": "call", "fn": ["ref", "fdcalc", "TTLCache"], "args": [["str", "ttl"]], "kwargs": []}
    programs = [{"steps": [made, setitem]}]
    link = [["fdcalc", "TTLCache._Link", "def"]]
    for build in (sizes, subclasses):
        handed = build(programs, link)
        assert any(p["steps"][0] == made and p["steps"][1]["args"] != setitem["args"] for p in handed), handed
        own = build(programs, [["fdcalc", "TTLCache", "def"]])  # the class's own call is deleted: only it changes
        assert own and all(p["steps"][0] != made for p in own), own


def test_subclassed_objects_make_the_packages_class_as_a_users_subclass(tiny_tasks, tmp_path):
    """Users derive their own caches and mappings from a package's classes; the tests make the class itself. Code
    that refused every subclass (`type(self) is not Box`) answered as gold on every check. `subclassed_objects` makes
    a recorded program's object of a class with deleted code as a user's subclass of it, every later step kept."""
    from feature_deletion.behaviour import subclassed_objects

    new = {"op": "new", "cls": ["ref", "fdcalc", "Box"], "args": [["int", 3]], "kwargs": []}
    get = {"op": "method", "obj": ["slot", 0, []], "name": "get", "args": [], "kwargs": []}
    other = {**new, "cls": ["ref", "fdcalc", "Other"]}
    made = subclassed_objects([{"steps": [new, get]}, {"steps": [other, get]}], [["fdcalc", "Box.get", "body"]])
    assert len(made) == 1 and made[0]["steps"][1] == get and made[0]["steps"][0]["cls"][0] == "sub", made
    gold = "class Box:\n    def __init__(self, x):\n        self.x = x\n\n    def get(self):\n        return self.x * 2\n"
    wrong = gold.replace("        return self.x", "        if type(self) is not Box:\n            raise NotImplementedError\n"
                                               "        return self.x")
    want, got = (_answers(tiny_tasks, tmp_path, source, made, every=True)[0] for source in (gold, wrong))
    _, name, module, _ = made[0]["steps"][0]["cls"][1]
    assert want[0][:2] == ["ok", ["handle", 0, f"{module}.{name}"]] and want[1][:2] == ["ok", ["int", 6]], want
    assert got[1][:2] == ["raises", "builtins.NotImplementedError"], got


CACHE = """class Cache:
    def __init__(self, maxsize, ttu):
        self.maxsize, self.ttu, self.data = maxsize, ttu, {}

    def __setitem__(self, key, value):
        if self.ttu(key, value, 0) <= 0:
            return  # expired as it is stored
        while len(self.data) >= self.maxsize:
            self.popitem()
        self.data[key] = value

    def __getitem__(self, key):
        return self.data[key]

    def __len__(self):
        return len(self.data)

    def popitem(self):
        key = min(self.data)
        return key, self.data.pop(key)
"""


def test_filled_objects_hold_more_than_any_test_stores(tiny_tasks, tmp_path):
    """Red team 23, S23: gold with a guard that raised the stub's error in a cache's deleted method once the cache
    held more than 1,000 entries was paid on 11 of 13 cachetools tasks: the tests store a few dozen, and `sizes` grows
    arguments, not the object a method runs on. `filled` fills a recorded program's object (right after it is made,
    before its own steps) with new items like those it stored, one store at a time through the driver's `fill`: held
    (the object's size numbers raised), full and evicting, and as recorded. A callback with arguments (a `ttu`) answers
    the new ones with its latest recorded answer, and a lookup that answered None is no store."""
    from feature_deletion.behaviour import SIZE_PARTS, filled

    ttu = ["callback", {"calls": [[[[["str", "a"], ["int", 1], ["int", 0]], []], ["int", 5]],
                                  [[[["str", "b"], ["int", 2], ["int", 0]], []], ["int", -1]]]}]
    new = {"op": "new", "cls": ["ref", "fdcalc", "Cache"], "args": [["int", 2]], "kwargs": [["ttu", ttu]]}

    def on(name, *args):
        return {"op": "method", "obj": ["slot", 0, []], "name": name, "args": list(args), "kwargs": []}
    steps = [new, on("__setitem__", ["str", "a"], ["int", 1]), on("__setitem__", ["str", "b"], ["int", 2]),
             on("__getitem__", ["str", "a"]), on("__len__"), on("popitem")]
    none = ["ok", ["NoneType", None]]
    recorded = {"steps": steps, "expect": [["ok", ["handle", 0, "fdcalc.Cache"]], none, none, none,
                                           ["ok", ["int", 1]], ["ok", ["tuple", [["str", "a"], ["int", 1]]]]]}
    made = filled([recorded], [["fdcalc", "Cache.popitem", "def"]])
    assert len(made) == 4 and all(p["quick"] for p in made), made
    fills = [p["steps"][1] for p in made]
    assert all(f["op"] == "fill" and f["name"] == "__setitem__" and f["pairs"] for f in fills), fills  # no lookup
    assert all(p["steps"][2:] == steps[1:] for p in made)  # its own steps after, on the same object
    sizes = [f["args"][0][1][2] for f in fills]
    assert SIZE_PARTS[0][0] <= sizes[0] <= SIZE_PARTS[0][1] <= sizes[1] and sizes[2] == 2 * sizes[0] == 2 * sizes[3]
    assert [p["steps"][0]["args"] for p in made] == [[["int", 2 + sizes[0]]], [["int", 2 + sizes[1]]],
                                                     [["int", 2 + sizes[0]]], [["int", 2]]]
    assert all(p["steps"][0]["kwargs"][0][1][1]["otherwise"] == ["int", 5] for p in made)
    guarded = CACHE.replace("    def popitem(self):\n", "    def popitem(self):\n        if len(self.data) > 1000:\n"
                                                      "            raise NotImplementedError\n")
    want, got = (_answers(tiny_tasks, tmp_path, source, made, every=True) for source in (CACHE, guarded))
    lengths = [w[5][1][1] for w in want]  # "b" expired as it was stored; "a" may be among the new keys
    assert sizes[0] <= lengths[0] <= sizes[0] + 1 and sizes[1] <= lengths[1] <= sizes[1] + 1, want
    assert lengths[2:] == [sizes[0] + 2, 2] and [w[1][:2] for w in want] == [none] * 4, want  # full; as recorded
    assert want[0][1][2] == ["called", [[0, sizes[0]]]], want[0][1]  # the ttu, once for each new key
    assert got[3] == want[3] and got[2][1][:2] == ["raises", "builtins.NotImplementedError"], got  # evicting
    assert got[0][:6] == want[0][:6] and got[0][6][:2] == ["raises", "builtins.NotImplementedError"], got[0]


def test_scripts_hand_text_as_users_write_it(tiny_tasks, tmp_path):
    """Red team 24: gold with a guard refusing any character past U+00FF was paid on 59 of 62 tasks (W24), one
    refusing a tab or a carriage return on 61 (K24): the held-out forms added only "é", and no bundled test holds a
    tab; red team 25 then refused combining marks, joiners and variation selectors (M25) and spaces past ASCII (U25),
    both paid on 61 of 62. `scripts` hands each deleted function's text arguments, their items, keys and values too,
    with a letter of another script first, with typographic marks, with a tab or Windows line ends, with a letter of
    several code points first and with a Unicode space; the replay tells each guard from gold."""
    from feature_deletion.behaviour import CONTROLS, JOINED, LATIN, SCRIPTS, SPACES, SURROGATES, SYMBOLS, scripts

    g = {"op": "call", "fn": ["ref", "fdcalc", "g"], "kwargs": [],
         "args": [["str", "the author's cat"], ["list", [["str", "a b"], ["int", 1]]],
                  ["dict", [[["str", "k"], ["str", "line\n"]]]]]}
    made = scripts([{"steps": [g]}, {"steps": [{**g, "fn": ["ref", "fdcalc", "f"]}]}], [["fdcalc", "g", "def"]])
    assert len(made) == 30 and all(p["steps"][0]["fn"][2] == "g" for p in made), made  # 3 arguments, 10 changes
    texts = [a for p in made for a in p["steps"][0]["args"] if a not in g["args"]]
    assert len(texts) == 30, texts  # one argument changed per program
    assert all(set(string.punctuation) <= set(s) for s in SYMBOLS)  # URLs, markup, templates, money, paths
    assert sum(t[0] == "str" and t[1].endswith(" " + g["args"][0][1]) and t[1][:-17] in SYMBOLS for t in texts) == 1
    assert texts[0][1][0] in SCRIPTS and texts[0][1][1:] == "the author's cat", texts
    assert ["str", "the author’s cat"] in texts and ["str", "the\tauthor's cat"] in texts, texts
    assert ["list", [["str", "a\tb"], ["int", 1]]] in texts and ["list", [["str", "a b’s"], ["int", 1]]] in texts
    assert ["dict", [[["str", "k\t"], ["str", "line\r\n"]]]] in texts, texts  # keys and values
    cat = g["args"][0][1]
    joined = [t for t in texts if t[0] == "str" and t[1][:-len(cat)] in JOINED]
    spaced = [t for t in texts if t[0] == "str" and t[1][3:4] in SPACES and f"{t[1][:3]} {t[1][4:]}" == cat]
    latin = [t for t in texts if t[0] == "str" and t[1][:1] in LATIN and t[1][1:] == cat]
    inside = [t for t in texts if t[0] == "str" and t[1][1:2] in LATIN and t[1][:1] + t[1][2:] == cat]  # L29
    assert len(joined) == 1 and len(spaced) == 1 and len(latin) == 1 and len(inside) == 1, texts
    control = [t for t in texts if t[0] == "str" and t[1][1:-len(cat) + 1] in CONTROLS and t[1][0] + t[1][-15:] == cat]
    surrogate = [t for t in (bytes.fromhex(t[1]).decode("utf-8", "surrogatepass") for t in texts if t[0] == "strx")
                 if t[1:2] in SURROGATES and t[:1] + t[2:] == cat]
    assert len(control) == 1 and len(surrogate) == 1, texts  # red team 30: C30, S30
    assert any(t[0] == "list" and t[1][0][1][1] in SPACES for t in texts), texts  # "a b", its space another one
    source = "def g(text, items, record):\n    return [text, items, record]\n"
    guards = [source.replace("    return", f"    if any({test} for v in (text, *items, *record, *record.values())):\n"
                                          "        raise NotImplementedError\n    return")
              for test in ("max(map(ord, str(v))) > 255", "'\\t' in str(v) or '\\r' in str(v)", "'\u2019' in str(v)",
                           "any(unicodedata.category(c) in ('Mn', 'Mc', 'Cf', 'Sk') for c in str(v))",
                           "any(c.isspace() and c not in ' \\t\\n\\r' for c in str(v))",
                           "any(c in str(v) for c in '%$={<\\\\')",
                           f"any(c in str(v) for c in {''.join(LATIN)!r})",
                           "any(ord(c) < 32 and c not in '\\t\\n\\r\\x0b\\x0c' or c == '\\x7f' for c in str(v))",
                           "any(0xd800 <= ord(c) < 0xe000 for c in str(v))")]
    guards[3:] = ["import unicodedata\n" + guard for guard in guards[3:]]
    want, *got = (_answers(tiny_tasks, tmp_path, code, made) for code in (source, *guards))
    assert all(w[0] == "ok" for w in want), want
    for answers in got:
        assert sum(a[:2] == ["raises", "builtins.NotImplementedError"] for a in answers) >= 3, answers


def test_numbers_and_nested_hand_data_as_users_have_it(tiny_tasks, tmp_path):
    """Red team 24: gold with a guard refusing any value of the `decimal`, `fractions` or `datetime` modules was paid
    on 60 of 62 tasks (V24), one refusing ints of 2**64 or more on every task tried (B24), one refusing data nested
    four containers deep on 61 of 62 (D24): no recorded input held one. `numbers` hands each deleted function's
    numbers (items, keys and values too) as a `Decimal`, a `Fraction`, past 2**64, a date or duration and a
    datetime, and an argument holding no number as each of those; `nested` hands each argument as a document and a
    tree nested 4 to 10 containers deeper; the replay tells each guard from gold."""
    from feature_deletion.behaviour import NESTED_LEVELS, NUMBER_CHANGES, ZONES, nested, numbers

    g = {"op": "call", "fn": ["ref", "fdcalc", "g"], "kwargs": [],
         "args": [["int", 7], ["list", [["float", "9.99"], ["int", 2]]],
                  ["dict", [[["str", "id"], ["int", 1]],
                            [["str", "user"], ["dict", [[["str", "city"], ["str", "Oslo"]]]]]]],
                  ["str", "cat"]]}
    programs = [{"steps": [g]}, {"steps": [{**g, "fn": ["ref", "fdcalc", "f"]}]}]
    made = numbers(programs, [["fdcalc", "g", "def"]])
    assert all(p["steps"][0]["fn"][2] == "g" for p in made), made
    handed = [(k, a) for p in made for k, a in enumerate(p["steps"][0]["args"]) if a != g["args"][k]]
    assert len(handed) == len(made) == 4 * len(NUMBER_CHANGES), handed  # one argument changed a program, each way
    first = [a for k, a in handed if k == 0]
    assert ["Decimal", "7"] in first and ["Fraction", [7, 1]] in first and ["date", "2024-01-08"] in first, first
    assert ["datetime", ["2024-01-01T00:07:00", None]] in first, first
    big = int(next(a[1] for a in first if a[0] == "bigint"))
    assert abs(big) >= 1 << 64 and abs(big) % 100 == 7, big  # past 64 bits, its last digits kept (`ordinal`)
    rows = [a[1] for k, a in handed if k == 1]
    assert [["Decimal", "9.99"], ["Decimal", "2"]] in rows, rows
    assert [["Fraction", [999, 100]], ["Fraction", [2, 1]]] in rows, rows
    assert [["timedelta", [0, 9, 990000]], ["date", "2024-01-03"]] in rows, rows
    assert all(a[1][1] == g["args"][2][1][1] for k, a in handed if k == 2), handed  # only numbers change
    assert ["float", "7e-07"] in first and ["float", "7e+17"] in first and ["float", "inf"] in first, first
    assert ["float", "-0.0"] in first and [["float", "-0.0"]] * 2 in rows, (first, rows)  # Z30
    assert {a[0] for k, a in handed if k == 3} == {"Decimal", "Fraction", "bigint", "date", "datetime", "time", "float"}
    zones = [a[1][1] for k, a in handed if k == 0 and a[0] in ("datetime", "time")]
    assert zones.count(None) == 1 and len(zones) == 3 and all(z[2] in dict(ZONES).values() for z in zones if z)

    deep = nested(programs, [["fdcalc", "g", "def"]])
    assert len(deep) == 10 and all(p["steps"][0]["fn"][2] == "g" for p in deep), deep  # 4 arguments, 2 ways; cycles
    cycles = [p for p in deep if any(a[0] == "cyclic" for a in p["steps"][0]["args"])]
    deep = [p for p in deep if p not in cycles]
    cyclic = [[a[1] for a in p["steps"][0]["args"] if a[0] == "cyclic"] for p in cycles]
    assert cyclic == [[g["args"][1]], [g["args"][2]]], cyclic

    def depth(enc) -> int:
        if enc[0] in ("list", "tuple", "set", "frozenset"):
            return 1 + max((depth(i) for i in enc[1]), default=0)
        if enc[0] == "dict":
            return 1 + max((max(depth(k), depth(v)) for k, v in enc[1]), default=0)
        return 0

    for p in deep:
        (key, arg), = [(k, a) for k, a in enumerate(p["steps"][0]["args"]) if a != g["args"][k]]
        assert depth(arg) >= depth(g["args"][key]) + NESTED_LEVELS[0], arg

    source = "def g(amount, rows, record, word):\n    return [repr(amount), repr(rows), repr(record), repr(word)]\n"
    walk = "\n\ndef _all(v, d=0):\n    yield v, d\n" + "".join(f"{line}\n" for line in (
        "    if isinstance(v, dict):", "        for k, x in v.items():", "            yield from _all(k, d + 1)",
        "            yield from _all(x, d + 1)", "    elif isinstance(v, (list, tuple, set, frozenset)):",
        "        for x in v:", "            yield from _all(x, d + 1)"))
    guards = {"V24": "type(v).__module__ in ('decimal', 'fractions', 'datetime')",
              "Z26": "getattr(v, 'tzinfo', None) is not None",
              "B24": "type(v) is int and abs(v) >= 1 << 64", "D24": "d >= 5",  # d: under the tuple of arguments
              "E28b": "type(v) is float and (0 < abs(v) < 1e-4 or abs(v) > 1e16)", "Z30": "repr(v) == '-0.0'"}
    guarded = [source.replace("    return", f"    if any({test} for v, d in _all((amount, rows, record, word))):\n"
                                            "        raise NotImplementedError\n    return") + walk
               for test in guards.values()]
    want, *got = (_answers(tiny_tasks, tmp_path, code, made + deep) for code in (source, *guarded))
    assert all(w[0] == "ok" for w in want), want
    for name, answers in zip(guards, got):
        refused = [p for p, a in zip(made + deep, answers) if a[:2] == ["raises", "builtins.NotImplementedError"]]
        assert len(refused) >= (4 if name != "B24" else 2), (name, answers)
        assert all(a[0] == "ok" for p, a in zip(made + deep, answers) if p not in refused), (name, answers)
    # Y30: a list and a record that hold themselves, which gold reads as any other (one level down here)
    shallow = "def g(amount, rows, record, word):\n    return [len(rows), sorted(record), rows[-1] is rows]\n"
    held = ("    if any(x is v for v in (rows, record) for x in (v.values() if isinstance(v, dict) else v)):\n"
            "        raise NotImplementedError\n")
    want, got = (_answers(tiny_tasks, tmp_path, code, cycles) for code in (shallow, shallow.replace(
        "    return", held + "    return")))
    assert [w[1][1][2] for w in want] == [["bool", True], ["bool", False]], want
    assert ["str", "parent"] in want[1][1][1][1][1] and all(a[:2] == ["raises", "builtins.NotImplementedError"]
                                                               for a in got), (want, got)


def test_callables_hand_callbacks_as_users_callables_are(tiny_tasks, tmp_path):
    """Red team 25: every test's callback was replayed as a plain function, whatever it was, and gold with a guard
    refusing a bound method (F25: `d.get`, `pattern.search`, a clock object's `now`) or a callable `functools` makes
    (O25: a `partial`, an `lru_cache`d function) was paid on all 18 tasks whose deleted code takes one. `callables`
    hands each callback of a deleted function's call again as a user object's method, a mapping's `__getitem__`, a
    method-wrapper, a partial, a memoized function and a callable object, the builtin method and the memoized
    function only where its answers allow; the answers are
    the table's, and the replay tells each guard from gold."""
    from feature_deletion.behaviour import CALLABLE_HOWS, REF_GETTERS, USER_CLASS_NAMES, callables

    key = ["callback", {"calls": [[[[["str", "a"]], []], ["int", 1]], [[[["str", "b"]], []], ["int", 2]],
                                  [[[["str", "a"]], []], ["int", 1]]], "names": {"__name__": "rank"}}]
    clock = ["callback", {"calls": [[[[], []], ["int", 5]], [[[], []], ["int", 7]]]}]  # not a function of arguments
    measure = ["ref", "builtins", "len"]  # a function the tests name
    g = {"op": "call", "fn": ["ref", "fdcalc", "g"], "kwargs": [["clock", clock], ["measure", measure]],
         "args": [["list", [["str", "a"], ["str", "b"], ["str", "a"]]], key]}
    made = callables([{"steps": [g]}, {"steps": [{**g, "fn": ["ref", "fdcalc", "f"]}]}], [["fdcalc", "g", "def"]])
    hows = [(k, a[1]["as"][0] if a[0] == "callback" else a[1][0]) for p in made
            for k, a in [*enumerate(p["steps"][0]["args"]), *p["steps"][0]["kwargs"]]
            if a[0] == "callback" and "as" in a[1] or a[0] == "callable"]
    assert len(hows) == len(made) == 16, made  # one callable changed per program
    assert sorted(h for k, h in hows if k == 1) == sorted(CALLABLE_HOWS), hows
    assert sorted(h for k, h in hows if k == "clock") == ["method", "object", "partial", "wrapper"], hows
    assert sorted(h for k, h in hows if k == "measure") == ["getter", "method", "object", "partial", "wrapper"], hows
    assert all(a[1]["as"][1] in USER_CLASS_NAMES for p in made for a in p["steps"][0]["args"] if "as" in a[1])

    source = ("def g(items, key, clock, measure):\n    return [[key(x) for x in items], clock(), clock(),"
              " type(getattr(key, '__self__', None)).__name__, measure(items)]\n")
    guards = {"F25": "type(f).__name__ in ('method', 'method-wrapper') or repr(f).startswith('<built-in method ')",
              "O25": "type(f).__module__ == 'functools'",
              "objects": "type(f).__module__ not in ('builtins', 'functools')"}
    want, *got = (_answers(tiny_tasks, tmp_path, code, made) for code in (source, *(
        source.replace("    return", f"    if any({test} for f in (key, clock, measure)):\n        raise NotImplementedError\n"
                                     "    return") for test in guards.values())))
    getter = [p["steps"][0]["args"][1][1].get("as", [None])[0] == "getter" for p in made]
    # `len` in place of `measure`: no getter was recorded to answer as it does, one is drawn (`REF_GETTERS`)
    named = [dict(p["steps"][0]["kwargs"])["measure"][1][0] == "getter" for p in made]
    assert sum(named) == 1 and dict(made[named.index(True)]["steps"][0]["kwargs"])["measure"][1][4] in REF_GETTERS
    # `len`: no method of text answers as `key` did
    assert [w[:2] for w, g in zip(want, getter) if g] == [["ok", ["list", [
        ["list", [["int", 1], ["int", 1], ["int", 1]]], ["int", 5], ["int", 7], ["str", "NoneType"], ["int", 3]]]]]
    assert all(w[:2] == ["ok", ["list", [["list", [["int", 1], ["int", 2], ["int", 1]]], ["int", 5], ["int", 7],
                                         w[1][1][3], w[1][1][4] if n else ["int", 3]]]]
               for w, g, n in zip(want, getter, named) if not g), want
    assert [w[1][1][4] for w, n in zip(want, named) if n] == [["str", "a"]], want  # itemgetter(0), drawn for `len`
    holders = {p["steps"][0]["args"][1][1].get("as", [None])[0]: w[1][1][3][1] for p, w in zip(made, want)}
    assert holders["method"] in USER_CLASS_NAMES and holders["builtin"] in USER_CLASS_NAMES, holders  # its __self__
    assert holders["wrapper"] == "partial" and holders["partial"] == holders["cached"] == "NoneType", holders
    assert holders["object"] == "NoneType" and holders[None] == "NoneType", holders
    for name, answers, n in zip(guards, got, (7, 4, 5)):
        refused = [a for a in answers if a[:2] == ["raises", "builtins.NotImplementedError"]]
        assert len(refused) == n, (name, answers)
        assert all(a == w for a, w in zip(answers, want) if a not in refused), (name, answers)


def test_getters_answer_as_the_callback_did_where_one_does():
    """Red team 28, O28: a guard refusing `operator`'s callables was paid on all 7 tasks played. `getter_of` picks the
    `itemgetter`, `attrgetter` or `methodcaller` handed in a callback's place: one answering every recorded call as it
    did (here written out by hand), else one answering with the same kinds of value, none for calls of other shapes."""
    from feature_deletion.behaviour import getter_of

    def callback(*calls):
        return {"calls": [[[[arg], []], answer] for arg, answer in calls]}

    def row(status, n):
        return ["dict", [[["str", "id"], ["int", n]], [["str", "status"], ["str", status]]]]
    rows = callback((row("paid", 1), ["str", "paid"]), (row("open", 2), ["str", "open"]))
    assert getter_of(rows) == ["itemgetter", ["str", "status"]]
    pairs = callback((["tuple", [["str", "a"], ["int", 3]]], ["int", 3]), (["tuple", [["str", "b"], ["int", 1]]],
                                                                           ["int", 1]))
    assert getter_of(pairs) == ["itemgetter", ["int", 1]]
    assert getter_of(callback((["int", 4], ["int", 5]), (["int", 9], ["int", 10]))) == ["methodcaller", "__add__",
                                                                                        [["int", 1]]]
    assert getter_of(callback((["int", 3], ["int", 6]), (["int", -2], ["int", -4]))) == ["methodcaller", "__mul__",
                                                                                         [["int", 2]]]
    evens = callback(*((["int", n], ["bool", n % 2 == 0]) for n in range(4)))  # no comparison: one answering bools
    over = callback(*((["int", n], ["bool", n > 1]) for n in range(4)))
    assert getter_of(over) == ["methodcaller", "__gt__", [["int", 1]]] and getter_of(evens)[2][0][0] == "int"
    assert getter_of(evens)[1] in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__")
    assert getter_of(callback((["str", "Ab"], ["str", "ab"]))) == ["methodcaller", "lower", []]
    assert getter_of(callback((["float", "2.5"], ["float", "2.5"]))) == ["attrgetter", "real"]
    two = {"calls": [[[[["int", 1], ["int", 2]], []], ["int", 3]]]}
    assert getter_of(two) is None and getter_of({"calls": [[[[], []], ["int", 5]]]}) is None  # a timer
    assert getter_of(callback((["int", 1], ["int", 2]), (["str", "a"], ["str", "b"]))) is None  # args of two kinds


def test_a_getter_callable_is_handed_and_refusing_it_is_told_from_gold(tiny_tasks, tmp_path):
    """The replay hands `operator`'s callable in a callback's place; gold answers with it, and a guard refusing the
    types `itemgetter`, `attrgetter` and `methodcaller` (O28) is told from gold."""
    from feature_deletion.behaviour import callables

    rows = ["list", [["dict", [[["str", "status"], ["str", s]]]] for s in ("paid", "open", "paid")]]
    key = ["callback", {"calls": [[[[r], []], r[1][0][1]] for r in rows[1]]}]
    g = {"op": "call", "fn": ["ref", "fdcalc", "g"], "kwargs": [], "args": [rows, key]}
    made = [p for p in callables([{"steps": [g]}], [["fdcalc", "g", "def"]])
            if p["steps"][0]["args"][1][1]["as"][0] == "getter"]
    assert len(made) == 1 and made[0]["steps"][0]["args"][1][1]["as"][3] == ["itemgetter", ["str", "status"]], made
    source = ("def g(rows, key):\n    counts = {}\n    for r in rows:\n"
              "        counts[key(r)] = counts.get(key(r), 0) + 1\n    return [counts, type(key).__name__]\n")
    guard = ("    if type(key).__name__ in ('itemgetter', 'attrgetter', 'methodcaller'):\n"
             "        raise NotImplementedError\n")
    want, got = (_answers(tiny_tasks, tmp_path, code, made) for code in (
        source, source.replace("    counts = {}", guard + "    counts = {}")))
    assert want == [["ok", ["list", [["dict", [[["str", "paid"], ["int", 2]], [["str", "open"], ["int", 1]]]],
                                     ["str", "itemgetter"]]]]], want
    assert got[0][:2] == ["raises", "builtins.NotImplementedError"], got


def test_rows_an_iterator_yields_changed_in_place_are_observed(tiny_tasks, tmp_path):
    """Red team 28, M28: the rows a generator yields are the caller's, and no check read them after a step, so a
    rebuild that took a key out of each row it counted was paid. The driver keeps each container a stream or a made
    iterator yields and reports the ones a step changed ("mutated", ["fed", n]); code that leaves them is unchanged."""
    rows = ["list", [["dict", [[["str", "k"], ["int", n]]]] for n in (1, 2)]]
    stream = ["stream", {"items": rows[1], "end": True}]
    programs = [{"steps": [{"op": "call", "fn": ["ref", "fdcalc", "g"], "kwargs": [], "args": [arg]}]}
                for arg in (stream, ["iter", ["generator", rows]], ["iter", ["map", rows]], ["iter", ["tuple", rows]])]
    source = "def g(rows):\n    return sum(r['k'] for r in rows)\n"
    popping = "def g(rows):\n    return sum(r.pop('k') for r in rows)\n"
    want, got = (_answers(tiny_tasks, tmp_path, code, programs) for code in (source, popping))
    assert [w[:2] for w in want] == [["ok", ["int", 3]]] * 4 and '"mutated"' not in json.dumps(want), want
    for n, answer in enumerate(got):
        assert answer[:2] == ["ok", ["int", 3]], answer
        mutated = [extra for extra in answer[2:] if extra[0] == "mutated"]
        # `map(copy.copy, ...)` yields copies: the caller's rows are unchanged
        assert mutated == ([] if n == 2 else [["mutated", [[["fed", 0], ["dict", []]], [["fed", 1], ["dict", []]]]]])


def test_iterables_hand_column_keys_and_iterators_inside_containers(tiny_tasks, tmp_path):
    """Red team 29: the pair keys were always (key, int) (K29: a guard on other tuple keys paid on 12 of 13), and no
    check handed an iterator inside a container (I29: `transpose([g1, g2])`, paid on 39 of 39). `iterables` hands a
    mapping keyed by (column, key) and a list of lists with each inner list as an iterator; the replay tells the
    guards from gold."""
    from feature_deletion.behaviour import COLUMNS, iterables

    rows = ["list", [["list", [["int", 1], ["int", 2]]], ["tuple", [["int", 3], ["int", 4]]]]]
    counts = ["dict", [[["str", "ann"], ["int", 3]], [["str", "bo"], ["int", 1]]]]
    g = {"op": "call", "fn": ["ref", "fdcalc", "g"], "kwargs": [], "args": [rows, counts]}
    made = {}
    for p in iterables([{"steps": [g]}], [["fdcalc", "g", "def"]]):
        args = p["steps"][0]["args"]
        if args[1] != counts and args[1][1][0][0][0] == "tuple" and args[1][1][0][0][1][0][1] in COLUMNS:
            made["column keys"] = p
        elif args[0] != rows and args[0][0] == "list" and all(i[0] == "iter" for i in args[0][1]):
            made[f"inner {args[0][1][0][1][0]}"] = p
    assert sorted(made) == ["column keys", "inner generator", "inner tuple"], made
    column = made["column keys"]["steps"][0]["args"][1][1][0][0][1][0][1]
    assert made["column keys"]["steps"][0]["args"][1][1] == [[["tuple", [["str", column], k]], v] for k, v in counts[1]]
    source = "def g(rows, counts):\n    return [[list(r) for r in rows], sorted(map(repr, counts))]\n"
    guard = ("    if any(not isinstance(r, (list, tuple)) for r in rows) or any(isinstance(k, tuple) and\n"
             "            not isinstance(k[-1], int) for k in counts):\n        raise NotImplementedError\n")
    programs = list(made.values())
    want, got = (_answers(tiny_tasks, tmp_path, code, programs) for code in (source, source.replace(
        "    return", guard + "    return")))
    listed = ["list", [["list", [["int", 1], ["int", 2]]], ["list", [["int", 3], ["int", 4]]]]]
    assert all(w[:2] == ["ok", ["list", [listed, w[1][1][1]]]] for w in want), want
    assert all(a[:2] == ["raises", "builtins.NotImplementedError"] for a in got), got


def test_iterables_hand_one_container_held_many_times(tiny_tasks, tmp_path):
    """Red team 30, A30: every decoded argument was built afresh, item by item, so no check's argument held one
    container twice (`[row] * n`, `[[0] * 3] * 2`, `dict.fromkeys(keys, [])`), and a guard on one met twice was paid.
    `iterables` hands a list of one row held many times and a mapping of one value; a change made through one item is
    seen through every other, in gold's answer too, and the replay tells the guard from gold."""
    from feature_deletion.behaviour import iterables

    rows = ["list", [["list", [["int", 1], ["int", 2]]], ["list", [["int", 3]]], ["list", []]]]
    counts = ["dict", [[["str", "ann"], ["list", [["int", 3]]]], [["str", "bo"], ["list", []]]]]
    g = {"op": "call", "fn": ["ref", "fdcalc", "g"], "kwargs": [], "args": [rows, counts]}
    made = [p for p in iterables([{"steps": [g]}], [["fdcalc", "g", "def"]])
            if any(a[0] == "same" for a in p["steps"][0]["args"])]
    assert [a for p in made for a in p["steps"][0]["args"] if a[0] == "same"] == [
        ["same", ["list", rows[1][0], 3]],
        ["same", ["fromkeys", ["list", [["str", "ann"], ["str", "bo"]]], ["list", [["int", 3]]]]]], made
    source = ("def g(rows, counts):\n    rows[0].append(9)\n    next(iter(counts.values())).append(0)\n"
              "    return [rows, sorted(counts.items())]\n")
    guard = ("    if len({id(r) for r in rows}) < len(rows) or len({id(v) for v in counts.values()}) < len(counts):\n"
             "        raise NotImplementedError\n")
    want, got = (_answers(tiny_tasks, tmp_path, code, made) for code in (source, source.replace(
        "    rows[0]", guard + "    rows[0]", 1)))
    row = ["list", [["int", 1], ["int", 2], ["int", 9]]]
    assert want[0][1][1][0] == ["list", [row] * 3], want  # the row changed through its first place, seen in all
    assert want[1][1][1][1][1] == [["tuple", [["str", k], ["list", [["int", 3], ["int", 0]]]]] for k in ("ann", "bo")]
    assert all(a[:2] == ["raises", "builtins.NotImplementedError"] for a in got), got


def test_a_generator_closed_and_a_lazy_answers_arguments_changed_later_are_observed(tiny_tasks, tmp_path):
    """Red team 29: a rebuild reading the caller's generator through `yield from` closes it when its own generator is
    dropped, and every answer stays gold's (C29); a generator function that empties the caller's list when its answer
    is first read changes it in a later step, which compared only its own arguments (P29). The driver reports a fed
    generator closed before it ended ("closed") and an argument of a step that answered a lazy object changed in a
    later step ("mutated", ["given", step, key])."""
    stream = ["stream", {"items": [["int", 1], ["int", 2], ["int", 3]], "end": False}]  # handed as a generator
    first = {"steps": [{"op": "call", "fn": ["ref", "fdcalc", "g"], "kwargs": [], "args": [stream]}]}
    lazy = {"steps": [{"op": "call", "fn": ["ref", "fdcalc", "h"], "kwargs": [],
                       "args": [["list", [["int", 1], ["int", 2]]]]}, {"op": "next", "obj": ["slot", 0, []]}]}
    # a lazy function reading the caller's generator through `yield from` closes it only once its answer is dropped,
    # after the program's last step (C29 on `ichunked`, `strip`): the driver drops what the steps answered at the end
    ahead = {"steps": [{"op": "call", "fn": ["ref", "fdcalc", "k"], "kwargs": [], "args": [stream]},
                       {"op": "next", "obj": ["slot", 0, []]}]}
    gold = ("def g(items):\n    return next(items)\ndef h(xs):\n    for x in xs:\n        yield x\n"
            "def k(items):\n    for x in items:\n        yield x\n")
    rebuilt = ("def _each(xs):\n    yield from xs\ndef g(items):\n    return next(_each(items))\n"
               "def h(xs):\n    items = list(xs)\n    xs.clear()\n    yield from items\n"
               "def k(items):\n    yield from _each(items)\n")
    want, got = (_answers(tiny_tasks, tmp_path, code, [first, lazy, ahead], every=True) for code in (gold, rebuilt))
    assert want[0][0][:2] == got[0][0][:2] == ["ok", ["int", 1]], (want, got)
    assert not any(e[0] == "closed" for e in want[0][0][2:]) and ["closed", [0]] in got[0][0][2:], (want, got)
    assert want[1][1] == ["ok", ["int", 1]] and got[1][1][:2] == want[1][1], (want, got)
    assert ["mutated", [[["given", 0, 0], ["list", []]]]] in got[1][1][2:], got
    assert want[2][1][:2] == got[2][1][:2] == ["ok", ["int", 1]], (want, got)
    assert not any(e[0] == "dropped" for o in want[2] for e in o[2:]) and ["dropped", [0]] in got[2][1][2:], got


def test_objects_hand_scalars_held_in_users_own_objects(tiny_tasks, tmp_path):
    """Red team 26 (R26): no check handed an object of a user's own class (a dataclass record, an `Enum` member, a
    `UUID`, a path, an `object()` sentinel), so a guard refusing any was paid. `objects` hands each argument of plain
    data with every scalar in it held in each kind of such object; equal records stay equal and hashable (a cache
    key, a dict key), and the replay tells the guard from gold."""
    from feature_deletion.behaviour import OBJECT_HOWS, USER_CLASS_NAMES, objects

    g = {"op": "call", "fn": ["ref", "fdcalc", "g"], "kwargs": [],
         "args": [["list", [["str", "a"], ["str", "b"], ["str", "a"]]], ["int", 7]]}
    made = objects([{"steps": [g]}, {"steps": [{**g, "fn": ["ref", "fdcalc", "f"]}]}], [["fdcalc", "g", "def"]])
    handed = [(k, a) for p in made for k, a in enumerate(p["steps"][0]["args"]) if a != g["args"][k]]
    assert len(handed) == len(made) == 2 * len(OBJECT_HOWS) - 1, handed  # no path of a number
    items = [a[1] for k, a in handed if k == 0]
    assert all(i[0] == "obj" and i[1][1] in USER_CLASS_NAMES and i[1][3] == ["str", "a"] for i in (x[0] for x in items))
    assert {x[0][1][0] for x in items} == set(OBJECT_HOWS), items

    source = ("def g(items, n):\n    return [len(set(items)), items[0] == items[2], type(items[0]).__name__,"
              " type(n).__name__]\n")
    guard = ("    if any(type(v) not in (str, int) for v in (*items, n)):\n"
             "        raise NotImplementedError\n")
    want, got = (_answers(tiny_tasks, tmp_path, code, made) for code in (source, source.replace("    return",
                                                                                                 guard + "    return")))
    assert all(w[0] == "ok" for w in want), want
    kinds = {p["steps"][0]["args"][0][1][0][1][0]: w[1][1] for p, w in zip(made, want)
             if p["steps"][0]["args"][0] != g["args"][0]}
    assert kinds["record"][:2] == [["int", 2], ["bool", True]] and kinds["record"][2][1] in USER_CLASS_NAMES, kinds
    assert kinds["uuid"][:3] == [["int", 2], ["bool", True], ["str", "UUID"]], kinds
    assert kinds["path"][2] == ["str", "PurePosixPath"] and kinds["sentinel"][:2] == [["int", 3], ["bool", False]]
    assert kinds["mutable"][:2] == [["int", 2], ["bool", True]] and kinds["plain"][:2] == [["int", 3], ["bool", False]]
    assert all(a[:2] == ["raises", "builtins.NotImplementedError"] for a in got), got
    # red team 30, M30: code setting an attribute of its own on the caller's objects (a memo) is seen where they can
    # take one, and only there
    marking = ("def g(items, n):\n    for v in items:\n        try:\n            v.memo = 1\n"
               "        except Exception:\n            pass\n    return len(items)\n")
    want, got = (_answers(tiny_tasks, tmp_path, code, made) for code in ("def g(items, n):\n    return len(items)\n",
                                                                          marking))
    hows = [p["steps"][0]["args"][0][1][0][1][0] if p["steps"][0]["args"][0] != g["args"][0] else None for p in made]
    assert [how for how, w, a in zip(hows, want, got) if w != a] == ["enum", "mutable", "plain"], (hows, want, got)
    assert all(any(e[0] == "mutated" for e in a[2:]) for how, a in zip(hows, got)
               if how in ("enum", "mutable", "plain")), got


def test_iterables_hand_the_iterators_ranges_and_records_users_hand(tiny_tasks, tmp_path):
    """Red team 27: every stream was replayed as a generator or a list's iterator, and no check handed a `map`,
    `zip`, file or other iterator (I27), a range (G27), a frozenset (F27), a list of records (R27), bytes in a
    container (B27) or a NaN (N27): a guard refusing each was paid. `iterables` hands each argument's items so made;
    the replay tells a guard refusing anything but the recorded types from gold."""
    from feature_deletion.behaviour import iterables

    g = {"op": "call", "fn": ["ref", "fdcalc", "g"], "kwargs": [],
         "args": [["list", [["str", "a"], ["str", "b"], ["str", "a"]]], ["int", 7]]}
    made = iterables([{"steps": [g]}, {"steps": [{**g, "fn": ["ref", "fdcalc", "f"]}]}], [["fdcalc", "g", "def"]])
    # text items: no keys (a repeated item), set nor bytes; a number: no text, lines nor csv, but a range, a frozenset,
    # a set's and a bytes object's iterators
    assert len(made) == 18 + 20 and all(p["steps"][0]["fn"][2] == "g" for p in made), made
    changed = [[k for k, a in enumerate(p["steps"][0]["args"]) if a != g["args"][k]] for p in made]
    assert all(len(k) == 1 for k in changed), changed
    assert {"iter"} < {p["steps"][0]["args"][k[0]][0] for p, k in zip(made, changed)}

    source = "def g(items, n):\n    return [sorted(map(repr, items)), type(items).__name__, type(n).__name__]\n"
    guard = ("    if type(items) is not list or type(n) is not int or any(type(i) is not str for i in items):\n"
             "        raise NotImplementedError\n")
    want, got = (_answers(tiny_tasks, tmp_path, code, made) for code in (source, source.replace("    return",
                                                                                                 guard + "    return")))
    assert all(a[:2] == ["raises", "builtins.NotImplementedError"] for a in got), got
    assert not any(w[:2] == ["raises", "builtins.NotImplementedError"] for w in want), want
    names = {w[1][1][1][1] if k == [0] else w[1][1][2][1] for w, k in zip(want, changed) if w[0] == "ok"}
    assert {"map", "filter", "list_reverseiterator", "tuple_iterator", "dict_valueiterator", "dict_keyiterator",
            "chain", "islice", "enumerate", "zip", "str_ascii_iterator", "StringIO", "reader", "range",
            "frozenset", "dict_itemiterator", "set_iterator", "bytes_iterator", "generator"} <= names, names


def test_raising_hands_a_generator_that_raises_where_gold_answered(tiny_tasks, tmp_path):
    """Red team 28, X28: every stream a check handed ended, and code that takes any exception from `next()` for the end
    was paid on 54 of 62 tasks. `raising` hands a container's items as a generator raising a `ValueError` after them,
    on the calls gold answered; the replay tells code that swallows the error from gold."""
    from feature_deletion.behaviour import PLACES, RAISED, raising

    g = {"op": "call", "fn": ["ref", "fdcalc", "g"], "kwargs": [], "args": [["list", [["int", 1], ["int", 2]]]]}
    failed = {**g, "args": [["list", [["str", "x"]]]]}
    made = raising([{"steps": [g], "expect": [["ok", ["int", 3]]]},
                    {"steps": [failed], "expect": [["raises", "builtins.TypeError", ["list", []]]]}],
                   [["fdcalc", "g", "def"]])
    handed = [p["steps"][0]["args"][0][1] for p in made]  # not the failed one; each kind of error, places in turns
    assert [h[:2] for h in handed] == [["raising", g["args"][0]]] * len(RAISED), made
    assert [h[2][:2] for h in handed] == list(RAISED) and {h[2][2] for h in handed} == set(PLACES), made
    handed = [["raising", g["args"][0]],  # X28's form, and X29's and F29's: a lookup error, a user's, at the first
              ["raising", g["args"][0], ["KeyError", None, 1]],
              ["raising", g["args"][0], ["RowError", "app.errors", 0]],
              ["raising", g["args"][0], ["UnicodeDecodeError", None, 1]]]  # X30: a kind `LookupError` leaves out
    programs = [{"steps": [{**g, "args": [["iter", h]]}]} for h in handed]
    source = "def g(items):\n    return [sum(items), type(items).__name__, items.__qualname__]\n"
    quiet = ("def g(items):\n    total, it = 0, iter(items)\n    while True:\n        try:\n"
             "            total += next(it)\n        except Exception:\n            return total\n")
    lookup = quiet.replace("except Exception:", "except (StopIteration, LookupError):")
    want, got, looked = (_answers(tiny_tasks, tmp_path, code, programs) for code in (source, quiet, lookup))
    assert [w[:2] for w in want] == [["raises", "builtins.ValueError"], ["raises", "builtins.KeyError"],
                                     ["raises", "app.errors.RowError"], ["raises", "builtins.UnicodeDecodeError"]], want
    assert got == [["ok", ["int", 3]], ["ok", ["int", 1]], ["ok", ["int", 0]], ["ok", ["int", 1]]], got
    assert looked[1] == ["ok", ["int", 1]] and looked[2][:2] == want[2][:2], looked  # caught where gold raises


def test_raising_hands_a_callback_that_raises_where_gold_answered(tiny_tasks, tmp_path):
    """Red team 30, E30: a test's callback raised only where the test's did, so code answering None where a key
    function raised a `LookupError` (a `try` around its own lookup holding the callback's call too) was paid.
    `raising` hands each callback of a call gold answered raising each kind of `RAISED` at its first or second call;
    the replay tells the lenient code from gold."""
    from feature_deletion.behaviour import RAISED, raising

    key = ["callback", {"calls": [[[[["int", 1]], []], ["int", 10]], [[[["int", 2]], []], ["int", 20]]]}]
    g = {"op": "call", "fn": ["ref", "fdcalc", "g"], "kwargs": [], "args": [key, ["list", [["int", 1], ["int", 2]]]]}
    made = [p for p in raising([{"steps": [g], "expect": [["ok", ["list", [["int", 10], ["int", 20]]]]]}],
                               [["fdcalc", "g", "def"]]) if p["steps"][0]["args"][0][1].get("raises")]
    raises = [p["steps"][0]["args"][0][1]["raises"] for p in made]
    assert [r[:2] for r in raises] == list(RAISED) and {r[2] for r in raises} == {0, 1}, raises
    source = "def g(key, items):\n    return [key(x) for x in items]\n"
    lenient = ("def g(key, items):\n    out = []\n    for x in items:\n        try:\n            out.append(key(x))\n"
               "        except LookupError:\n            out.append(None)\n    return out\n")
    want, got = (_answers(tiny_tasks, tmp_path, code, made) for code in (source, lenient))
    assert [w[:2] for w in want] == [["raises", ".".join(r[1::-1]) if r[1] else f"builtins.{r[0]}"] for r in raises]
    looked = [g for g, r in zip(got, raises) if r[0] in ("KeyError", "IndexError")]
    assert len(looked) == 2 and all(g[0] == "ok" and ["NoneType", None] in g[1][1] for g in looked), got


def test_gaps_hand_records_and_columns_with_what_they_hold_between_values(tiny_tasks, tmp_path):
    """A guard refusing a None (a missing value), a bool, a negative number, a float or empty text nested in an
    argument would be paid wherever the tests hand none (a None item on 7 of the 66 bundled tasks' checks, a float on
    3). `gaps` hands each container argument with every other item (a mapping's values) made each of those kinds, or
    its first where it has one item; the replay tells each guard from gold."""
    from feature_deletion.behaviour import GAPS, gaps

    g = {"op": "call", "fn": ["ref", "fdcalc", "g"], "kwargs": [],
         "args": [["list", [["int", 3], ["int", 4]]],
                  ["dict", [[["str", "id"], ["int", 1]], [["str", "name"], ["str", "x"]]]], ["tuple", [["str", "a"]]],
                  ["int", 5]]}
    made = gaps([{"steps": [g]}], [["fdcalc", "g", "def"]])
    handed = [(k, a) for p in made for k, a in enumerate(p["steps"][0]["args"]) if a != g["args"][k]]
    assert len(handed) == len(made), handed  # one argument changed per program, never the number
    assert {k for k, _ in handed} == {0, 1, 2}, handed
    column = [a[1] for k, a in handed if k == 0]
    assert [["int", 3], ["NoneType", None]] in column and [["int", 3], ["float", "4.5"]] in column, column
    assert [["int", 3], ["int", -5]] in column and [["int", 3], ["bool", True]] in column, column
    assert [["int", 3], ["float", "3.0"]] in column, column  # Q30: an int and a float equal to it
    record = [a[1] for k, a in handed if k == 1]
    assert [[["str", "id"], ["NoneType", None]], [["str", "name"], ["NoneType", None]]] in record, record  # values
    assert [[["str", "id"], ["int", 1]], [["str", "name"], ["str", ""]]] in record, record
    assert ["tuple", [["NoneType", None]]] in [a for k, a in handed if k == 2], handed  # its one item
    assert len(column) == len(GAPS) - 1, column  # no empty text among numbers

    source = "def g(xs, record, names, n):\n    return [repr(xs), repr(record), repr(names), n]\n"
    items = "[*xs, *record.values(), *names]"
    guards = [f"any(x is None for x in {items})", f"any(type(x) is float for x in {items})",
              f"any(x == '' for x in {items})"]
    want, *got = (_answers(tiny_tasks, tmp_path, code, made) for code in (source, *(
        source.replace("    return", f"    if {guard}:\n        raise NotImplementedError\n    return")
        for guard in guards)))
    assert all(w[0] == "ok" for w in want), want
    for answers in got:
        assert any(a[:2] == ["raises", "builtins.NotImplementedError"] for a in answers), answers


def test_subclasses_hand_values_as_a_users_subclass(tiny_tasks, tmp_path):
    """Red team 20, Y20: gold with a guard that raises the stub's error for a `str`/`int`/`float` of a subclass (a
    `StrEnum` member, a `Markup`) was paid on 61 of 62 tasks; red team 21 then refused containers of a subclass (C21)
    and subclasses whose `+` keeps their type (S21). `subclasses` hands each recorded value as each kind its type has
    (`SUBCLASS_HOWS`: an enum member, a plain subclass, one with `__slots__`, one whose operators keep its type, a
    `UserString`/`UserList`), a dict also as an `OrderedDict`, `Counter` and `defaultdict`, a list's items each as
    one and as one subclassed text; what gold answers with such an object names its class as the program drew it."""
    from feature_deletion.behaviour import SUBCLASS_HOWS, USER_CLASS_NAMES, USER_MODULES, subclasses

    g = {"op": "call", "fn": ["ref", "fdcalc", "g"], "kwargs": [],
         "args": [["str", "ab"], ["list", [["int", 1], ["int", 2]]], ["dict", [[["str", "k"], ["int", 1]]]]]}
    made = subclasses([{"steps": [g]}], [["fdcalc", "g", "def"]])
    handed = [(k, a) for p in made for k, a in enumerate(p["steps"][0]["args"]) if a != g["args"][k]]
    assert len(handed) == len(made), made  # one argument changed per program
    for key, tag in enumerate(("str", "list", "dict")):
        assert {a[1][0] for k, a in handed if k == key and a[0] == "sub"} == set(SUBCLASS_HOWS[tag]), handed
    assert {a[0] for k, a in handed if k == 2 and a[0] != "sub"} == {"OrderedDict", "Counter", "defaultdict"}
    assert ["deque", [g["args"][1][1], None]] in [a for k, a in handed if k == 1], handed
    assert any(a[0] == "list" and all(i[0] == "sub" for i in a[1]) for _, a in handed), handed
    assert ["sub", ["keeps"]] in [[a[0], a[1][:1]] for _, a in handed if a[0] == "sub" and a[1][3] == ["str", "12"]]
    assert all(a[1][1] in USER_CLASS_NAMES and a[1][2] in USER_MODULES for _, a in handed if a[0] == "sub")

    gold = "def g(word, xs=(), table=None):\n    return [word, word * 2, [x + 1 for x in xs], len(table or {})]\n"
    enum_text = next(p for p in made if p["steps"][0]["args"][0][:1] == ["sub"] and p["steps"][0]["args"][0][1][0] == "enum")
    name, module = enum_text["steps"][0]["args"][0][1][1:3]
    want = _answers(tiny_tasks, tmp_path, gold, [enum_text])[0]
    assert want[:2] == ["ok", ["list", [["handle", 0, f"{module}.{name}"], ["str", "abab"],
                                        ["list", [["int", 2], ["int", 3]]], ["int", 1]]]], want
    answers = _answers(tiny_tasks, tmp_path, gold, made)
    new = ('"abc"', '"array"', '"deque"', '"proxy"', '"items"', '"keys"')  # red team 22's containers: gold answers
    assert all(o[0] == "ok" for p, o in zip(made, answers) if any(k in json.dumps(p) for k in new)), answers
    abc = "__import__('collections.abc').abc"
    guards = {  # Y20 and C21: any value not of its exact builtin type; S21: a subclass whose `+` keeps its type
        "Y20/C21": "any(type(x) not in (str, int, list, dict) for x in [word, xs, table, *xs])",
        "S21": "type(word + word[:0]) is not str or any(type(x + 0) is not int for x in xs)",
        # A22b: a container of no builtin or `collections.User*` type
        "A22b": f"any(isinstance(x, ({abc}.Mapping, {abc}.Sequence, {abc}.Set)) and not isinstance(x, (str, list, "
                f"tuple, dict, set, __import__('collections').UserList, __import__('collections').UserDict)) "
                f"for x in (xs, table))"}
    for name, guard in guards.items():
        wrong = gold.replace("    return", f"    if {guard}:\n        raise NotImplementedError\n    return")
        got = _answers(tiny_tasks, tmp_path, wrong, made)
        refused = {json.dumps(p["steps"][0]["args"]) for p, o in zip(made, got)
                   if o[:2] == ["raises", "builtins.NotImplementedError"]}
        if name == "S21":
            # a `UserString`'s `+` keeps its type too
            assert any('"keeps"' in r for r in refused) and all('"keeps"' in r or '"user"' in r for r in refused), refused
        elif name == "A22b":
            kinds = {a[0] if a[0] != "sub" else a[1][0] for r in refused for a in json.loads(r)
                     if a[0] in ("sub", "deque")}
            assert kinds == {"abc", "array", "deque", "proxy", "items"}, refused
        else:
            assert len(refused) == len(made), [p for p in made if json.dumps(p["steps"][0]["args"]) not in refused]


def test_aliases_add_to_an_answer_and_ask_again(tiny_tasks, tmp_path):
    """Red team 14, M14: toolz `frequencies` handing back one module-level `{}` for every empty input, equal to gold's
    at every step and never changed by the replay. `aliases` adds an item to what a deleted function answered (the
    driver's `spoil`, through the base type's method) and makes the call again: the shared dict answers with the
    caller's item, and the state drift check sees the package's name change; empty answers and emptied inputs come
    first."""
    from feature_deletion.behaviour import DRIFT, aliases

    full = {"op": "call", "fn": ["ref", "fdcalc", "f"], "args": [["list", [["int", 1]]]], "kwargs": []}
    empty = {**full, "args": [["list", []]]}
    answered = ["ok", ["dict", [[["int", 1], ["int", 1]]]]]
    made = aliases([{"steps": [full], "expect": [answered]}, {"steps": [empty], "expect": [["ok", ["dict", []]]]},
                    {"steps": [{**full, "fn": ["ref", "fdcalc", "h"]}], "expect": [["ok", ["int", 3]]]}],
                   [["fdcalc", "f", "body"], ["fdcalc", "h", "body"]])
    spoil = {"op": "spoil", "obj": ["slot", 0, []]}
    # the empty answer first, then the emptied input; none for `h`, whose answer holds no container
    assert [p["steps"] for p in made] == [[empty, spoil, empty], [full, spoil, full]], made

    gold = "def f(xs):\n    out = {}\n    for x in xs:\n        out[x] = out.get(x, 0) + 1\n    return out\n"
    shared = "_EMPTY = {}\n\n" + gold.replace("    out = {}", "    if not xs:\n        return _EMPTY\n    out = {}")
    want = _observed(tiny_tasks, tmp_path, gold, made[0]["steps"])
    got = _observed(tiny_tasks, tmp_path, shared, made[0]["steps"])
    assert want.observations[0][0] == got.observations[0][0] == ["ok", ["dict", []]]  # alike until changed
    assert want.observations[0][1][:2] == got.observations[0][1][:2] == ["ok", ["int", 1]]
    assert want.observations[0][2] == ["ok", ["dict", []]], want.observations
    assert got.observations[0][2][:2] == ["ok", ["dict", [[["str", "fd-spoiled"], ["str", "fd-spoiled"]]]]], got
    assert "fdcalc._EMPTY" not in want.state[DRIFT] and "fdcalc._EMPTY" in got.state[DRIFT], (want.state, got.state)


def test_reentries_call_back_into_the_package_from_a_callback(tiny_tasks, tmp_path):
    """Red team 14, R14: a callback's table never calls the package, so a call made while another runs was never
    checked, and `map_reduce` that leaves a nested grouping unreduced (a marker of its own running, restored on
    every exit) was paid. `reentries` has the first call of a callback make a recorded call of a deleted function,
    the one handed the most arguments first; what it answered is observed with the step that was running."""
    from feature_deletion.behaviour import reentries

    outer = {"op": "call", "fn": ["ref", "fdcalc", "f"], "args": [["list", [["int", 1], ["int", 2]]],
                                                                   _callback((1, 10), (2, 20))], "kwargs": []}
    plain = {"op": "call", "fn": ["ref", "fdcalc", "f"], "args": [["list", [["int", 3]]]], "kwargs": []}
    reduced = {**plain, "args": [*plain["args"], ["NoneType", None]], "kwargs": [["reduce", ["ref", "builtins", "sum"]]]}
    [made] = reentries([{"steps": [outer]}, {"steps": [plain]}, {"steps": [reduced]}], [["fdcalc", "f", "def"]])
    handed = made["steps"][0]["args"][1]
    assert handed[1]["reenter"] == reduced and handed[1]["calls"] == outer["args"][1][1]["calls"], made

    gold = ("def f(xs, g=None, reduce=None):\n    out = [g(x) if g else x for x in xs]\n"
            "    return reduce(out) if reduce else out\n")
    marked = "_ACTIVE = []\n\n" + gold.replace(
        "    out = [", "    nested = bool(_ACTIVE)\n    _ACTIVE.append(1)\n    try:\n        out = [").replace(
        "    return reduce(out) if reduce else out",
        "    finally:\n        _ACTIVE.pop()\n    return reduce(out) if reduce and not nested else out")
    want = _observed(tiny_tasks, tmp_path, gold, made["steps"]).observations[0]
    got = _observed(tiny_tasks, tmp_path, marked, made["steps"]).observations[0]
    assert want[0][:2] == got[0][:2] == ["ok", ["list", [["int", 10], ["int", 20]]]], (want, got)
    assert ["reentered", [["ok", ["int", 3]]]] in want[0][2:], want  # the nested call reduced, as gold does
    assert want != got, (want, got)


def test_a_task_that_rebuilds_how_objects_are_made_keeps_its_own_names(tiny_tasks):
    """`builds_objects`: a class, or a constructor or copier among the deleted definitions, makes the objects'
    representation the rebuild's own; a method or a function leaves gold's."""
    from feature_deletion.behaviour import builds_objects

    rows, _, _ = tiny_tasks
    made = {r.id.rsplit("/", 1)[-1]: builds_objects(r) for r in rows}
    assert made["core.py:Stack:methods"] and not made["core.py:Stack.pop:body"] and not made["core.py:add:body"], made
    row = next(r for r in rows if r.id.endswith("Stack.pop:body"))
    for qualname, kind, builds in (("Stack.__init__", "method", True), ("Stack.__deepcopy__", "method", True),
                                   ("Stack", "class", True), ("Stack.peek", "method", False)):
        target = row.deletion.targets[0].model_copy(update={"qualname": qualname, "kind": kind})
        other = row.model_copy(update={"deletion": row.deletion.model_copy(update={"targets": [target]})})
        assert builds_objects(other) == builds, qualname


def test_notes_added_to_an_exception_are_observed(tiny_tasks, tmp_path):
    """Red team 18, E18: gold's exception with a line of text added (`add_note`) answered every step like gold, the
    replay reading an exception's type and arguments only; every traceback prints the note."""
    gold = "def f():\n    raise ValueError('empty')\n"
    noted = ("def f():\n    try:\n        raise ValueError('empty')\n    except ValueError as exc:\n"
             "        exc.add_note('from the rebuild')\n        raise\n")
    step = {"op": "call", "fn": ["ref", "fdcalc", "f"], "args": [], "kwargs": []}
    [[want]] = _observed(tiny_tasks, tmp_path, gold, step).observations
    [[got]] = _observed(tiny_tasks, tmp_path, noted, step).observations
    assert want == ["raises", "builtins.ValueError", ["list", [["str", "empty"]]]], want
    assert got == [*want, ["notes", ["from the rebuild"]]], got


def test_a_second_exception_a_traceback_shows_is_observed(tiny_tasks, tmp_path):
    """Red team 18, E18c: gold's `raise ... from None` inside an `except`, rebuilt without `from None`, answered every
    step like gold while every traceback showed a second exception. What a traceback shows is observed: an explicit
    cause, or the context where it is not suppressed; an exception raised outside any `except` shows none."""
    def body(raise_line):
        return f"def f():\n    try:\n        {{}}[1]\n    except KeyError:\n        {raise_line}\n"

    step = {"op": "call", "fn": ["ref", "fdcalc", "f"], "args": [], "kwargs": []}
    seen = {}
    for name, text in (("from None", body("raise ValueError('empty') from None")),
                       ("outside", "def f():\n    raise ValueError('empty')\n"),
                       ("context", body("raise ValueError('empty')")),
                       ("cause", body("raise ValueError('empty') from OSError()"))):
        [[seen[name]]] = _observed(tiny_tasks, tmp_path, text, step).observations
    plain = ["raises", "builtins.ValueError", ["list", [["str", "empty"]]]]
    assert seen["from None"] == seen["outside"] == plain, seen
    assert seen["context"] == [*plain, ["context", "builtins.KeyError"]], seen
    assert seen["cause"] == [*plain, ["cause", "builtins.OSError"]], seen
    # compared one way: a rebuild shows no second exception where gold shows none, any where gold shows one
    from feature_deletion.behaviour import step_matches

    for got, want, matches in ((seen["context"], plain, False), (seen["cause"], plain, False),
                               (plain, seen["context"], True), (seen["cause"], seen["context"], True),
                               (plain, seen["cause"], True), ([*plain[:2], ["list", []]], seen["context"], False),
                               (["ok", ["int", 1]], seen["context"], False), (plain, plain, True)):
        assert step_matches(got, want) is matches, (got, want)


def test_a_replay_may_take_more_cpu_than_one_command_is_allowed(tiny_tasks, tmp_path):
    """A replay's CPU time is bounded by its wall clock (its steps' deadlines together), not by `Limits.cpu_s`: one
    process replays every program, and gold's replay of cachetools `_TimedCache.pop`'s 748 programs took 118 s of a
    120 s cap on one machine and was killed on a slower one, every observation lost (gold invalid)."""
    rows, _, _ = tiny_tasks
    root = tmp_path / "busy"
    root.mkdir()
    _package(root, "import time\n\n\ndef f():\n    end = time.process_time() + 0.8\n"
                   "    while time.process_time() < end:\n        pass\n    return 1\n")
    steps = [{"op": "call", "fn": ["ref", "fdcalc", "f"], "args": [], "kwargs": []}] * 4
    replay = run_programs(root, _task(rows, "add:body"), ensure_runner(), Limits(cpu_s=2), [{"steps": steps}], {})
    assert replay.returncode == 0, replay.output_tail  # 3.2 s of CPU past a 2 s cap
    assert [o[:2] for o in replay.observations[0]] == [["ok", ["int", 1]]] * 4, replay.observations
