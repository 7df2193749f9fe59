"""Red team: wrong code that is paid. Mutants of the gold definition (one small semantic change each: a comparison
flipped, a constant moved by one, a boolean operator swapped, one statement dropped, a branch's test forced) are
submitted as the agent's rebuild. A mutant paid 1.0 is a wrong implementation the grader cannot tell from gold.

Screening: each mutant's verdict (the replay of the task's checks, `behaviour.check_behaviour`, what `grade` runs)
first; mutants that pass it are then played end to end through `ToolSession` (write_file, submit, finish).

    python tests/environments/feature_deletion/redteam/mutants.py [N_TASKS|all] [MAX_MUTANTS_PER_TASK]
"""

from __future__ import annotations

import ast
import copy
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from harness import Played, TASKS, play, record, rows, sample  # noqa: E402

from feature_deletion.behaviour import check_behaviour  # noqa: E402
from feature_deletion.mutation import definition, splice  # noqa: E402
from feature_deletion.sandbox import Limits  # noqa: E402
from feature_deletion.scope import agent_lines, check_scope  # noqa: E402
from feature_deletion.task import runner_for  # noqa: E402

FLIP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
        ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}


def _sites(fn: ast.AST) -> list[tuple[str, int]]:
    """(kind, index among nodes of that kind in ast.walk order) of every place a mutation applies."""
    sites = []
    counts: dict[str, int] = {}

    def add(kind):
        sites.append((kind, counts.get(kind, 0)))
        counts[kind] = counts.get(kind, 0) + 1

    for node in ast.walk(fn):
        if isinstance(node, ast.Compare) and type(node.ops[0]) in FLIP:
            add("compare")
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            add("int")
        elif isinstance(node, ast.BoolOp):
            add("boolop")
        elif isinstance(node, ast.If):
            add("if_true")
            add("if_false")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            add("addsub")
    for node in ast.walk(fn):
        body = getattr(node, "body", None)
        if isinstance(body, list) and len(body) > 1 and node is not fn or (node is fn and len(fn.body) > 2):
            for i, stmt in enumerate(node.body):
                if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):  # not the docstring
                    add("drop")
    return sites


def _mutate(fn: ast.AST, site: tuple[str, int]) -> ast.AST | None:
    fn = copy.deepcopy(fn)
    kind, want = site
    seen = -1
    if kind == "drop":
        for node in ast.walk(fn):
            body = getattr(node, "body", None)
            if isinstance(body, list) and len(body) > 1 and node is not fn or (node is fn and len(fn.body) > 2):
                for i, stmt in enumerate(node.body):
                    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                        continue
                    seen += 1
                    if seen == want:
                        node.body[i] = ast.Pass()
                        return fn
        return None
    for node in ast.walk(fn):
        if kind == "compare" and isinstance(node, ast.Compare) and type(node.ops[0]) in FLIP:
            seen += 1
            if seen == want:
                node.ops[0] = FLIP[type(node.ops[0])]()
                return fn
        elif kind == "int" and isinstance(node, ast.Constant) and type(node.value) is int:
            seen += 1
            if seen == want:
                node.value += 1
                return fn
        elif kind == "boolop" and isinstance(node, ast.BoolOp):
            seen += 1
            if seen == want:
                node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
                return fn
        elif kind in ("if_true", "if_false") and isinstance(node, ast.If):
            seen += 1
            if seen == want:
                node.test = ast.Constant(kind == "if_true")
                return fn
        elif kind == "addsub" and isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            seen += 1
            if seen == want:
                node.op = ast.Sub() if isinstance(node.op, ast.Add) else ast.Add()
                return fn
    return None


def mutants(row, limit: int) -> list[tuple[str, dict[str, str]]]:
    """(label, {file: text}) of up to `limit` mutants of the gold definitions, spread over their sites."""
    out = []
    for target in row.deletion.targets:
        gold = row.gold_files[target.file]
        tree = ast.parse(gold)
        fn = definition(tree, target.qualname)
        if fn is None:
            continue
        for site in _sites(fn):
            m = _mutate(fn, site)
            if m is None:
                continue
            ast.fix_missing_locations(m)
            text = splice(gold, fn, ast.unparse(m))
            out.append((f"{target.qualname}:{site[0]}#{site[1]}", {target.file: text}))
    if len(out) > limit:  # spread evenly over the sites
        step = len(out) / limit
        out = [out[int(i * step)] for i in range(limit)]
    return out


def verdict_of(row, files: dict[str, str]):
    changes = {k: v.encode() for k, v in files.items()}
    if check_scope(row, changes):
        return None
    return check_behaviour(row, TASKS.parent, runner_for(row), Limits(), "namespace", changes,
                           agent_lines(row, changes))


def main(n: int | None, per_task: int) -> None:
    picked = sample(rows(), n, seed=28)
    print(f"{len(picked)} tasks, up to {per_task} mutants each", flush=True)
    paid: list[Played] = []
    for row in picked:
        t0 = time.perf_counter()
        cands = mutants(row, per_task)
        survivors = []
        for label, files in cands:
            v = verdict_of(row, files)
            if v is not None and v.fraction > 0:
                survivors.append((label, files))
        results = []
        for label, files in survivors:
            p = play(row, [("write_file", {"path": rel, "content": text}) for rel, text in files.items()])
            p.task = f"{row.id} [{label}]"
            results.append(p)
            print("  SURVIVOR", p.line(), flush=True)
            if p.reward > 0:
                paid.append(p)  # the mutant itself is `dict(mutants(row, 10_000))[label]`: deterministic
        record("gold_mutants", results or [Played(row.id + " [no survivor]", 0.0, [], "", {}, [], 0.0)])
        print(f"{row.id}: {len(cands)} mutants, {len(survivors)} pass the checks, "
              f"{sum(r.reward > 0 for r in results)} paid ({time.perf_counter() - t0:.0f}s)", flush=True)
    print(f"PAID {len(paid)} mutants on {len({p.task.split(' [')[0] for p in paid})} tasks")


if __name__ == "__main__":
    arg = sys.argv[1] if len(sys.argv) > 1 else "12"
    main(None if arg == "all" else int(arg), int(sys.argv[2]) if len(sys.argv) > 2 else 8)
