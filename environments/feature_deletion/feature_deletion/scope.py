"""Grading layer 1: the scope of a submission, read from the parse tree against the gold source.

The agent may rewrite the deleted definitions and add new private helper functions or constants (a
name that starts with one `_`, is not a dunder and is not bound in the gold module). Everything it
submits besides must be a statement of the gold source, unchanged: other files, module-level
statements, class headers, the other methods of a class. Inside the code it wrote, every construct must be on
an allow-list or be used by the gold file itself; the reflective and runtime-patching ones (frames,
`gc`, `builtins`, `sys`, `inspect`, `ctypes`, code and globals attributes, dynamic attribute
access, dynamic import, `exec`/`eval`, `open`, assignments to attributes of modules, dunder
methods the gold does not define at that place) are not on it. A violation makes the submission
invalid before any of its code runs.
"""

from __future__ import annotations

import ast
import threading
from collections import Counter
from collections.abc import Iterator

from pydantic import BaseModel

from feature_deletion.task import TaskRow


class Invalid(BaseModel):
    """Why a submission was rejected: a stable `code` for programs and a message for the model."""

    code: str
    message: str
    file: str | None = None
    line: int | None = None

    def text(self) -> str:
        where = f"{self.file}:{self.line}: " if self.file and self.line else f"{self.file}: " if self.file else ""
        return f"[{self.code}] {where}{self.message}"


# Every node type of the language that plain code needs; anything else (new syntax included) is refused.
SAFE_NODES = tuple(getattr(ast, name) for name in (
    "FunctionDef", "AsyncFunctionDef", "ClassDef", "Return", "Delete", "Assign", "AugAssign", "AnnAssign", "For",
    "AsyncFor", "While", "If", "With", "AsyncWith", "Match", "Raise", "Try", "TryStar", "Assert", "Import",
    "ImportFrom", "Nonlocal", "Global", "Expr", "Pass", "Break", "Continue", "BoolOp", "NamedExpr", "BinOp",
    "UnaryOp", "Lambda", "IfExp", "Dict", "Set", "ListComp", "SetComp", "DictComp", "GeneratorExp", "Await", "Yield",
    "YieldFrom", "Compare", "Call", "FormattedValue", "JoinedStr", "Constant", "Attribute", "Subscript", "Starred",
    "Name", "List", "Tuple", "Slice", "expr_context", "boolop", "operator", "unaryop", "cmpop", "comprehension",
    "excepthandler", "arguments", "arg", "keyword", "alias", "withitem", "match_case", "pattern",
) if hasattr(ast, name))
# Modules whose attributes reach the interpreter, the process, the file system or the test runner.
RISKY_MODULES = frozenset({
    "sys", "os", "posix", "gc", "inspect", "builtins", "ctypes", "importlib", "types", "weakref", "atexit", "signal",
    "subprocess", "threading", "_thread", "multiprocessing", "concurrent", "pytest", "_pytest", "pluggy", "io", "pathlib",
    "shutil", "tempfile", "pickle", "marshal", "code", "codeop", "runpy", "pkgutil", "site", "traceback", "tracemalloc",
    "faulthandler", "dis", "socket", "mmap", "resource", "fcntl", "sysconfig", "linecache", "unittest", "zipimport",
    "coverage", "fd_report", "asyncio", "selectors", "select", "pty", "platform", "ast", "copyreg", "operator",
})
# Plain-data standard modules that agent code may import inside its own definitions.
PURE_MODULES = frozenset({
    "re", "itertools", "functools", "collections", "math", "cmath", "string", "numbers", "typing", "dataclasses",
    "heapq", "bisect", "copy", "enum", "abc", "decimal", "fractions", "textwrap", "unicodedata", "keyword",
    "statistics", "random", "datetime", "calendar", "json", "warnings", "contextlib", "array", "struct", "base64",
    "binascii", "hashlib", "difflib", "fnmatch", "time",
})
RISKY_BUILTINS = frozenset({
    "exec", "eval", "compile", "__import__", "globals", "locals", "vars", "open",
    "breakpoint", "input", "exit", "quit", "help", "memoryview", "__builtins__", "__loader__", "__spec__",
    "SystemExit", "KeyboardInterrupt", "GeneratorExit", "BaseException",
})
ATTR_BUILTINS = ("getattr", "setattr", "delattr", "hasattr")
# Dunders of the data model that ordinary code names; the reflective ones (__class__, __dict__,
# __globals__, __code__, __subclasses__, __mro__, __getattribute__, ...) are not here.
SAFE_DUNDERS = frozenset({
    "__name__", "__qualname__", "__doc__", "__module__", "__init__", "__new__", "__call__", "__len__", "__iter__",
    "__next__", "__reversed__", "__contains__", "__getitem__", "__setitem__", "__delitem__", "__missing__",
    "__enter__", "__exit__", "__repr__", "__str__", "__hash__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__",
    "__ge__", "__bool__", "__add__", "__sub__", "__mul__", "__truediv__", "__floordiv__", "__mod__", "__pow__",
    "__neg__", "__pos__", "__abs__", "__and__", "__or__", "__xor__", "__invert__", "__all__", "__slots__",
    "__version__", "__length_hint__", "__index__", "__int__", "__float__", "__format__", "__sizeof__", "__copy__",
    "__deepcopy__", "__aiter__", "__anext__", "__await__", "__radd__", "__rsub__", "__rmul__", "__iadd__",
    "__isub__", "__ior__", "__iand__", "__class_getitem__", "__annotations__",
})
FRAME_PREFIXES = ("f_", "gi_", "cr_", "ag_", "tb_", "co_")


def _dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _private(name: str) -> bool:
    return name.startswith("_") and not _dunder(name)


def _root(module: str) -> str:
    return module.split(".", 1)[0]


class Features:
    """The risky constructs one piece of code uses, each with the line where it first occurs.

    `bindings` maps a name to the module it was imported from, so that aliasing a risky module
    (`import sys as s`, `from os import path`) does not hide it.
    """

    def __init__(self, bindings: dict[str, str]):
        self.bindings = bindings
        self.found: dict[tuple[str, str], int] = {}

    def add(self, kind: str, what: str, node: ast.AST) -> None:
        self.found.setdefault((kind, what), getattr(node, "lineno", 0))

    def scan(self, node: ast.AST) -> Features:
        parents: dict[int, ast.AST] = {}
        for parent in ast.walk(node):
            for child in ast.iter_child_nodes(parent):
                parents[id(child)] = parent
        for n in ast.walk(node):
            self._visit(n, parents.get(id(n)))
        return self

    def _attr_name(self, attr: str, node: ast.AST) -> None:
        if _dunder(attr) and attr not in SAFE_DUNDERS:
            self.add("attribute", attr, node)
        elif attr.startswith(FRAME_PREFIXES) or _root(attr) in RISKY_MODULES:
            self.add("attribute", attr, node)

    def _visit(self, n: ast.AST, parent: ast.AST | None) -> None:
        if not isinstance(n, SAFE_NODES):
            self.add("syntax", type(n).__name__, n)
        if isinstance(n, ast.Name):
            module = self.bindings.get(n.id)
            if module and _root(module) in RISKY_MODULES and not isinstance(parent, ast.Attribute):
                self.add("module", module, n)
            elif n.id in ATTR_BUILTINS and not (isinstance(parent, ast.Call) and parent.func is n):
                self.add("builtin", n.id, n)
            elif n.id in RISKY_BUILTINS or (_dunder(n.id) and n.id not in SAFE_DUNDERS):
                self.add("builtin", n.id, n)
        elif isinstance(n, ast.Attribute):
            self._attr_name(n.attr, n)
            if isinstance(n.value, ast.Name) and n.value.id in self.bindings:
                module = self.bindings[n.value.id]
                if not isinstance(n.ctx, ast.Load):
                    self.add("module_assignment", f"{module}.{n.attr}", n)
                if _root(module) in RISKY_MODULES or n.attr.startswith("_"):
                    self.add("module_attribute", f"{module}.{n.attr}", n)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ATTR_BUILTINS:
            name = n.args[1] if len(n.args) > 1 else None
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                self._attr_name(name.value, n)
                if n.func.id != "hasattr":
                    self.add("builtin", n.func.id + "(literal)", n)
            else:
                self.add("dynamic_attribute", n.func.id, n)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "type" and len(n.args) == 3:
            self.add("builtin", "type(name, bases, namespace)", n)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and _dunder(n.value):
            # A dunder named in a string builds a class or reaches an attribute at run time.
            self.add("dunder_string", n.value, n)
        elif isinstance(n, ast.Global):
            for name in n.names:
                self.add("global", name, n)
        elif isinstance(n, ast.Import):
            for a in n.names:
                if _root(a.name) not in PURE_MODULES:
                    self.add("import", a.name, n)
        elif isinstance(n, ast.ImportFrom):
            module = "." * n.level + (n.module or "")
            if n.level or _root(module) not in PURE_MODULES:
                self.add("import", module, n)


def import_bindings(tree: ast.AST) -> dict[str, str]:
    """Every name an import statement binds anywhere in `tree`, and the module it comes from."""
    bound = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            for a in n.names:
                bound[a.asname or _root(a.name)] = a.name if a.asname else _root(a.name)
        elif isinstance(n, ast.ImportFrom):
            module = "." * n.level + (n.module or "")
            for a in n.names:
                bound[a.asname or a.name] = f"{module}.{a.name}" if n.level == 0 and _root(module) in RISKY_MODULES \
                    else module
    return bound


def _def_paths(node: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.AST]]:
    """Dotted paths of every function and class nested in `node` (functions' locals included)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            path = prefix + child.name
            yield path, child
            yield from _def_paths(child, path + ".")
        else:
            yield from _def_paths(child, prefix)


def _bound_names(body: list[ast.stmt]) -> set[str]:
    names = set()
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                names.add(n.id)
            elif isinstance(n, ast.alias):
                names.add(_root(n.asname or n.name))
    return names


def _import_aliases(body: list[ast.stmt]) -> set[tuple]:
    aliases = set()
    for stmt in body:
        if isinstance(stmt, ast.Import):
            aliases |= {("import", 0, a.name, None, a.asname) for a in stmt.names}
        elif isinstance(stmt, ast.ImportFrom):
            aliases |= {("from", stmt.level, stmt.module, a.name, a.asname) for a in stmt.names}
    return aliases


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


class FileScope:
    """Checks one changed file against its gold version."""

    def __init__(self, rel: str, gold: ast.Module, targets: dict[str, str], errors: list[Invalid]):
        self.rel, self.gold, self.errors = rel, gold, errors
        self.targets = targets  # qualname -> kind ("function" | "method" | "class")
        self.gold_defs = dict(_def_paths(gold))
        self.gold_features: set[tuple[str, str]] = set()
        self.bindings: dict[str, str] = import_bindings(gold)

    def fail(self, code: str, message: str, node: ast.AST | None = None) -> None:
        self.errors.append(Invalid(code=code, message=message, file=self.rel, line=getattr(node, "lineno", None)))

    def check(self, agent: ast.Module) -> None:
        self.bindings = import_bindings(self.gold) | import_bindings(agent)
        self.gold_features = set(Features(self.bindings).scan(self.gold).found)
        self.body(agent.body, self.gold.body, "")

    def body(self, agent: list[ast.stmt], gold: list[ast.stmt], prefix: str) -> None:
        """Statements of a module or class body: gold statements, the targets, new private helpers."""
        by_name = {s.name: s for s in gold if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        own = {q[len(prefix):] for q in self.targets if q.startswith(prefix) and "." not in q[len(prefix):]}
        containers = {q[len(prefix):].split(".", 1)[0] for q in self.targets
                      if q.startswith(prefix) and "." in q[len(prefix):]}
        pool = Counter(ast.dump(s) for s in gold
                       if getattr(s, "name", None) not in own | containers and not _is_docstring(s))
        aliases = _import_aliases(gold)
        bound = _bound_names(gold)
        seen: set[str] = set()
        for stmt in agent:
            name = getattr(stmt, "name", None)
            if _is_docstring(stmt) or isinstance(stmt, ast.Pass):
                continue
            if name in own:
                if name in seen:
                    self.fail("duplicate_definition", f"{prefix}{name} is defined twice", stmt)
                seen.add(name)
                self.definition(stmt, by_name.get(name), prefix + name)
            elif name in containers and isinstance(stmt, ast.ClassDef) and isinstance(by_name.get(name), ast.ClassDef):
                self.container(stmt, by_name[name], prefix + name)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and _private(stmt.name) \
                    and stmt.name not in bound:
                self.code(stmt, prefix + stmt.name)
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                    and _private(stmt.targets[0].id) and stmt.targets[0].id not in bound:
                self.code(stmt, prefix + stmt.targets[0].id)
            elif isinstance(stmt, (ast.Import, ast.ImportFrom)) and _import_aliases([stmt]) <= aliases:
                continue
            elif pool[ast.dump(stmt)] > 0:
                pool[ast.dump(stmt)] -= 1
            else:
                where = f"class {prefix[:-1]}" if prefix else "the module"
                self.fail("statement_out_of_scope",
                          f"a statement of {where} that is not in the original source: `{ast.unparse(stmt)[:120]}`; "
                          "only the deleted definitions and new private helper functions may change", stmt)

    def container(self, agent: ast.ClassDef, gold: ast.ClassDef, path: str) -> None:
        def header(c: ast.ClassDef) -> list[str]:
            return [ast.dump(x) for x in (*c.bases, *c.keywords, *c.decorator_list)]

        if header(agent) != header(gold):
            self.fail("statement_out_of_scope", f"the header of class {path} differs from the original", agent)
        self.body(agent.body, gold.body, path + ".")

    def definition(self, agent: ast.stmt, gold: ast.AST | None, path: str) -> None:
        want = ast.ClassDef if self.targets[path] == "class" else (ast.FunctionDef, ast.AsyncFunctionDef)
        if not isinstance(agent, want):
            self.fail("wrong_kind", f"{path} must be a {self.targets[path]}", agent)
            return
        self.code(agent, path)

    def code(self, node: ast.AST, path: str) -> None:
        """Code the agent wrote: only allowed constructs, and no dunder method or class the gold lacks there."""
        for sub, child in _def_paths(node, path + "."):
            if (isinstance(child, ast.ClassDef) or _dunder(child.name)) and sub not in self.gold_defs:
                self.fail("definition_out_of_scope",
                          f"{sub} is a {'class' if isinstance(child, ast.ClassDef) else 'dunder method'} "
                          "that the original does not define there", child)
        for (kind, what), line in Features(self.bindings).scan(node).found.items():
            if (kind, what) not in self.gold_features:
                self.errors.append(Invalid(code=f"construct.{kind}", file=self.rel, line=line, message=(
                    f"{path} uses {kind.replace('_', ' ')} `{what}`, which the original file does not use; "
                    "reflection, runtime patching, dynamic code and the interpreter's internals are not allowed")))


# CPython 3.11's AST constructor tracks its recursion depth in per-interpreter state, not per thread: two threads
# parsing at once can fail with "SystemError: AST constructor recursion depth mismatch" (seen when verifiers
# scored concurrent rollouts in threads). Parses here take turns.
_PARSE_LOCK = threading.Lock()


def _parse(source: str, filename: str = "<unknown>") -> ast.Module:
    with _PARSE_LOCK:
        return ast.parse(source, filename=filename)


def check_scope(row: TaskRow, changes: dict[str, bytes | None]) -> list[Invalid]:
    """Why the agent's source changes are out of scope (empty: in scope)."""
    errors: list[Invalid] = []
    by_file: dict[str, dict[str, str]] = {}
    for t in row.deletion.targets:
        by_file.setdefault(t.file, {})[t.qualname] = t.kind
    for rel, content in sorted(changes.items()):
        if rel not in row.gold_files:
            errors.append(Invalid(code="file_out_of_scope", file=rel, message=(
                "only the files of the deleted feature may change: " + ", ".join(sorted(row.gold_files)))))
            continue
        if content is None:
            errors.append(Invalid(code="file_removed", file=rel, message="a file of the task was removed"))
            continue
        try:
            agent = _parse(content.decode("utf-8"), filename=rel)
        except (SyntaxError, UnicodeDecodeError, ValueError) as exc:
            errors.append(Invalid(code="syntax_error", file=rel, line=getattr(exc, "lineno", None),
                                  message=f"{type(exc).__name__}: {exc}"))
            continue
        FileScope(rel, _parse(row.gold_files[rel]), by_file.get(rel, {}), errors).check(agent)
    return errors
