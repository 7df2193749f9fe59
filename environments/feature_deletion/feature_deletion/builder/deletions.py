"""Candidate deletions found with `ast`, applied as line edits that keep the rest of the file intact."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

STUB = 'raise NotImplementedError("this feature was deleted; rebuild it")'


@dataclass
class Definition:
    file: str
    qualname: str
    kind: str  # function | method | class
    node: ast.AST
    start: int  # first line (decorators included), 1-based
    end: int  # last line, inclusive
    body_start: int  # first line of the body after any docstring
    signature: str
    tests: set[str] = field(default_factory=set)

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]


def _signature(node) -> str:
    if isinstance(node, ast.ClassDef):
        bases = ", ".join(ast.unparse(b) for b in node.bases)
        return f"class {node.name}" + (f"({bases})" if bases else "")
    prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
    return f"{prefix} {node.name}({ast.unparse(node.args)}){returns}"


def _body_start(node) -> int | None:
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    if not body:
        return None
    return body[0].lineno


def definitions(file: str, source: str) -> list[Definition]:
    tree = ast.parse(source)
    found = []

    def visit(nodes, prefix, in_class):
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                body_start = _body_start(node)
                if body_start is None or body_start == node.lineno:
                    continue
                kind = "class" if isinstance(node, ast.ClassDef) else ("method" if in_class else "function")
                qual = prefix + node.name
                found.append(Definition(file, qual, kind, node, start, node.end_lineno, body_start, _signature(node)))
                if isinstance(node, ast.ClassDef) and not in_class:
                    visit(node.body, qual + ".", True)

    visit(tree.body, "", False)
    return found


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def delete_body(source: str, d: Definition) -> tuple[str, int]:
    """Replace the body (after the docstring) with a NotImplementedError stub."""
    lines = source.splitlines(keepends=True)
    indent = _indent_of(lines[d.body_start - 1])
    removed = d.end - d.body_start + 1
    new = lines[: d.body_start - 1] + [f"{indent}{STUB}\n"] + lines[d.end:]
    return "".join(new), removed


def delete_class_bodies(source: str, d: Definition) -> tuple[str, int, list[Definition]]:
    """Stub every method body of class `d` (bottom-up so line numbers stay valid)."""
    methods = [m for m in definitions(d.file, source) if m.qualname.startswith(d.qualname + ".") and m.kind == "method"
               and m.qualname.count(".") == d.qualname.count(".") + 1]
    total = 0
    for m in sorted(methods, key=lambda m: -m.body_start):
        source, removed = delete_body(source, m)
        total += removed
    return source, total, methods


def delete_definition(source: str, d: Definition) -> tuple[str, int]:
    """Remove the whole definition; a class body left empty gets `pass`."""
    lines = source.splitlines(keepends=True)
    removed = d.end - d.start + 1
    before, after = lines[: d.start - 1], lines[d.end:]
    replacement = []
    if d.kind == "method":
        parent = ast.parse(source)
        for node in ast.walk(parent):
            if isinstance(node, ast.ClassDef) and any(b is not None and getattr(b, "lineno", None) == d.node.lineno
                                                      and getattr(b, "name", None) == d.name for b in node.body):
                if len(node.body) == 1 or (len(node.body) == 2 and _body_start(node) == d.node.lineno):
                    replacement = [f"{_indent_of(lines[d.start - 1])}pass\n"]
    return "".join(before + replacement + after), removed


def drop_references(source: str, names: set[str]) -> str | None:
    """Remove `from x import name` aliases and `__all__` entries of deleted names; None if unchanged."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    edits = []  # (start, end, replacement lines)
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) in names or a.name in names for a in node.names):
            keep = [a for a in node.names if a.name not in names]
            indent = _indent_of(lines[node.lineno - 1])
            text = "" if not keep else indent + ast.unparse(ast.ImportFrom(module=node.module, names=keep, level=node.level)) + "\n"
            edits.append((node.lineno, node.end_lineno, text))
        elif isinstance(node, (ast.Assign, ast.AugAssign)) and isinstance(getattr(node, "value", None), (ast.List, ast.Tuple)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                elts = node.value.elts
                keep = [e for e in elts if not (isinstance(e, ast.Constant) and e.value in names)]
                if len(keep) != len(elts):
                    node.value.elts = keep
                    edits.append((node.lineno, node.end_lineno, ast.unparse(node) + "\n"))
    if not edits:
        return None
    for start, end, text in sorted(edits, reverse=True):
        lines[start - 1: end] = [text] if text else []
    return "".join(lines)


def size_of(lines_removed: int) -> str:
    return "small" if lines_removed <= 7 else "medium" if lines_removed <= 30 else "large"


_WORD = re.compile(r"\w+")
