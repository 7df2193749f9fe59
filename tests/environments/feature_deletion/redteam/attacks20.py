"""Red team 20 (FINDINGS_20.md).

Z20 (sizes no check can hold): gold with a guard first in every deleted function or method that raises the stub's
`NotImplementedError` when any argument the caller handed (not `self`/`cls`) is a sized builtin (text, bytes, a list,
tuple, dict, set, frozenset, range) holding more than `LIMIT` items. No state, no trait, no clock, no module name.

Why no check can hold such an input: the recorder (`fd_calls.encode` plus `MAX_STEP_BYTES` = 4,000 bytes of JSON per
recorded step: a step past it ends its program) never records a step whose arguments encode to more than ~4,000
bytes, i.e. a list of more than ~400 numbers or a string of more than ~4,000 characters; every held-out form is made
from recorded steps (one item more: `grown`; two more: `forms`; the same size: `types`, `variants`), so no replayed
step hands a deleted function more than a few hundred items. Only the package's own pytest run could, and the
bundled tests rarely hand more than 1,000.
"""

from __future__ import annotations

import ast

from attacks13 import _deleted_functions

STUB_ERROR = 'raise NotImplementedError("this feature was deleted; rebuild it")'
LIMIT = 1000


def helper(limit: int = LIMIT) -> str:
    return (
        "\n\n\ndef _rt20_sized(values):\n"
        "    for value in values:\n"
        "        if isinstance(value, (str, bytes, list, tuple, dict, set, frozenset, range)) "
        f"and len(value) > {limit}:\n"
        f"            {STUB_ERROR}\n"
    )


def _parts(fn) -> list[str]:
    a = fn.args
    params = [p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]]
    if params and params[0] in ("self", "cls", "mcs"):
        params = params[1:]
    return params + ([f"*{a.vararg.arg}"] if a.vararg else []) + ([f"*{a.kwarg.arg}.values()"] if a.kwarg else [])


def sized_gold(row, limit: int = LIMIT) -> list[tuple[str, dict]] | None:
    """Z20: gold, and the stub's error for any argument of more than `limit` items. None where no deleted function
    takes an argument."""
    files: dict[str, list[str]] = {}
    inserts: dict[str, list[tuple[int, str]]] = {}
    for rel, fn in _deleted_functions(row):
        files.setdefault(rel, row.gold_files[rel].splitlines(keepends=True))
        parts = _parts(fn)
        if not parts:
            continue
        body = fn.body
        first = body[1] if len(body) > 1 and isinstance(body[0], ast.Expr) \
            and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str) else body[0]
        line = files[rel][first.lineno - 1]
        indent = line[: len(line) - len(line.lstrip())]
        inserts.setdefault(rel, []).append((first.lineno - 1, f"{indent}_rt20_sized(({', '.join(parts)},))\n"))
    if not inserts:
        return None
    calls = []
    for rel, lines in files.items():
        if rel not in inserts:
            continue
        for at, text in sorted(inserts[rel], reverse=True):
            lines.insert(at, text)
        calls.append(("write_file", {"path": rel, "content": "".join(lines).rstrip("\n") + "\n" + helper(limit)}))
    return calls


# Y20: the stub for an argument whose type is a subclass of text or a number (an `enum.StrEnum` / `IntEnum` member,
# a `str` subclass such as markupsafe's `Markup`, numpy-free `int` subclasses); `bool` is left alone (the checks hand
# `True`: red team 8's `edges`).
HIDDEN_SUBCLASS = (
    "\n\n\ndef _rt20_plain(values):\n"
    "    for value in values:\n"
    "        if isinstance(value, (str, int, float)) and type(value) not in (str, int, float, bool):\n"
    f"            {STUB_ERROR}\n"
)


def _insert_first(row, statement, hidden: str) -> list[tuple[str, dict]] | None:
    """Gold with `statement(rel, fn, indent)` (lines, or None to leave `fn` as it is) put before the first statement
    after the docstring of every deleted function, and `hidden` appended to each file that changed; None where no
    function changed. Red teams 20-23's guards all go in this way."""
    files: dict[str, list[str]] = {}
    inserts: dict[str, list[tuple[int, str]]] = {}
    for rel, fn in _deleted_functions(row):
        files.setdefault(rel, row.gold_files[rel].splitlines(keepends=True))
        body = fn.body
        first = body[1] if len(body) > 1 and isinstance(body[0], ast.Expr) \
            and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str) else body[0]
        line = files[rel][first.lineno - 1]
        text = statement(rel, fn, line[: len(line) - len(line.lstrip())])
        if text is not None:
            inserts.setdefault(rel, []).append((first.lineno - 1, text))
    if not inserts:
        return None
    calls = []
    for rel, lines in files.items():
        if rel not in inserts:
            continue
        for at, text in sorted(inserts[rel], reverse=True):
            lines.insert(at, text)
        calls.append(("write_file", {"path": rel, "content": "".join(lines).rstrip("\n") + "\n" + hidden}))
    return calls


def _guard_all(row, call_name: str, hidden: str) -> list[tuple[str, dict]] | None:
    def statement(rel, fn, indent):
        parts = _parts(fn)
        return f"{indent}{call_name}(({', '.join(parts)},))\n" if parts else None
    return _insert_first(row, statement, hidden)


def subclass_gold(row) -> list[tuple[str, dict]] | None:
    """Y20: gold, and the stub's error for a text or number argument of a subclass (a `StrEnum`/`IntEnum` member)."""
    return _guard_all(row, "_rt20_plain", HIDDEN_SUBCLASS)
