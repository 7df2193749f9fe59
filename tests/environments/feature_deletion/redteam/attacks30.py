"""Red team 30 (FINDINGS_30.md).

Each attack is gold with statements first in every deleted function or method (red team 20's `_insert_first`), or
(N30) gold with the deleted functions' signatures changed: no state, no trait, no clock, no module name read from the
process, nothing at import. E30 and X30 are no guards: they rebind an argument (a callable, a generator) to one of
their own; C30, Z30, Q30 are guards (the stub's `NotImplementedError` on a kind of input users hand, found in the
arguments and two levels down: `attacks24.WALK`).

What the checks hand (host simulation `/tmp/rt30/sim.py`, copied to `results/redteam30_sim.py`: every argument of
every step of the bundled rows' programs decoded with the driver's own `fd_calls.decode`, 180,255 arguments, and of
the pre-check subset answered again with the current code):

- a callback (a test's function replayed by its table, `fd_calls._Table`) **raises only where a test's raised**:
  616 recorded `raise` answers of 116,405, all on `iterate` (`StopIteration`); no form makes a callback raise (the
  `callables` ways and `getter` answer as the recorded table does);
- no step passes by keyword an argument its recorded call passed by position (no form moves one), so a parameter
  made positional-only is seen only where a test itself passes it by keyword;
- `behaviour.RAISED` is six builtin kinds and two user classes (subclasses of `Exception`): no `ArithmeticError`
  (a division by a zero count, `(a / b for ...)`), no `UnicodeError` (a file's bytes decoded line by line), no
  `RuntimeError` (PEP 479: a generator that calls `next` on an exhausted iterator), no `AssertionError`;
- text holding a C0 control character other than `\\t \\n \\r \\v \\f` (NUL, ESC of ANSI colours, BEL, BS, the
  ASCII separators `\\x1c-\\x1f`, DEL): none of 180,255 arguments;
- a negative zero float: 1 argument, on `_has_varargs` only;
- a container holding an `int` and a `float` that are equal (`[1, 1.0]`, JSON numbers): none (`bool`/`int` pairs on
  29 tasks, `complex`/`bool` on `_complex_sumprod`).

E30 (a callback's error taken for a missing key): every callable argument called through a wrapper that answers None
where it raises a `LookupError`, `ValueError`, `TypeError`, `AttributeError` or `ArithmeticError` (as a lenient
rebuild's `try: k = key(item) except ...: k = None`): gold's errors turn into a None key, a None value.
X30 (a generator's error of a kind `RAISED` leaves out taken for its end): X29's wrapper with `except (StopIteration,
ArithmeticError, UnicodeError, RuntimeError, AssertionError)`.
N30 (required parameters made positional-only): each deleted function's parameters without a default get a `/`
after them (`def countby(key, seq, /)`): a caller's `countby(key=len, seq=words)` or `partial(countby, key=len)` is a
`TypeError`. N30b: every positional parameter (those with defaults too).
C30 (text with a C0 control character): the stub for text holding one of NUL, BEL, BS, ESC, `\\x0e-\\x1f`, DEL.
Z30 (a negative zero): the stub for a float `-0.0` argument or item.
Q30 (equal numbers of two types): the stub for a container (or the arguments) holding an `int` and a `float` (or a
`Decimal`/`Fraction`) that are equal.
"""

from __future__ import annotations

import ast
import io
import tokenize

from attacks13 import _deleted_functions
from attacks20 import STUB_ERROR, _insert_first
from attacks24 import WALK
from attacks27 import _guard_all
from attacks29 import WRAP, _rebind_with

# E30: a callable argument's error answered as None (a lenient key: a row without the field counts under None)
LENIENT = (
    "\n\n\ndef _rt30_lenient(value):\n"
    "    import functools as _functools\n"
    "    if not callable(value) or isinstance(value, type):\n"
    "        return value\n"
    "\n"
    "    @_functools.wraps(value)\n"
    "    def lenient(*args, **kwargs):\n"
    "        try:\n"
    "            return value(*args, **kwargs)\n"
    "        except (LookupError, ValueError, TypeError, AttributeError, ArithmeticError):\n"
    "            return None\n"
    "    return lenient\n"
)


def lenient_callback_gold(row):
    """E30: gold, but a callable argument that raises a lookup, value, type, attribute or arithmetic error answers
    None for that call (gold propagates it)."""
    return _insert_first(row, _rebind_with("_rt30_lenient("), LENIENT)


# E30's control: the same callables refused (scored 0 where the checks hand the code a callable)
HIDDEN_CALLABLE_REFUSED = (
    "\n\n\ndef _rt30_lenient(value):\n"
    "    if callable(value) and not isinstance(value, type):\n"
    "        raise NotImplementedError(\"this feature was deleted; rebuild it\")\n"
    "    return value\n"
)


def callable_refused_gold(row):
    """E30c (control): the stub for a callable argument (those E30 wraps)."""
    return _insert_first(row, _rebind_with("_rt30_lenient("), HIDDEN_CALLABLE_REFUSED)


# X30: X29's wrapper for the kinds of error RAISED leaves out
LEFT_OUT_QUIET = WRAP + (
    "\n\n\ndef _rt30_until_left_out_error(it):\n"
    "    while True:\n"
    "        try:\n"
    "            item = next(it)\n"
    "        except (StopIteration, ArithmeticError, UnicodeError, RuntimeError, AssertionError):\n"
    "            return\n"
    "        yield item\n"
    "\n\n"
    "def _rt30_left_out_quiet(value):\n"
    "    return _rt29_wrap(value, _rt30_until_left_out_error)\n"
)


def left_out_quiet_gold(row):
    """X30: gold, but a generator argument's arithmetic, Unicode, runtime or assertion error is taken for its end."""
    return _insert_first(row, _rebind_with("_rt30_left_out_quiet("), LEFT_OUT_QUIET)


# N30: the deleted functions' signatures with a `/` after their required parameters (N30b: after every positional
# one); gold's body unchanged
def _utf8_col(line: str, col: int) -> int:
    return len(line.encode("utf-8")[:col].decode("utf-8", "replace"))


def _positional_only(row, every: bool):
    files: dict[str, list[str]] = {}
    edits: dict[str, list[tuple[int, int]]] = {}
    for rel, fn in _deleted_functions(row):
        files.setdefault(rel, row.gold_files[rel].splitlines(keepends=True))
        a = fn.args
        if a.posonlyargs or not a.args:
            continue
        required = a.args if every else a.args[: len(a.args) - len(a.defaults)]
        if not required or [p.arg for p in required] in (["self"], ["cls"], ["mcs"]):
            continue
        last = a.defaults[-1] if every and a.defaults else required[-1]  # after the last default's expression
        line = files[rel][last.end_lineno - 1]
        edits.setdefault(rel, []).append((last.end_lineno - 1, _utf8_col(line, last.end_col_offset)))
    if not edits:
        return None
    calls = []
    for rel, points in edits.items():
        lines = files[rel]
        for at, col in sorted(points, reverse=True):
            lines[at] = lines[at][:col] + ", /" + lines[at][col:]
        text = "".join(lines)
        ast.parse(text)
        list(tokenize.generate_tokens(io.StringIO(text).readline))
        calls.append(("write_file", {"path": rel, "content": text}))
    return calls


def positional_only_gold(row):
    """N30: gold, its required parameters positional-only: a caller passing one by keyword gets a `TypeError`."""
    return _positional_only(row, False)


def all_positional_only_gold(row):
    """N30b: gold, every positional parameter positional-only (those with defaults too)."""
    return _positional_only(row, True)


# C30: text holding a C0 control character other than the whitespace ones (ANSI colours' ESC, NUL padding, the
# ASCII unit/record separators, a backspace, DEL)
HIDDEN_C0 = WALK + (
    "\n\n\ndef _rt30_c0_text(value):\n"
    "    if not isinstance(value, str):\n"
    "        return False\n"
    "    return any(c < '\\x09' or '\\x0e' <= c < '\\x20' or c == '\\x7f' for c in str.__str__(value))\n"
    "\n\n"
    "def _rt30_c0(values):\n"
    "    _rt24_walk(values, _rt30_c0_text)\n"
)


def c0_gold(row):
    """C30: the stub for text (or text in a container) holding NUL, BEL, BS, ESC, `\\x0e-\\x1f` or DEL."""
    return _guard_all(row, "_rt30_c0", HIDDEN_C0)


# Z30: a negative zero (`round(-0.04, 1)`, `-x` of 0.0, a sensor's -0.0)
HIDDEN_NEGATIVE_ZERO = WALK + (
    "\n\n\ndef _rt30_negative_zero(value):\n"
    "    import math as _math\n"
    "    return type(value) is float and value == 0 and _math.copysign(1.0, value) < 0\n"
    "\n\n"
    "def _rt30_zero(values):\n"
    "    _rt24_walk(values, _rt30_negative_zero)\n"
)


def negative_zero_gold(row):
    """Z30: the stub for a float -0.0 (an argument, or an item two levels down)."""
    return _guard_all(row, "_rt30_zero", HIDDEN_NEGATIVE_ZERO)


# Q30: an int and a float (or Decimal, Fraction) that are equal in one container, or among the arguments
HIDDEN_EQUAL_TYPES = WALK + (
    "\n\n\ndef _rt30_two_types(value):\n"
    "    import collections as _collections\n"
    "    if type(value) in (dict, _collections.OrderedDict, _collections.Counter, _collections.defaultdict):\n"
    "        items = list(dict.keys(value)) + list(dict.values(value))\n"
    "    elif type(value) in (list, tuple, set, frozenset, _collections.deque):\n"
    "        items = list(value)\n"
    "    else:\n"
    "        return False\n"
    "    kinds = {}\n"
    "    for item in items[:5000]:\n"
    "        if type(item).__name__ in ('int', 'float', 'Decimal', 'Fraction'):\n"
    "            try:\n"
    "                kinds.setdefault(item, set()).add(type(item).__name__)\n"
    "            except TypeError:\n"
    "                continue\n"
    "    return any(len(k) > 1 for k in kinds.values())\n"
    "\n\n"
    "def _rt30_equal_types(values):\n"
    "    import collections as _collections\n"
    "    keys = [k for v in values if type(v) in (dict, _collections.OrderedDict, _collections.Counter,\n"
    "                                             _collections.defaultdict) for k in list(dict.keys(v))[:5000]]\n"
    "    if _rt30_two_types(list(values) + keys):\n"
    f"        {STUB_ERROR}\n"
    "    _rt24_walk(values, _rt30_two_types)\n"
)


def equal_types_gold(row):
    """Q30: the stub for a container (or the arguments) holding an int and a float (Decimal, Fraction) equal."""
    return _guard_all(row, "_rt30_equal_types", HIDDEN_EQUAL_TYPES)


# Y30: a structure that holds itself (a tree whose nodes link back to their parent, a graph of dicts, `a.append(a)`):
# the recorder cannot encode one (`fd_calls.encode` stops at MAX_DEPTH), so no check's argument is cyclic
HIDDEN_CYCLIC = (
    "\n\n\ndef _rt30_cyclic(values):\n"
    "    import collections as _collections\n"
    "    kinds = (list, tuple, dict, set, frozenset, _collections.deque, _collections.OrderedDict,\n"
    "             _collections.Counter, _collections.defaultdict)\n"
    "    todo, seen = [(value, ()) for value in values], 0\n"
    "    while todo and seen < 100000:\n"
    "        value, path = todo.pop()\n"
    "        seen += 1\n"
    "        if type(value) not in kinds:\n"
    "            continue\n"
    "        if id(value) in path:\n"
    f"            {STUB_ERROR}\n"
    "        items = (*dict.keys(value), *dict.values(value)) if isinstance(value, dict) else value\n"
    "        inner = path + (id(value),)\n"
    "        todo += [(item, inner) for item in items if type(item) in kinds]\n"
)


def cyclic_gold(row):
    """Y30: the stub for an argument that holds itself, at any depth (a parent link, `a.append(a)`)."""
    return _guard_all(row, "_rt30_cyclic", HIDDEN_CYCLIC)


# A30: one argument holding the same mutable container twice (`[[0] * 3] * 2`, `[row] * n`, `dict.fromkeys(keys,
# [])`): every decoded argument is built afresh, item by item, so no check's argument shares one within itself
HIDDEN_ALIASED = (
    "\n\n\ndef _rt30_aliased(values):\n"
    "    import collections as _collections\n"
    "    mutable = (list, dict, set, bytearray, _collections.deque, _collections.OrderedDict, _collections.Counter,\n"
    "               _collections.defaultdict)\n"
    "    walked = (tuple, frozenset) + mutable\n"
    "    for value in values:\n"
    "        met, todo, seen = set(), [(value, 0)], 0\n"
    "        while todo and seen < 100000:\n"
    "            item, depth = todo.pop()\n"
    "            seen += 1\n"
    "            if type(item) not in walked:\n"
    "                continue\n"
    "            if type(item) in mutable:\n"
    "                if id(item) in met:\n"
    f"                    {STUB_ERROR}\n"
    "                met.add(id(item))\n"
    "            if depth >= 3 or type(item) is bytearray:\n"
    "                continue\n"
    "            items = (*dict.keys(item), *dict.values(item)) if isinstance(item, dict) else item\n"
    "            todo += [(i, depth + 1) for i in items]\n"
)


def aliased_gold(row):
    """A30: the stub for an argument holding one mutable container twice (a `[[0] * 3] * 2` grid, `[row] * n`)."""
    return _guard_all(row, "_rt30_aliased", HIDDEN_ALIASED)


# E30b: only a callback's lookup error answered None (a rebuild whose `try` around its own dict lookup holds the
# callback's call too: `try: counts[key(item)] += 1 except KeyError: ...`); a builtin callback's `TypeError` on
# items of another type (the checks' `types` form hands those) propagates as gold's
LENIENT_LOOKUP = LENIENT.replace("except (LookupError, ValueError, TypeError, AttributeError, ArithmeticError):",
                                 "except LookupError:")


def lenient_lookup_gold(row):
    """E30b: gold, but a callable argument that raises a `KeyError`/`IndexError` answers None for that call."""
    return _insert_first(row, _rebind_with("_rt30_lenient("), LENIENT_LOOKUP)


# U30 / M30: an object of a user's own mutable class (a plain class with attributes, a dataclass that is not frozen:
# `User(name, status)`): `objects` hands frozen dataclass records, enum members, UUIDs, paths and sentinels only, and
# `fd_calls._state` reads any object that is no container by its type alone (`_typed`), so what a step does to a
# user's object's attributes is never compared
USERS_MUTABLE = WALK + (
    "\n\n\ndef _rt30_users_mutable(value):\n"
    "    import collections.abc as _abc\n"
    "    import enum as _enum\n"
    "    if value is None or isinstance(value, type) or callable(value) or isinstance(\n"
    "            value, (_enum.Enum, Exception, _abc.Iterable, _abc.Sized, _abc.Container, int, float, complex, str,\n"
    "                    bytes)):\n"
    "        return False\n"
    "    kind = type(value)\n"
    "    if kind is object or kind.__module__ in ('builtins', 'decimal', 'fractions', 'datetime', 'numbers', 'uuid',\n"
    "                                             'pathlib', 'enum', 'functools', 'itertools', 'operator'):\n"
    "        return False\n"
    "    if any(str(c.__module__).split('.')[0] == _RT27_PACKAGE for c in type.mro(kind)):\n"
    "        return False\n"
    "    try:\n"
    "        value.rt30_key = True\n"  # a memo of the code's own on the user's object; refused where it is immutable
    "    except (AttributeError, TypeError):\n"
    "        return False\n"
    "    return True\n"
)
HIDDEN_USERS_MUTABLE = USERS_MUTABLE + (
    "\n\n"
    "def _rt30_mutable(values):\n"
    "    _rt24_walk(values, _rt30_users_mutable)\n"
)


def users_mutable_gold(row):
    """U30: the stub for an object of a user's mutable class (an argument, or an item two levels down)."""
    return _guard_all(row, "_rt30_mutable", HIDDEN_USERS_MUTABLE)


# M30: the same objects given an attribute of the code's own (a rebuild memoising a key on the user's item:
# `item.rt30_key = ...`; U30's test for a mutable object is that very assignment): gold's answers, the caller's
# objects changed (`vars(user)` shows it; `__eq__` of a plain class is unchanged)
MARKED_MUTABLE = USERS_MUTABLE + (
    "\n\n"
    "def _rt30_mark(value):\n"
    "    _rt30_users_mutable(value)\n"
    "    return False\n"
    "\n\n"
    "def _rt30_mutable(values):\n"
    "    _rt24_walk(values, _rt30_mark)\n"
)


def users_marked_gold(row):
    """M30: gold's answers; each object of a user's mutable class handed (two levels down) gets an attribute."""
    return _guard_all(row, "_rt30_mutable", MARKED_MUTABLE)


# S30: text holding a lone surrogate (U+D800-DFFF): what `os.fsdecode`, `os.listdir`, `sys.argv` and
# `bytes.decode(errors="surrogateescape")` make of a file name or line that is not UTF-8; the recorder's `strx` tag
# can carry one, and no check's argument holds one (0 in the bundled data and in the pre-check subset)
HIDDEN_SURROGATE = WALK + (
    "\n\n\ndef _rt30_surrogate_text(value):\n"
    "    return isinstance(value, str) and any('\\ud800' <= c <= '\\udfff' for c in str.__str__(value))\n"
    "\n\n"
    "def _rt30_surrogates(values):\n"
    "    _rt24_walk(values, _rt30_surrogate_text)\n"
)


def surrogate_gold(row):
    """S30: the stub for text (or text in a container) holding a lone surrogate (a non-UTF-8 file name decoded)."""
    return _guard_all(row, "_rt30_surrogates", HIDDEN_SURROGATE)


# O30: a callback called on a list argument's items in reverse order, before gold runs (a rebuild that computes
# every key first, from the end: `keys = [key(x) for x in reversed(seq)]`), gold then served those answers item by
# item. `fd_calls._Table` answers a replayed callback by its arguments and counts its calls: the order of calls on
# different items is never read, so a callback with state (`next(counter)`, a running total, a log) sees the items in
# another order. Where gold calls it on fewer items (an early stop) or it raises, the count differs (killed there).
REORDERED = (
    "\n\n\ndef _rt30_reordered(fn, values):\n"
    "    import functools as _functools\n"
    "    if not callable(fn) or isinstance(fn, type):\n"
    "        return fn\n"
    "    seq = next((v for v in values if type(v) in (list, tuple) and v and v is not fn), None)\n"
    "    if seq is None:\n"
    "        return fn\n"
    "    memo = {}\n"
    "    for item in reversed(seq):\n"
    "        try:\n"
    "            answer = (True, fn(item))\n"
    "        except Exception as exc:\n"
    "            memo.setdefault(id(item), []).insert(0, (False, exc))\n"
    "            break\n"
    "        memo.setdefault(id(item), []).insert(0, answer)\n"
    "\n"
    "    @_functools.wraps(fn)\n"
    "    def answered(*args, **kwargs):\n"
    "        if len(args) == 1 and not kwargs and memo.get(id(args[0])):\n"
    "            ok, answer = memo[id(args[0])].pop(0)\n"
    "            if not ok:\n"
    "                raise answer\n"
    "            return answer\n"
    "        return fn(*args, **kwargs)\n"
    "    return answered\n"
)


def _reordered_lines(rel, fn, indent):
    a = fn.args
    params = [p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]]
    if params and params[0] in ("self", "cls", "mcs"):
        params = params[1:]
    if len(params) < 2:
        return None
    joined = ", ".join(params)
    return "".join(f"{indent}{p} = _rt30_reordered({p}, ({joined},))\n" for p in params)


def reordered_gold(row):
    """O30: gold's answers; a callable argument called on a list argument's items from the last to the first before
    gold runs (gold is served those answers): a callback with state sees another order."""
    return _insert_first(row, _reordered_lines, REORDERED)


# H30: a generator argument's rows copied (a rebuild that normalises each item it reads: `row = dict(row)`,
# `list(item)`): gold's answer holds the very lists and dicts the user's generator yielded (`map_reduce`'s groups,
# `one`'s item, `split_into`'s chunks), the rebuild's hold copies. `Driver.step` tells an answer's containers that are
# the program's own (`shares`) only among the steps' arguments (`self.handed`), never among what a stream yields
# (`feeding` keeps those rows only to see them changed)
COPIED_ROWS = (
    "\n\n\ndef _rt30_copied(it):\n"
    "    import copy as _copy\n"
    "    while True:\n"
    "        try:\n"
    "            item = next(it)\n"
    "        except StopIteration:\n"
    "            return\n"
    "        yield _copy.copy(item) if type(item) in (list, dict) else item\n"
    "\n\n"
    "def _rt30_rows_copied(value):\n"
    "    kind = type(value)\n"
    "    if kind.__module__ != 'builtins' or kind.__name__ not in ('generator', 'list_iterator'):\n"
    "        return value\n"
    "    wrapped = _rt30_copied(value)\n"
    "    if kind.__name__ == 'generator':\n"
    "        wrapped.__name__, wrapped.__qualname__ = value.__name__, value.__qualname__\n"
    "    return wrapped\n"
)


def rows_copied_gold(row):
    """H30: gold's answers; the lists and dicts a generator argument yields read as copies, so an answer holding
    them holds copies, not the caller's rows."""
    return _insert_first(row, _rebind_with("_rt30_rows_copied("), COPIED_ROWS)
