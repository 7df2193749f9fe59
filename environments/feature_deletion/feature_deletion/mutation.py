"""Mutants of the gold definitions: the wrong rebuilds the checks must not pay (build time, trusted).

A mutant is the gold file with one small semantic change inside a deleted definition, made on its AST with the
classic mutation-testing operators (Offutt et al.'s sufficient set, as mutmut and MuJava implement it, plus
statement deletion and condition forcing):

- ROR relational operator replacement: `<` <-> `<=`, `>` <-> `>=`, `==` <-> `!=`, `in` <-> `not in`, `is` <-> `is not`
- AOR arithmetic operator replacement (also in `x op= y`): `+` <-> `-`, `*` -> `+`, `/` and `//` -> `*`, `%` -> `//`,
  `**` -> `*`, `&` <-> `|`, `^` -> `|`, `<<` <-> `>>`
- LCR logical connector replacement: `and` <-> `or`
- UOI unary operator deletion: `not x`, `-x`, `~x` -> `x`
- CRP constant replacement: an int +1 and -1, a float +1, a bool negated, a string or bytes literal wrapped in "XX"
  (the empty one becomes "XX"); docstrings and f-string pieces are left alone
- SDL statement deletion: one statement (docstrings and `pass` aside) becomes `pass`
- COND a condition forced or negated: an `if` test -> True, False, `not (test)` (its branches swapped); an
  `x if c else y` test -> True, False; a `while` test -> False
- BRK `break` <-> `continue`
- STUB an incomplete rebuild: one of several deleted definitions (a class's methods), or one method of a deleted
  class, left as the task's stub (`raise NotImplementedError`); always made, beside the `MAX_MUTANTS` others

The grader replays the checks' programs on each mutant (`behaviour.build_checks`) and keeps the held-out programs
that tell the most mutants from gold (`cover`).
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import shutil
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from feature_deletion.sandbox import Limits
from feature_deletion.task import TaskRow

MAX_MUTANTS = 40  # mutants replayed per task, spread over the operators
MUTANT_WALL_S = 60.0  # one replay of every candidate on one mutant (a mutant may loop: each step stops at 3 s)
MIN_SCORE = 0.0  # killed / made below which a task leaves the set (`mutants_survive`)
MAX_LITERALS = 8  # constants of the gold code the hunt for a surviving mutant tries
HUNT_ROUNDS = 3  # hunts for surviving mutants, each with new held-out programs, while some mutant survives them all
SURVIVORS_LISTED = 6  # survivors named in the build report

ROR = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
       ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
AOR = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Add, ast.Div: ast.Mult, ast.FloorDiv: ast.Mult,
       ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult, ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd, ast.BitXor: ast.BitOr,
       ast.LShift: ast.RShift, ast.RShift: ast.LShift}


@dataclass(frozen=True)
class Mutant:
    label: str  # "qualname:OPERATOR#n", n counting that operator's sites in the definition
    file: str  # repository path of the gold file it changes
    text: str  # that whole file, mutated


def _docstrings(fn: ast.AST) -> set[int]:
    """ids of the docstring expressions of `fn` and of the definitions inside it."""
    out = set()
    for node in ast.walk(fn):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body \
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            out |= {id(body[0]), id(body[0].value)}
    return out


def _sites(fn: ast.AST) -> list[tuple[str, int, Callable[[ast.AST], ast.AST]]]:
    """(operator, index of the node in ast.walk order, the change to make on a copy of that node) of every site."""
    skip = _docstrings(fn)
    skip |= {id(v) for node in ast.walk(fn) if isinstance(node, ast.JoinedStr) for v in ast.walk(node)}
    sites: list[tuple[str, int, Callable[[ast.AST], ast.AST]]] = []

    def add(op: str, index: int, change: Callable[[ast.AST], ast.AST]) -> None:
        sites.append((op, index, change))

    def swap_op(field: str, table: dict) -> Callable[[ast.AST], ast.AST]:
        def change(node):
            setattr(node, field, table[type(getattr(node, field))]())
            return node
        return change

    def compare_op(k: int) -> Callable[[ast.AST], ast.AST]:
        def change(node):
            node.ops[k] = ROR[type(node.ops[k])]()
            return node
        return change

    def test_to(make: Callable[[ast.expr], ast.expr]) -> Callable[[ast.AST], ast.AST]:
        def change(node):
            node.test = make(node.test)
            return node
        return change

    def constant(value) -> Callable[[ast.AST], ast.AST]:
        return lambda node: ast.Constant(value)

    for index, node in enumerate(ast.walk(fn)):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Compare):
            for k, op in enumerate(node.ops):
                if type(op) in ROR:
                    add("ROR", index, compare_op(k))
        elif isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in AOR:
            add("AOR", index, swap_op("op", AOR))
        elif isinstance(node, ast.BoolOp):
            add("LCR", index, lambda n: ast.BoolOp(ast.Or() if isinstance(n.op, ast.And) else ast.And(), n.values))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub, ast.Invert)):
            add("UOI", index, lambda n: n.operand)
        elif isinstance(node, ast.Constant):
            v = node.value
            if type(v) is bool:
                add("CRP", index, constant(not v))
            elif type(v) is int:
                add("CRP", index, constant(v + 1))
                add("CRP", index, constant(v - 1))
            elif type(v) is float:
                add("CRP", index, constant(v + 1.0))
            elif isinstance(v, (str, bytes)):
                xx = "XX" if isinstance(v, str) else b"XX"
                add("CRP", index, constant(xx + v + xx if v else xx))
        elif isinstance(node, ast.If):
            add("COND", index, test_to(lambda t: ast.Constant(True)))
            add("COND", index, test_to(lambda t: ast.Constant(False)))
            add("COND", index, test_to(lambda t: ast.UnaryOp(ast.Not(), t)))
        elif isinstance(node, ast.IfExp):
            add("COND", index, test_to(lambda t: ast.Constant(True)))
            add("COND", index, test_to(lambda t: ast.Constant(False)))
        elif isinstance(node, ast.While):
            add("COND", index, test_to(lambda t: ast.Constant(False)))
        elif isinstance(node, (ast.Break, ast.Continue)):
            add("BRK", index, lambda n: ast.Continue() if isinstance(n, ast.Break) else ast.Break())
        if isinstance(node, ast.stmt) and node is not fn and not isinstance(node, ast.Pass):
            add("SDL", index, lambda n: ast.Pass())
    return sites


def _mutated(fn: ast.AST, index: int, change: Callable[[ast.AST], ast.AST]) -> ast.AST:
    """A copy of `fn` with its `index`-th node (ast.walk order) replaced by `change` of it."""
    fn = copy.deepcopy(fn)
    target = list(ast.walk(fn))[index]
    new = change(target)

    class Replace(ast.NodeTransformer):
        def visit(self, node):
            return new if node is target else self.generic_visit(node)

    return ast.fix_missing_locations(Replace().visit(fn))


def definition(tree: ast.Module, qualname: str) -> ast.AST | None:
    """The def or class statement `qualname` names in `tree`."""
    scope: list[ast.stmt] = list(tree.body)
    node = None
    for part in qualname.split("."):
        node = next((n for n in scope if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     and n.name == part), None)
        if node is None:
            return None
        scope = list(node.body)
    return node


def splice(source: str, fn: ast.AST, code: str) -> str:
    """`source` with the definition `fn` (decorators included) replaced by `code`, indented as `fn` was."""
    lines = source.splitlines(keepends=True)
    first = min([fn.lineno] + [d.lineno for d in getattr(fn, "decorator_list", [])])
    indent = lines[first - 1][: len(lines[first - 1]) - len(lines[first - 1].lstrip())]
    return "".join(lines[: first - 1]) + textwrap.indent(code, indent) + "\n" + "".join(lines[fn.end_lineno:])


def _stubbed(fn: ast.AST) -> ast.AST:
    """A copy of the def `fn` whose body (after its docstring) is the task's stub, as the builder deletes a body."""
    from feature_deletion.builder.deletions import STUB

    fn = copy.deepcopy(fn)
    keep = fn.body[:1] if fn.body and isinstance(fn.body[0], ast.Expr) and isinstance(fn.body[0].value, ast.Constant) \
        and isinstance(fn.body[0].value.value, str) else []
    fn.body = keep + ast.parse(STUB).body
    return ast.fix_missing_locations(fn)


def _stubs(row: TaskRow) -> list[Mutant]:
    """The incomplete rebuilds (`STUB`): each deleted definition of a task that deletes several (every method of a
    class) left as the stub, and each method of a deleted class; a task with one deleted function has none (its
    stub is the untouched task)."""
    out: list[Mutant] = []
    several = len(row.deletion.targets) > 1
    for target in row.deletion.targets:
        gold = row.gold_files.get(target.file)
        try:
            fn = definition(ast.parse(gold), target.qualname) if gold is not None else None
        except SyntaxError:
            fn = None
        if fn is None:
            continue
        if several and isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append(Mutant(f"{target.qualname}:STUB#0", target.file, splice(gold, fn, ast.unparse(_stubbed(fn)))))
        if isinstance(fn, ast.ClassDef):
            methods = [n for n in fn.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
            for n, method in enumerate(methods):
                changed = copy.deepcopy(fn)
                changed.body[fn.body.index(method)] = _stubbed(method)
                out.append(Mutant(f"{target.qualname}:STUB#{n}", target.file, splice(gold, fn, ast.unparse(changed))))
    return out


def mutants(row: TaskRow, limit: int = MAX_MUTANTS) -> list[Mutant]:
    """The incomplete rebuilds (`_stubs`), then up to `limit` mutants of the gold definitions, taken in turns from
    each operator (evenly spaced among that operator's sites), none whose code is gold's or another mutant's."""
    by_op: dict[str, list[Mutant]] = {}
    stubs = _stubs(row)
    seen: set[str] = {m.text for m in stubs}
    for target in row.deletion.targets:
        gold = row.gold_files.get(target.file)
        if gold is None:
            continue
        try:
            tree = ast.parse(gold)
        except SyntaxError:
            continue
        fn = definition(tree, target.qualname)
        if fn is None:
            continue
        seen.add(ast.unparse(fn))
        counts: dict[str, int] = {}
        for op, index, change in _sites(fn):
            n = counts[op] = counts.get(op, -1) + 1
            code = ast.unparse(_mutated(fn, index, change))
            text = splice(gold, fn, code)
            if code in seen or text in seen:
                continue
            seen |= {code, text}
            by_op.setdefault(op, []).append(Mutant(f"{target.qualname}:{op}#{n}", target.file, text))
    spread = {op: _spread(ms, limit) for op, ms in by_op.items()}
    out: list[Mutant] = []
    while len(out) < limit and any(spread.values()):
        for op in sorted(spread):
            if spread[op] and len(out) < limit:
                out.append(spread[op].pop(0))
    return stubs + out


def literals(row: TaskRow, strings: list[str], limit: int = MAX_LITERALS) -> list[tuple[str, list]]:
    """(tag, values) per constant of the gold definitions (docstrings aside), for held-out arguments that reach the
    code a constant guards: a string itself and put inside up to two of `strings` (recorded arguments); an int
    and its neighbours."""
    out: list[tuple[str, list]] = []
    for target in row.deletion.targets:
        try:
            fn = definition(ast.parse(row.gold_files.get(target.file, "")), target.qualname)
        except SyntaxError:
            continue
        skip = _docstrings(fn) if fn is not None else set()
        for node in ast.walk(fn) if fn is not None else []:
            v = getattr(node, "value", None) if isinstance(node, ast.Constant) and id(node) not in skip else None
            if isinstance(v, str) and 0 < len(v) <= 40:
                entry = ("str", [v] + [s[: len(s) // 2] + v + s[len(s) // 2:] for s in strings[:2]])
            elif type(v) is int:
                entry = ("int", [v, v + 1, v - 1])
            else:
                continue
            if entry not in out:
                out.append(entry)
    return out[:limit]


def _spread(items: list, limit: int) -> list:
    if len(items) <= limit:
        return list(items)
    return [items[int(i * len(items) / limit)] for i in range(limit)]


def killed_at(expect: list, observed: list | None) -> int | None:
    """The first step whose observation differs from gold's `expect` (where the grader's `compare` fails the
    program), or None: the same answers, or none came back (a replay cut short tells nothing)."""
    if observed is None:
        return None
    for j, want in enumerate(expect):
        if j >= len(observed) or observed[j] != want:
            return j
    return None


def cover(candidates: list[tuple[int, dict[int, int]]], kinds: list[str]) -> list[int]:
    """Greedy set cover: candidate indices in the order to keep them, held-out ones first (then the rest), each the
    one that kills most mutants no earlier pick kills (ties: the earlier candidate), until none kills a new one.
    `candidates[i]` is (size, {mutant: step where it is killed}); `kinds[i]` is "heldout" or another kind."""
    order: list[int] = []
    killed: set[int] = set()
    for kind in ("heldout", None):
        pool = [i for i, k in enumerate(kinds) if (k == "heldout") == (kind == "heldout")]
        while True:
            best = max(pool, key=lambda i: (len(candidates[i][1].keys() - killed), -candidates[i][0]), default=None)
            if best is None or not candidates[best][1].keys() - killed:
                break
            order.append(best)
            killed |= candidates[best][1].keys()
            pool.remove(best)
    return order


@dataclass
class Adequacy:
    """What the candidate programs tell from gold, mutant by mutant."""

    mutants: list[Mutant]
    candidates: list  # behaviour.Candidate: the build's, then the hunt's
    kills: list[dict[int, int]]  # per candidate: {mutant: first step it answers unlike gold}
    order: list[int]  # `cover`'s picks
    first: int  # candidates made before the hunt

    def killed_by(self, picks: list[tuple[int, int]]) -> set[int]:
        """Mutants the kept programs ((candidate, step it is cut after), as `behaviour._choose` keeps them) kill."""
        return {m for i, cut in picks for m, j in self.kills[i].items() if j <= cut}

    def summary(self, killed: set[int]) -> str:
        told = set().union(*self.kills) if self.kills else set()
        survive = [self.mutants[m].label for m in range(len(self.mutants)) if m not in killed]
        listed = ", ".join(survive[:SURVIVORS_LISTED]) + (", ..." if len(survive) > SURVIVORS_LISTED else "")
        return (f"mutants {len(killed)}/{len(self.mutants)} killed, {len(told - killed)} told but not kept, "
                f"{len(self.mutants) - len(told)} told by no program" + (f" (survive: {listed})" if survive else ""))


def adequacy(row: TaskRow, runner: Path | None, limits: Limits, gold_root: Path, tmp: Path, candidates: list,
             hunt: Callable[[int], list]) -> Adequacy:
    """Replay every candidate on every mutant (a copy of `gold_root`, one file changed at a time, in the sandbox);
    where some mutant no candidate kills, the candidates `hunt(round)` makes too, on those mutants only, up to
    `HUNT_ROUNDS` times."""
    from feature_deletion.behaviour import run_programs

    root = tmp / "mutant"
    shutil.copytree(gold_root, root)
    made = [m for m in mutants(row) if (root / m.file).is_file()]
    bounded = dataclasses.replace(limits, wall_s=min(limits.wall_s, MUTANT_WALL_S))
    kills: list[dict[int, int]] = []

    def replay(batch: list, which: list[int]) -> None:
        offset = len(kills)
        kills.extend({} for _ in batch)
        for m in which:
            path = root / made[m].file
            original = path.read_bytes()
            path.write_text(made[m].text)
            try:
                got = run_programs(root, row, runner, bounded, [{"steps": c.steps} for c in batch], {})
            finally:
                path.write_bytes(original)
            for ci, c in enumerate(batch):
                j = killed_at(c.expect, got.observations[ci])
                if j is not None:
                    kills[offset + ci][m] = j

    replay(candidates, list(range(len(made))))
    first = len(candidates)
    for round_ in range(HUNT_ROUNDS):
        survivors = sorted(set(range(len(made))) - set().union(*kills))
        if not survivors:
            break
        more = hunt(round_)
        replay(more, survivors)
        candidates = candidates + more
    order = cover([(len(str(c.steps)), k) for c, k in zip(candidates, kills)], [c.kind for c in candidates])
    return Adequacy(made, candidates, kills, order, first)
