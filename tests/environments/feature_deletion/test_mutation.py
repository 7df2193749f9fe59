"""Mutation-adequate checks (feature_deletion.mutation): small wrong rebuilds of the gold code, which the checks of
old paid 1.0 (red team F5: inflection `underscore` without `word.replace("-", "_")`), are paid 0 by the checks the
builder now keeps."""

from __future__ import annotations

import ast
import textwrap

import pytest
from feature_deletion import mutation
from feature_deletion.behaviour import build_checks, check_behaviour
from feature_deletion.rollout import ToolSession
from feature_deletion.sandbox import Limits
from feature_deletion.scope import agent_lines
from feature_deletion.task import Deletion, Target, runner_for

GOLD = '''
    import re


    def snake(word):
        """CamelCase or dashed words as lower_snake_case."""
        word = re.sub(r"([a-z\\d])([A-Z])", r"\\1_\\2", word)
        word = word.replace("-", "_")
        return word.lower()


    def clip(xs, n):
        """The first n items, or all of them when n is not positive."""
        out = []
        for x in xs:
            if n > 0 and len(out) >= n:
                break
            out.append(-x if x < 0 else x)
        return out
'''
# The tests never write a dash: the checks of old never asked snake about one.
SNAKE = {
    "fdsnake/__init__.py": "from fdsnake.words import clip, snake\n",
    "fdsnake/words.py": GOLD,
    "tests/test_words.py": '''
        from fdsnake import snake


        def test_snake():
            assert snake("CamelCase") == "camel_case"
            assert snake("DeviceType") == "device_type"


        def test_snake_keeps_snake_and_digits():
            assert snake("already_snake") == "already_snake"
            assert snake("Address2Line") == "address2_line"


        def test_the_package_imports():
            import fdsnake

            assert fdsnake.snake is snake
    ''',
    "pyproject.toml": '''
        [project]
        name = "fdsnake"
        version = "0.1.0"
    ''',
}


def _row(definition: str):
    class Row:  # what mutants() reads of a task row
        gold_files = {"m.py": textwrap.dedent(GOLD).lstrip()}
        deletion = Deletion(mode="body", size="small", lines_removed=3,
                            targets=[Target(file="m.py", qualname=definition, kind="function", signature="")])
    return Row()


def test_every_operator_makes_mutants_that_change_only_the_definition():
    row = _row("clip")
    made = mutation.mutants(row, limit=1000)
    ops = {m.label.split(":")[1].split("#")[0] for m in made}
    assert ops == {"ROR", "AOR", "LCR", "UOI", "CRP", "SDL", "COND", "BRK"} - {"AOR"}  # clip has no binary operator
    gold = ast.parse(row.gold_files["m.py"])
    for m in made:
        tree = ast.parse(m.text)
        assert ast.dump(tree.body[1]) == ast.dump(gold.body[1]), m.label  # snake untouched
        assert ast.dump(tree.body[2]) != ast.dump(gold.body[2]), m.label
    assert len({m.text for m in made}) == len(made)
    # The docstring is no site: no mutant wraps it in XX.
    assert not any("XXThe first" in m.text for m in made)
    # An evenly spread subset keeps every operator.
    assert {m.label.split(":")[1].split("#")[0] for m in mutation.mutants(row, limit=7)} == ops


BOX = '''
class Box:
    """One item."""

    def __init__(self, item):
        self.item = item

    def __getstate__(self):
        """What a pickle keeps."""
        return self.item

    def __setstate__(self, state):
        self.item = state
'''


def _box_row(mode: str, qualnames: list[str]):
    class Row:
        gold_files = {"m.py": BOX.lstrip()}
        deletion = Deletion(mode=mode, size="small", lines_removed=4, targets=[
            Target(file="m.py", qualname=q, kind="class" if "." not in q else "method", signature="") for q in qualnames])
    return Row()


def test_incomplete_rebuilds_are_mutants_each_deleted_method_left_as_the_stub():
    """Red team 2, A4-A6: a class rebuilt but for its pickling methods was paid. Such an incomplete rebuild is a mutant
    (`STUB`) whatever the operator budget: one per deleted method, or per method of a deleted class."""
    from feature_deletion.builder.deletions import STUB

    methods = _box_row("body", ["Box.__init__", "Box.__getstate__", "Box.__setstate__"])
    stubs = [m for m in mutation.mutants(methods, limit=0)]
    assert [m.label for m in stubs] == ["Box.__init__:STUB#0", "Box.__getstate__:STUB#0", "Box.__setstate__:STUB#0"]
    for m in stubs:
        cls = ast.parse(m.text).body[0]
        stubbed = [f.name for f in cls.body if isinstance(f, ast.FunctionDef) and ast.unparse(ast.parse(STUB)) in ast.unparse(f)]
        assert stubbed == [m.label.split(":")[0].split(".")[1]]
    assert '"""What a pickle keeps."""' in stubs[1].text  # the docstring stays, as the builder deletes a body
    whole = _box_row("definition", ["Box"])
    assert [m.label for m in mutation.mutants(whole, limit=0)] == ["Box:STUB#0", "Box:STUB#1", "Box:STUB#2"]
    # One deleted function has no incomplete rebuild but the untouched task.
    assert not [m for m in mutation.mutants(_row("clip")) if "STUB" in m.label]


def test_the_dropped_replace_is_a_mutant_and_the_dash_is_a_constant_to_hunt_with():
    row = _row("snake")
    texts = {m.label: m.text for m in mutation.mutants(row)}
    dropped = [label for label, text in texts.items() if "replace" not in text]
    assert dropped and all(label.startswith("snake:SDL#") for label in dropped)
    values = dict((v[0], v) for _, v in mutation.literals(row, ["CamelCase"]))
    assert values["-"] == ["-", "Came-lCase"]


def test_greedy_cover_keeps_held_out_programs_first_and_stops_when_nothing_new_is_killed():
    # (size, {mutant: step}) per candidate: 0 and 1 are held-out, 2 visible.
    candidates = [(10, {0: 0, 1: 0}), (5, {1: 0, 2: 0, 3: 1}), (1, {0: 0, 4: 0}), (1, {})]
    order = mutation.cover(candidates, ["heldout", "heldout", "visible", "heldout"])
    assert order == [1, 0, 2]
    assert mutation.cover(candidates, ["visible"] * 4) == [1, 2]
    assert mutation.killed_at([["ok", 1], ["ok", 2]], [["ok", 1], ["ok", 3]]) == 1
    assert mutation.killed_at([["ok", 1]], [["ok", 1], ["ok", 9]]) is None
    assert mutation.killed_at([["ok", 1]], None) is None  # a replay cut short tells nothing
    assert mutation.killed_at([["ok", 1], ["ok", 2]], [["ok", 1]]) == 1


@pytest.fixture(scope="module")
def snake_task(tmp_path_factory, task_builder):
    write_tiny_repo, build_tasks = task_builder
    repo = write_tiny_repo(tmp_path_factory.mktemp("snake") / "fdsnake", SNAKE)
    out = tmp_path_factory.mktemp("snake-tasks")
    rows, _ = build_tasks(out, repo, "fdsnake")
    return next(r for r in rows if r.id.endswith(":snake:body")), out


def _mutant_without_replace(row) -> dict[str, str]:
    rel = row.deletion.targets[0].file
    text = row.gold_files[rel]
    assert '    word = word.replace("-", "_")\n' in text
    return {rel: text.replace('    word = word.replace("-", "_")\n', "", 1)}


def _play(row, tasks_dir, files: dict[str, str]) -> float:
    with ToolSession(row, tasks_dir) as s:
        for turn, (rel, text) in enumerate(files.items(), 1):
            assert s.call("write_file", {"path": rel, "content": text}, turn=turn).startswith("wrote")
        s.call("submit", {}, turn=len(files) + 1)
        return s.finish(last_turn=len(files) + 1, turns=len(files) + 1).reward


@pytest.mark.slow
def test_a_mutant_the_old_checks_paid_is_paid_nothing_gold_is_paid_and_untouched_is_not(snake_task, monkeypatch):
    row, tasks_dir = snake_task
    assert "mutants" in row.checks_status and "killed" in row.checks_status, row.checks_status
    mutant = _mutant_without_replace(row)
    changes = {k: v.encode() for k, v in mutant.items()}

    def verdict(checks):
        graded = row.model_copy(update={"checks": checks})
        return check_behaviour(graded, tasks_dir, runner_for(row), Limits(), "namespace", changes, agent_lines(row, changes))

    # The checks of old (the same recorded programs and variants, chosen without mutants) pay the mutant. The
    # other-form families (`behaviour._other_forms`, every one kept since a build keeps them whole) are left out of
    # them: text with symbols (red team 26) and large prose with hyphens (`sizes`, red team 23, T23) kill it too.
    from feature_deletion import behaviour

    monkeypatch.setattr(behaviour, "_other_forms", lambda programs, row: [])
    old, status = build_checks(row, tasks_dir, runner_for(row), Limits(), mutants=False)
    monkeypatch.undo()
    assert old is not None, status
    assert verdict(old).fraction == 1.0
    assert verdict(row.checks).fraction == 0.0
    assert _play(row, tasks_dir, mutant) == 0.0
    assert _play(row, tasks_dir, row.gold_files) == 1.0
    assert _play(row, tasks_dir, {}) == 0.0
