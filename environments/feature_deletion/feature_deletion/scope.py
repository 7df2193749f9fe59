"""Grading layer 1: the scope of a submission, read from the parse tree against the gold source.

The agent may rewrite the deleted definitions and add new private helper functions or constants (a
name that starts with one `_`, is not a dunder and is not bound in the gold module). Everything it
submits besides must be a statement of the gold source, unchanged: other files, module-level
statements, class headers, the other methods of a class. Inside the code it wrote, every construct must be
on an allow-list, whatever the gold file does: the gold file's own reflection (toolz imports `inspect`,
`sys` and `builtins`) is never granted to lines the agent wrote. Imports: plain-data standard modules, the
package's own and its third-party dependencies. An attribute of a standard module is resolved here, in the grader, to what it really
is: a public name that is not a module outside the allow-list (`enum.bltns` *is* `builtins`) and not one of
the builtins that run or reach code (`exec`, `getattr`, ...). Not allowed besides: frames, code, globals
and other reflective dunders (`__dict__` only as an instance's own, `_own_dict`), dunder strings, format strings that
walk attributes (`"{0.__globals__}"`),
dynamic attribute names, `exec`/`eval`/`open`/`globals`..., assignments to modules' attributes,
`global`, classes and dunder methods where the gold has none. A violation makes the submission invalid
before any of its code runs.

`agent_lines` gives the lines the agent wrote (its definitions and helpers, and any statement that is not
the gold's): the grader's audit hook watches exactly those at run time.
"""

from __future__ import annotations

import ast
import builtins
import copy
import functools
import importlib
import operator
import random
import re
import string
import sys
import threading
import types
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
# The standard modules agent code may import and reach into: plain data and algorithms, nothing that reaches
# the interpreter, the process, the file system or the test runner.
PURE_MODULES = frozenset({
    "re", "itertools", "functools", "collections", "math", "cmath", "string", "numbers", "typing", "dataclasses",
    "heapq", "bisect", "copy", "enum", "abc", "decimal", "fractions", "textwrap", "unicodedata", "keyword",
    "statistics", "random", "datetime", "calendar", "json", "warnings", "contextlib", "array", "struct", "base64",
    "binascii", "hashlib", "difflib", "fnmatch", "time", "zlib", "colorsys", "locale", "operator",
    "html",  # escaping and the entity tables (python-slugify's `name2codepoint`); `html._re` is private
})
RISKY_BUILTINS = frozenset({
    "exec", "eval", "compile", "__import__", "globals", "locals", "vars", "open",
    "breakpoint", "input", "exit", "quit", "help", "memoryview", "__builtins__", "__loader__", "__spec__",
    "SystemExit", "KeyboardInterrupt", "GeneratorExit", "BaseException",
})
ATTR_BUILTINS = ("getattr", "setattr", "delattr", "hasattr")
# Objects a resolved attribute of a standard module may not be: the builtins that run or reach code.
DANGEROUS = tuple(getattr(builtins, name) for name in (*RISKY_BUILTINS, *ATTR_BUILTINS)
                  if name not in ("SystemExit", "KeyboardInterrupt", "GeneratorExit", "BaseException")
                  and callable(getattr(builtins, name, None)))
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
    "__isub__", "__ior__", "__iand__", "__class_getitem__", "__annotations__", "__class__",
})
FRAME_PREFIXES = ("f_", "gi_", "cr_", "ag_", "tb_", "co_")
# The clock, as `time` and `datetime` (the allowed modules that read it) name it: agent code may read it only where the
# original does (cachetools' timers, humanize's dates). Elsewhere a rebuild that reads it can change its answers on a
# date no check runs on (red team 5, T5: an `ordinal` right until 2027-01-01).
CLOCK = frozenset({"time", "time_ns", "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns", "process_time",
                   "process_time_ns", "thread_time", "thread_time_ns", "clock_gettime", "clock_gettime_ns",
                   "localtime", "gmtime", "ctime", "asctime", "strftime", "now", "utcnow", "today",
                   # the operating system's entropy, the other input no replay fixes: `random` is seeded per program
                   "SystemRandom", "urandom"})
# Writing to the process's output: a library that prints where the original does not corrupts its users' output (a
# JSON stream on stdout), and no check reads what a step wrote (red team 14, P14: gold plus a `print` in every
# deleted function was paid 1.0 on every task played). Allowed where the original's files print.
OUTPUT = frozenset({"print"})
# Standard modules that reach the process rather than data: the warnings machinery (its records and the text it writes
# name the file that warned and its caller: red team 9, P9, gold only where its file lay under the grader's
# `/workspace`), the locale (read from the environment), the process's streams (`contextlib.redirect_stderr` reads what
# the interpreter writes there, tracebacks included), `abc` (`get_cache_token` counts the registrations the process
# made: 45 under pytest, 25 in a plain script), `calendar` (its `Locale*Calendar` reads the environment's locale: red
# team 11, L11, gold only under the grader's `LANG`). Agent code uses only the names of these that the original uses.
PROCESS_MODULES = frozenset({"warnings", "locale", "contextlib", "abc", "calendar"})
# Objects that walk attributes named by a string handed over at run time, as `getattr` does (red team 11, G11:
# `string.Formatter().get_field("0." + "_" * 2 + "globals" + "_" * 2, ...)` read a function's globals).
FIELD_GETTERS = (string.Formatter,)
# Calls that seed from the operating system when given no seed: likewise only where the original makes them.
UNSEEDED = (random.Random, random.seed)
_GETTERS = (operator.attrgetter, operator.methodcaller)
IMPORT_SYSTEM = frozenset({"importlib", "importlib._bootstrap", "importlib._bootstrap_external", "importlib.util",
                           "importlib.machinery", "_frozen_importlib", "_frozen_importlib_external", "_imp"})
DUNDER_IN_TEXT = re.compile(r"__[A-Za-z0-9_]+?__")
STDLIB = frozenset(sys.stdlib_module_names)
# The test runner's own packages, importable in the sandbox beside the package's dependencies.
RUNNER_MODULES = frozenset({"pytest", "_pytest", "pluggy", "py", "coverage", "iniconfig", "packaging", "pygments",
                            "exceptiongroup", "tomli", "fd_report", "fd_calls", "fd_guard"})


def _dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _private(name: str) -> bool:
    return name.startswith("_") and not _dunder(name)


def _root(module: str) -> str:
    return module.split(".", 1)[0]


_UNKNOWN = object()  # an attribute base that is not a standard module's (a local value, the package's own)


def _standard(module: str):
    """The standard module `module` as the grader imports it, or None when it is not a plain-data one."""
    if _root(module) not in PURE_MODULES:
        return None
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


def _format_attributes(text: str) -> list[str]:
    """The attribute names the fields of a format string reach (`"{0.__globals__}"`: `__globals__`)."""
    if "{" not in text:
        return []
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(text) if f]
    except ValueError:
        return []
    return [part.split("[", 1)[0] for f in fields for part in f.split(".")[1:]]


class Features:
    """The constructs one piece of code uses that are not on the allow-list, each with its first line.

    `bindings` maps a name bound by an import to ("module", dotted name) for `import x.y [as z]` and to
    ("from", module, name) for `from module import name`; `package` is the top-level package of the task,
    whose own modules agent code may import."""

    def __init__(self, bindings: dict[str, tuple], package: str, private_ok: frozenset[str] = frozenset(),
                 clock_ok: frozenset[str] = frozenset(), classes: frozenset[str] = frozenset(),
                 used: frozenset[str] = frozenset(), importable=None, formats: frozenset[str] = frozenset()):
        self.bindings = bindings
        self.used = used  # attribute names the original's files use, and the names they import from modules
        # (level, module, name) -> the package's own `from module import name` is known to succeed (FileScope.importable)
        self.importable = importable or (lambda level, module, name: False)
        self.formats = formats  # the format strings the original's files make and format (their dumps)
        self.package = package
        self.private_ok = private_ok  # private attribute names the agent may use (`private_names`)
        self.clock_ok = clock_ok  # the clock's and output's names the original uses (`clock_names`)
        self.classes = classes  # the classes the original's module defines at its top level
        self.found: dict[tuple[str, str], int] = {}
        self.parents: dict[int, ast.AST] = {}

    def add(self, kind: str, what: str, node: ast.AST) -> None:
        self.found.setdefault((kind, what), getattr(node, "lineno", 0))

    def scan(self, node: ast.AST, member: bool = False) -> Features:
        """Scan `node`; `member`: it is a statement of a class body (a method the agent wrote in a gold class)."""
        self.parents = {id(node): ast.ClassDef(name="", bases=[], keywords=[], body=[], decorator_list=[])} \
            if member else {}
        for parent in ast.walk(node):
            for child in ast.iter_child_nodes(parent):
                self.parents[id(child)] = parent
        for n in ast.walk(node):
            self._visit(n, self.parents.get(id(n)))
        return self

    def _own_dict(self, node: ast.Attribute) -> bool:
        """`self.__dict__` where `self` can only be an instance of the class (`__setstate__`'s
        `self.__dict__.update(state)`): read, on the first parameter of the function it is in, a method defined
        in a class body, undecorated, never rebound in it, and named by a dunder that agent code cannot name
        (none of SAFE_DUNDERS), so that only Python's own lookup on an instance calls it: `C.__init__(contextlib)`
        would hand it a module, and `self = contextlib` any object at all."""
        if not (isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name)):
            return False
        name = node.value.id
        func = self.parents.get(id(node))
        while func is not None and not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            func = self.parents.get(id(func))
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)) or func.decorator_list \
                or not _dunder(func.name) or func.name in SAFE_DUNDERS \
                or not isinstance(self.parents.get(id(func)), ast.ClassDef):
            return False
        positional = [*func.args.posonlyargs, *func.args.args]
        if not positional or positional[0].arg != name:
            return False
        return not any(_binds(n, name) for n in ast.walk(func) if n is not positional[0])

    def _on_own_class(self, node: ast.Attribute) -> bool:
        """`self.x` in a method (the base is the first parameter of the function it is in, defined in a class body and
        never rebound there), or `C.x` for a class C of the original's module that no enclosing function rebinds."""
        if not isinstance(node.value, ast.Name):
            return False
        name = node.value.id
        if name in self.classes:
            func = self.parents.get(id(node))
            while func is not None:
                if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) \
                        and any(_binds(n, name) for n in ast.walk(func)):
                    return False
                func = self.parents.get(id(func))
            return True
        func = self.parents.get(id(node))
        while func is not None and not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            func = self.parents.get(id(func))
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                or not isinstance(self.parents.get(id(func)), ast.ClassDef):
            return False
        positional = [*func.args.posonlyargs, *func.args.args]
        return bool(positional) and positional[0].arg == node.value.id \
            and not any(_binds(n, node.value.id) for n in ast.walk(func) if n is not positional[0])

    def _own(self, module: str) -> bool:
        """The package's own modules and its third-party dependencies (python-slugify's `text_unidecode`): code
        the agent may import and use as the package does, never the standard library's or the test runner's."""
        root = _root(module)
        return module.startswith(".") or root == self.package or (root not in STDLIB and root not in RUNNER_MODULES)

    def _resolve(self, n: ast.AST):
        """What a Name or attribute chain is, when it starts at an imported standard module; _UNKNOWN for the
        package's own modules and for values; None for a binding that is not allowed at all."""
        if isinstance(n, ast.Name):
            bound = self.bindings.get(n.id)
            if bound is None:
                return _UNKNOWN
            module = bound[1]
            if self._own(module):
                return _UNKNOWN
            base = _standard(module)
            if base is None:
                return None
            if bound[0] == "module":
                return base
            return getattr(base, bound[2], None)
        if isinstance(n, ast.Attribute):
            base = self._resolve(n.value)
            if base is None or base is _UNKNOWN:
                return base
            if not isinstance(base, types.ModuleType):
                return _UNKNOWN
            return getattr(base, n.attr, None)
        return _UNKNOWN

    def _module_attribute(self, n: ast.Attribute) -> None:
        base = self._resolve(n.value)
        if base is None or base is _UNKNOWN or not isinstance(base, types.ModuleType):
            return
        what = f"{base.__name__}.{n.attr}"
        if not isinstance(n.ctx, ast.Load):
            self.add("module_assignment", what, n)
            return
        value = getattr(base, n.attr, _UNKNOWN)
        self._process_name(base.__name__, n.attr, n)
        if n.attr.startswith("_") or value is _UNKNOWN:
            self.add("module_attribute", what, n)
        elif isinstance(value, types.ModuleType) and (_root(value.__name__) not in PURE_MODULES):
            self.add("module_attribute", f"{what} (the module {value.__name__})", n)
        elif any(value is d for d in DANGEROUS):
            self.add("module_attribute", f"{what} (the builtin {getattr(value, '__name__', '?')})", n)
        elif any(value is g for g in FIELD_GETTERS):
            self.add("dynamic_attribute", what, n)

    def _process_name(self, module: str, name: str, node: ast.AST) -> None:
        """A name of a module that reaches the process (PROCESS_MODULES): only those the original uses."""
        if _root(module) in PROCESS_MODULES and name not in self.used:
            self.add("process", f"{module}.{name}", node)

    def _import_from(self, n: ast.ImportFrom) -> None:
        """`from module import name`: a name that is not there fails with a message naming the module's file, a path
        that tells the grader's workspace from any other place; so the name must be known to be there: a standard
        module's attribute or submodule, the original's own top-level name, or an import the original makes."""
        module = "." * n.level + (n.module or "")
        standard = None if self._own(module) else _standard(module)
        for a in n.names:
            if a.name in CLOCK and a.name not in self.clock_ok and not self._own(module):
                # `from time import time as now` reads the clock under another name (red team 6, T6)
                self.add("clock", a.name, n)
            if standard is not None:
                self._process_name(standard.__name__, a.name, n)
                if a.name == "*" or not (hasattr(standard, a.name) or _standard(f"{module}.{a.name}") is not None):
                    self.add("import", f"{module}.{a.name}", n)
            elif self._own(module) and not self.importable(n.level, n.module, a.name):
                self.add("import", f"{module}.{a.name} (not a name the original imports or defines there)", n)

    def _attr_name(self, attr: str, node: ast.AST) -> None:
        if attr == "__dict__" and isinstance(node, ast.Attribute) and self._own_dict(node):
            return  # an instance's own attributes: no more than `self.x`
        if attr in CLOCK and attr not in self.clock_ok:
            self.add("clock", attr, node)
        if _private(attr) and isinstance(node, ast.Attribute) and (
                attr not in self.private_ok
                or (attr in _standard_private_names() and not self._on_own_class(node))):
            # On any base: a value's private attribute is the interpreter's through the standard library
            # (`found = collections; found._sys.modules`, red teams 4 and 5), whatever the base resolves to. A name
            # the original uses that a standard module also has (more-itertools' `self._cache`, `re._cache`) only on
            # a method's own first parameter (red team 6, C6: `found = re; found._cache[...]` poisoned `re`).
            self.add("private_attribute", attr, node)
        if _dunder(attr) and attr not in SAFE_DUNDERS:
            self.add("attribute", attr, node)
        elif attr.startswith(FRAME_PREFIXES) or (attr in STDLIB and _root(attr) not in PURE_MODULES):
            self.add("attribute", attr, node)
        elif attr in _reaching_names() and attr not in self.used and not (
                isinstance(node, ast.Attribute) and (self._on_own_class(node) or self._is_module(node.value)
                                                     and self._resolve(node.value) is not _UNKNOWN)):
            # On a base the check cannot resolve (the package's own module, a value), a name that on some standard
            # module reaches what agent code may not name: an off-list module (`enum.bltns`, the builtins), a builtin
            # that runs or reaches code, a getter, the import system (`functoolz.import_module`, red team 7).
            self.add("attribute", attr, node)

    def _is_module(self, n: ast.AST) -> bool:
        """`n` names a module: a name an `import` binds (the package's own modules too) or a standard attribute chain
        that resolves to one."""
        if isinstance(n, ast.Name):
            if self._shadowed(n):
                return False
            bound = self.bindings.get(n.id)
            if bound is not None and bound[0] == "module":
                return True
        return isinstance(self._resolve(n), types.ModuleType)

    def _shadowed(self, n: ast.Name) -> bool:
        """A function around `n` binds its name itself (cachetools' `time = self.timer()` beside `import time`),
        other than by an import or as a parameter (whose default, `def f(string=string)`, is the module itself)."""
        func = self.parents.get(id(n))
        while func is not None:
            if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and any(
                    _binds(b, n.id) and not isinstance(b, (ast.alias, ast.arg)) for b in _scope_nodes(func)):
                return True
            func = self.parents.get(id(func))
        return False

    def _as_value(self, n: ast.AST, parent: ast.AST | None) -> None:
        """A module is only named (`m.attr`) and a getter only called (`attrgetter("x")`): as a value (`tools =
        operator`, an argument, an element) it becomes a name the check cannot resolve, on which every rule that
        judges what a base *is* is skipped (red team 7, X7: `tools = operator; tools.attrgetter("_sys")(collections)`
        reached `sys`, then the import system)."""
        if not isinstance(n, (ast.Name, ast.Attribute)) or not isinstance(n.ctx, ast.Load):
            return
        if self._is_module(n) and not (isinstance(parent, ast.Attribute) and parent.value is n):
            self.add("module_value", ast.unparse(n), n)
        elif any(self._resolve(n) is f for f in _GETTERS) and not (isinstance(parent, ast.Call) and parent.func is n):
            self.add("getter_value", ast.unparse(n), n)

    def _assigned_attribute(self, n: ast.Attribute) -> None:
        """An attribute set or deleted on what an import binds (a module, the package's own included, or a class or
        function of one), or on a standard value: that is patching code every caller shares (red team 7, P7a:
        `import inflection; inflection.pluralize = wrapper`), not the rebuilt feature's own state."""
        if isinstance(n.ctx, ast.Load):
            return
        base = n.value
        while isinstance(base, ast.Attribute):
            base = base.value
        known = self._resolve(n.value)
        if (isinstance(base, ast.Name) and base.id in self.bindings and not self._shadowed(base)) \
                or (known is not _UNKNOWN and known is not None):
            self.add("module_assignment", ast.unparse(n), n)

    def _visit(self, n: ast.AST, parent: ast.AST | None) -> None:
        if not isinstance(n, SAFE_NODES):
            self.add("syntax", type(n).__name__, n)
        self._as_value(n, parent)
        if isinstance(n, ast.Attribute):
            self._assigned_attribute(n)
        if isinstance(n, ast.Name):
            bound = self.bindings.get(n.id)
            if bound is not None and not self._own(bound[1]) and _standard(bound[1]) is None:
                self.add("module", bound[1], n)
            elif n.id in ATTR_BUILTINS and not (isinstance(parent, ast.Call) and parent.func is n):
                self.add("builtin", n.id, n)
            elif n.id in RISKY_BUILTINS or (_dunder(n.id) and n.id not in SAFE_DUNDERS):
                self.add("builtin", n.id, n)
            elif n.id in OUTPUT and n.id not in self.clock_ok and bound is None and isinstance(n.ctx, ast.Load) \
                    and not self._shadowed(n):
                self.add("output", n.id, n)
            elif bound is not None and bound[0] == "from" and not isinstance(parent, ast.Attribute):
                value = self._resolve(n)
                if isinstance(value, types.ModuleType) and _root(value.__name__) not in PURE_MODULES:
                    self.add("module", value.__name__, n)
                elif any(value is d for d in DANGEROUS):
                    self.add("builtin", n.id, n)
                elif any(value is g for g in FIELD_GETTERS):
                    self.add("dynamic_attribute", n.id, n)
        elif isinstance(n, ast.Attribute):
            self._attr_name(n.attr, n)
            self._module_attribute(n)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ATTR_BUILTINS:
            name = n.args[1] if len(n.args) > 1 else None
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                self._attr_name(name.value, n)
                if _private(name.value) or n.func.id in ("setattr", "delattr"):
                    self.add("builtin", f"{n.func.id}(..., {name.value!r})", n)
            else:
                self.add("dynamic_attribute", n.func.id, n)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("format", "format_map") \
                and not (isinstance(n.func.value, ast.Constant) and isinstance(n.func.value.value, str)) \
                and ast.dump(n.func.value) not in self.formats:
            # a format string made at run time walks the attributes its fields name (`"{0." + name + "}"`), which
            # the check reads only in a string constant (or as the original makes it: toolz's `dedent("...")`)
            self.add("dynamic_attribute", f"{ast.unparse(n.func)[:60]} of a format string made at run time", n)
        elif isinstance(n, ast.Call) and any(self._resolve(n.func) is f for f in _GETTERS):
            # operator.attrgetter and methodcaller reach attributes by name, as getattr does.
            names = n.args[:1] if self._resolve(n.func) is operator.methodcaller else n.args
            for a in names:
                if isinstance(a, ast.Constant) and isinstance(a.value, str):
                    for part in a.value.split("."):
                        self._attr_name(part, n)
                        if _private(part):
                            self.add("attribute", part, n)
                else:
                    self.add("dynamic_attribute", ast.unparse(n.func), n)
        elif isinstance(n, ast.Call) and not n.args and not n.keywords \
                and any(self._resolve(n.func) is f for f in UNSEEDED) and "unseeded" not in self.clock_ok:
            self.add("clock", f"{ast.unparse(n.func)}() seeded from the operating system", n)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "type" and len(n.args) == 3:
            self.add("builtin", "type(name, bases, namespace)", n)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str):
            named = isinstance(parent, ast.Call) and n in parent.args and (
                isinstance(parent.func, ast.Name) and parent.func.id in ATTR_BUILTINS
                or any(self._resolve(parent.func) is f for f in _GETTERS))
            if _dunder(n.value) and not named:
                # A dunder named in a string builds a class (`make_dataclass(..., namespace={"__eq__": ...})`) or
                # reaches an attribute at run time.
                self.add("dunder_string", n.value, n)
            elif any(name not in SAFE_DUNDERS for name in DUNDER_IN_TEXT.findall(n.value)):
                # ... also inside a longer string (`string.Formatter().get_field("0.__globals__", ...)`).
                self.add("dunder_string", n.value[:60], n)
            for attr in _format_attributes(n.value):
                if (_dunder(attr) and attr not in SAFE_DUNDERS) or attr.startswith(FRAME_PREFIXES) or _private(attr):
                    self.add("format_attribute", f"{n.value[:40]!r} reaches {attr}", n)
        elif isinstance(n, ast.Global):
            for name in n.names:
                self.add("global", name, n)
        elif isinstance(n, ast.Import):
            for a in n.names:
                if _root(a.name) not in PURE_MODULES and not self._own(a.name):
                    self.add("import", a.name, n)
        elif isinstance(n, ast.ImportFrom):
            module = "." * n.level + (n.module or "")
            if _root(module) not in PURE_MODULES and not self._own(module):
                self.add("import", module, n)
            self._import_from(n)


def _scope_nodes(func: ast.AST) -> Iterator[ast.AST]:
    """The nodes of `func`'s own scope: its body without the bodies of the functions, lambdas and classes in it
    (their names and defaults are its own) and the variables of its comprehensions (each its own scope)."""
    stack = list(ast.iter_child_nodes(func))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.comprehension):
            stack.extend([node.iter, *node.ifs])
            continue
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(getattr(node, "decorator_list", []))
            if not isinstance(node, ast.ClassDef):
                stack.append(node.args)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _binds(n: ast.AST, name: str) -> bool:
    """`n` binds (or unbinds, or declares shared) `name` in some scope: assignment and deletion targets, loop and
    comprehension variables, `:=`, parameters, `except ... as`, `with ... as`, match captures, imports, `def`/`class`
    names, `global`/`nonlocal`."""
    if isinstance(n, ast.Name):
        return n.id == name and not isinstance(n.ctx, ast.Load)
    if isinstance(n, ast.arg):
        return n.arg == name
    if isinstance(n, ast.alias):
        return (n.asname or _root(n.name)) == name
    if isinstance(n, (ast.Global, ast.Nonlocal)):
        return name in n.names
    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler, ast.MatchAs,
                      ast.MatchStar)):
        return getattr(n, "name", None) == name
    if isinstance(n, ast.MatchMapping):
        return n.rest == name
    return False


def import_bindings(tree: ast.AST) -> dict[str, tuple]:
    """Every name an import statement binds anywhere in `tree`: ("module", dotted name) or ("from", module, name)."""
    bound: dict[str, tuple] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            for a in n.names:
                bound[a.asname or _root(a.name)] = ("module", a.name if a.asname else _root(a.name))
        elif isinstance(n, ast.ImportFrom):
            module = "." * n.level + (n.module or "")
            for a in n.names:
                bound[a.asname or a.name] = ("from", module, a.name)
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


@functools.cache
def _reaching_names() -> frozenset[str]:
    """The public attribute names that, on some standard module in the grader's process, are an off-list module, a
    DANGEROUS builtin, a getter or a function of the import system: computed, not listed."""
    names = set()
    for name, module in list(sys.modules.items()):
        if _root(name) not in STDLIB or not isinstance(module, types.ModuleType):
            continue
        for attr, value in list(vars(module).items()):
            if _private(attr) or _dunder(attr):
                continue
            if isinstance(value, types.ModuleType) and _root(value.__name__) not in PURE_MODULES \
                    and _root(name) in PURE_MODULES or any(value is d for d in (*DANGEROUS, *_GETTERS)) \
                    or callable(value) and getattr(value, "__module__", None) in IMPORT_SYSTEM:
                names.add(attr)
    return frozenset(names)


@functools.cache
def _standard_private_names() -> frozenset[str]:
    """Every private name an attribute of a standard module has in the grader's process (`collections._sys`,
    `importlib._bootstrap`): computed, not listed, so that an agent's helper named like one grants nothing."""
    names = set()
    for name, module in list(sys.modules.items()):
        if _root(name) in STDLIB and isinstance(module, types.ModuleType):
            names.update(n for n in vars(module) if _private(n))
    return frozenset(names)


def private_names(gold: list[ast.Module], agent: ast.Module) -> frozenset[str]:
    """The private attribute names agent code may use: those the original's files use or define (`self._data`,
    cachetools' `self.__data`, toolz's `self._sigspec`), and those of the helper functions and methods the agent
    defines itself, unless a standard module has an attribute of that name."""
    used = {n.attr for tree in gold for n in ast.walk(tree) if isinstance(n, ast.Attribute) and _private(n.attr)}
    used |= {n.name for tree in gold for n in ast.walk(tree)
             if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and _private(n.name)}
    own = {n.name for n in ast.walk(agent) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
           and _private(n.name)} - _standard_private_names()
    return frozenset(used | own)


def clock_names(gold: list[ast.Module]) -> frozenset[str]:
    """The names of CLOCK the original's files use, as attributes or imported names, those of OUTPUT they name, and
    "unseeded" where they call `Random()` or `seed()` without a seed."""
    used = {n.attr for tree in gold for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    used |= {a.asname or a.name for tree in gold for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
             for a in n.names}
    used |= {n.id for tree in gold for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in OUTPUT}
    unseeded = any(isinstance(n, ast.Call) and not n.args and not n.keywords
                   and (getattr(n.func, "attr", None) or getattr(n.func, "id", None)) in ("Random", "seed")
                   for tree in gold for n in ast.walk(tree))
    return frozenset(used & (CLOCK | OUTPUT)) | ({"unseeded"} if unseeded else set())


def _import_time(stmt: ast.stmt, annotations: bool = True) -> Iterator[ast.AST]:
    """What of a module- or class-level statement runs when its module is imported: a definition's decorators, its
    defaults (and its annotations, unless the file postpones them), a class's bases, keywords and body; any other
    statement whole."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        args = stmt.args
        yield from stmt.decorator_list
        yield from args.defaults
        yield from (d for d in args.kw_defaults if d is not None)
        if annotations:
            params = (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
            yield from (a.annotation for a in params if a is not None and a.annotation is not None)
            yield from [stmt.returns] if stmt.returns is not None else []
    elif isinstance(stmt, ast.ClassDef):
        yield from (*stmt.decorator_list, *stmt.bases, *(k.value for k in stmt.keywords))
        for child in stmt.body:
            yield from _import_time(child, annotations)
    elif not isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Pass)):
        yield stmt


def _calls(node: ast.AST) -> bool:
    """`node` calls something when it runs (a lambda's body runs later, its defaults now)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Call):
            return True
        if isinstance(n, ast.Lambda):
            stack.extend([*n.args.defaults, *(d for d in n.args.kw_defaults if d is not None)])
            continue
        stack.extend(ast.iter_child_nodes(n))
    return False


# Decorators that hold no state and run no code of the agent's, allowed on what it writes wherever the original's
# files use them or not.
PLAIN_DECORATORS = frozenset({"property", "staticmethod", "classmethod"})


def _plain_decorator(node: ast.AST) -> bool:
    return (isinstance(node, ast.Name) and node.id in PLAIN_DECORATORS) or (
        isinstance(node, ast.Attribute) and node.attr in ("setter", "getter", "deleter")
        and isinstance(node.value, ast.Name))


def _bare(args: ast.arguments) -> ast.arguments:
    """The parameters without their annotations: those are the agent's to write or leave out."""
    bare = copy.deepcopy(args)
    for arg in (*bare.posonlyargs, *bare.args, *bare.kwonlyargs, bare.vararg, bare.kwarg):
        if arg is not None:
            arg.annotation = arg.type_comment = None
    return bare


def _parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """A definition's parameters as callers see them (names, kinds, defaults): code that calls a rebuilt function by
    keyword (`ordinal(number=3)`) breaks where they differ, and no replayed program need ask that (red team 4, U4)."""
    return ast.dump(_bare(fn.args), include_attributes=False)


def _first_line(node: ast.AST) -> int:
    return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


class FileScope:
    """Checks one changed file against its gold version."""

    def __init__(self, rel: str, gold: ast.Module, targets: dict[str, str], errors: list[Invalid], package: str,
                 module: str):
        self.rel, self.gold, self.errors, self.package = rel, gold, errors, package
        self.module = module  # this file's dotted module name
        self.gold_imports: frozenset[tuple] = frozenset()
        self.formats: frozenset[str] = frozenset()
        self.postponed = False  # the gold file imports `annotations` from `__future__`
        self.gold_import_time: frozenset[str] = frozenset()  # what the original's definitions run at import
        self.targets = targets  # qualname -> kind ("function" | "method" | "class")
        self.gold_defs = dict(_def_paths(gold))
        self.bindings: dict[str, tuple] = import_bindings(gold)
        self.spans: list[list[int]] = []  # lines the agent wrote: its definitions and helpers
        self.private_ok: frozenset[str] = frozenset()
        self.clock_ok: frozenset[str] = frozenset()
        self.used: frozenset[str] = frozenset()

    def fail(self, code: str, message: str, node: ast.AST | None = None) -> None:
        self.errors.append(Invalid(code=code, message=message, file=self.rel, line=getattr(node, "lineno", None)))

    def check(self, agent: ast.Module, gold_files: list[ast.Module] = ()) -> None:
        self.bindings = import_bindings(self.gold) | import_bindings(agent)
        self.private_ok = private_names([self.gold, *gold_files], agent)
        self.clock_ok = clock_names([self.gold, *gold_files])
        self.gold_imports = frozenset((n.level, n.module, a.name) for tree in [self.gold, *gold_files]
                                      for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names)
        self.used = frozenset(n.attr for tree in [self.gold, *gold_files] for n in ast.walk(tree)
                              if isinstance(n, ast.Attribute)) | {name for _, _, name in self.gold_imports}
        self.formats = frozenset(ast.dump(n.func.value) for tree in [self.gold, *gold_files] for n in ast.walk(tree)
                                 if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                                 and n.func.attr in ("format", "format_map"))
        self.postponed = any(isinstance(n, ast.ImportFrom) and n.module == "__future__"
                             and any(a.name == "annotations" for a in n.names) for n in self.gold.body)
        self.gold_import_time = frozenset(ast.dump(e) for tree in [self.gold, *gold_files] for n in ast.walk(tree)
                                          if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                                          for e in _import_time(n))
        self.body(agent.body, self.gold.body, "")

    def importable(self, level: int, module: str | None, name: str) -> bool:
        """`from module import name` (`level` dots) in this file is known to succeed: the original's files import the
        same, or it names a top-level name of this very module."""
        if (level, module, name) in self.gold_imports:
            return True
        parts = self.module.split(".")
        if level:
            package = parts if self.rel.endswith("__init__.py") else parts[:-1]
            if level - 1 > len(package) - 1:
                return False
            parts = package[:len(package) - (level - 1)] + (module.split(".") if module else [])
        else:
            parts = (module or "").split(".")
        return parts == self.module.split(".") and name in _bound_names(self.gold.body)

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
                self.spans.append([_first_line(stmt), stmt.end_lineno or stmt.lineno])
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
        if isinstance(gold, type(agent)):
            pairs = [(path, agent, gold)]
            if isinstance(agent, ast.ClassDef):
                mine = {s.name: s for s in agent.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
                pairs = [(f"{path}.{g.name}", mine[g.name], g) for g in gold.body
                         if isinstance(g, (ast.FunctionDef, ast.AsyncFunctionDef)) and g.name in mine]
            for where, a, g in pairs:
                if isinstance(a, ast.ClassDef) or _parameters(a) == _parameters(g):
                    continue
                self.fail("signature", f"{where} must keep the original's parameters (names, kinds and defaults): "
                          f"({ast.unparse(_bare(g.args))})", a)
        self.code(agent, path)

    def import_time(self, node: ast.stmt, path: str) -> None:
        """What the agent's statement runs at import calls nothing the original's definitions do not call there, and
        a decorator is the original's or a plain one: code run at import keeps what it learns or makes where no
        replay reads it as changed (red team 9, P9: where the file lies; red team 11, B11: a call counter in a
        `zlib.decompressobj()` made at import, which no walk can read)."""
        decorators = {id(d) for n in ast.walk(node) for d in getattr(n, "decorator_list", [])}  # a class's methods' too
        for expr in _import_time(node, not self.postponed):
            if ast.dump(expr) in self.gold_import_time or (id(expr) in decorators and _plain_decorator(expr)):
                continue
            if id(expr) in decorators or _calls(expr):
                self.fail("import_time", f"{path}: `{ast.unparse(expr)[:100]}` runs when the module is imported, "
                          "which the original's code does not: compute it where it is used", expr)

    def code(self, node: ast.AST, path: str) -> None:
        """Code the agent wrote: only allowed constructs, and no dunder method or class the gold lacks there."""
        self.spans.append([_first_line(node), node.end_lineno or node.lineno])
        for sub, child in _def_paths(node, path + "."):
            if (isinstance(child, ast.ClassDef) or _dunder(child.name)) and sub not in self.gold_defs:
                self.fail("definition_out_of_scope",
                          f"{sub} is a {'class' if isinstance(child, ast.ClassDef) else 'dunder method'} "
                          "that the original does not define there", child)
        self.import_time(node, path)
        member = isinstance(self.gold_defs.get(path.rpartition(".")[0]), ast.ClassDef)
        classes = frozenset(c.name for c in self.gold.body if isinstance(c, ast.ClassDef))
        features = Features(self.bindings, self.package, self.private_ok, self.clock_ok, classes,
                            self.used, self.importable, self.formats).scan(node, member)
        for (kind, what), line in features.found.items():
            self.errors.append(Invalid(code=f"construct.{kind}", file=self.rel, line=line, message=(
                f"{path} uses {kind.replace('_', ' ')} `{what}`, which is not on the allow-list of code an agent "
                "writes: " + ("a library prints only where the original does (its output is its users')"
                              if kind == "output" else "reflection, runtime patching, dynamic code and the "
                              "interpreter's internals are not allowed"))))


# CPython 3.11's AST constructor tracks its recursion depth in per-interpreter state, not per thread: two threads
# parsing at once can fail with "SystemError: AST constructor recursion depth mismatch" (seen when verifiers
# scored concurrent rollouts in threads). Parses here take turns.
_PARSE_LOCK = threading.Lock()


def _parse(source: str, filename: str = "<unknown>") -> ast.Module:
    with _PARSE_LOCK:
        return ast.parse(source, filename=filename)


def check_scope(row: TaskRow, changes: dict[str, bytes | None]) -> list[Invalid]:
    """Why the agent's source changes are out of scope (empty: in scope)."""
    return read_scope(row, changes)[0]


def agent_lines(row: TaskRow, changes: dict[str, bytes | None]) -> dict[str, list[list[int]]]:
    """{file: [[first, last], ...]}: the lines of each changed file that the agent wrote (the deleted definitions
    it rebuilt and the helpers it added), as the scope check reads them."""
    return read_scope(row, changes)[1]


def package_of(row: TaskRow) -> str:
    """The top-level package (or module) the task's files belong to, as they are imported."""
    rel = next(iter(row.gold_files))
    parts = (rel[len(row.import_root):].lstrip("/") if row.import_root else rel).split("/")
    return parts[0].removesuffix(".py")


def read_scope(row: TaskRow, changes: dict[str, bytes | None]) -> tuple[list[Invalid], dict[str, list[list[int]]]]:
    """(`check_scope`, `agent_lines`) from one reading, for a caller that needs both (a grading)."""
    errors: list[Invalid] = []
    spans: dict[str, list[list[int]]] = {}
    package = package_of(row)
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
        dotted = (rel[len(row.import_root):].lstrip("/") if row.import_root else rel).removesuffix(".py")
        scope = FileScope(rel, _parse(row.gold_files[rel]), by_file.get(rel, {}), errors, package,
                          dotted.replace("/", ".").removesuffix(".__init__"))
        scope.check(agent, [_parse(text) for other, text in sorted(row.gold_files.items()) if other != rel])
        if scope.spans:
            spans[rel] = scope.spans
    return errors, spans
