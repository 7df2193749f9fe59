"""Red team 27 (FINDINGS_27.md).

Each attack is gold with one statement first in every deleted function or method (red team 20's `_insert_first`):
no state, no trait, no clock, no module name read from the process, nothing at import. I27 is guard-style (the
stub's `NotImplementedError` for a natural class of argument that no check hands, red team 24's container walk
`attacks24.WALK`); M27 and L27 are not guards: they answer as gold does, and change the caller's argument in place
(pop its last item) where no check reads it after the call.

What the checks hand and read (host simulation `/tmp/rt27/sim.py`, copied to `results/redteam27_sim.py`: every call
argument of the bundled rows' programs decoded with the driver's own `fd_calls.decode`; and the driver,
`fd_calls.Driver.step`):

- **iterators**: a test's iterator is recorded as a stream (`fd_calls._Stream`) and every replay hands it back as
  one of two kinds (`_Feed.handed`: a module-level generator expression, or `iter()` of a list), as `_grown` does a
  large stream. No check hands a `map`, `filter`, `zip`, `enumerate`, `reversed`, a dict's or tuple's or range's or
  text's iterator, an `itertools` object, a file's lines, a `csv.reader`: the iterators users hand most;
- **a changed argument**: `Driver.step` snapshots an argument before and after the call only where its type is one
  of `CONTAINERS` exactly (list, tuple, dict, set, bytearray, deque, OrderedDict, Counter, defaultdict), and by
  `encode(x, _typed)`, which raises `Unrecordable` for a container of more than `MAX_ITEMS` (5,000) items: both
  snapshots then read "Unrecordable". So an argument of a user's container class (`behaviour.subclasses`' list or
  dict subclasses, `UserList`/`UserDict`, an `array.array`), at any size, and a builtin container of more than
  5,001 items (`behaviour.sizes` hands them, up to 40,000), can be changed in place and no check sees it.

I27 (iterators users hand): an argument, or an item two levels down, that is an iterator (`collections.abc.Iterator`)
of a kind other than a generator or a list iterator, and of no class of the package.
M27 (a user's container changed in place): gold run on a copy of each argument that is a list or dict of a
user's subclass, a `UserList`/`UserDict` or an `array.array` (not of the package); the caller's own loses its last
item (`pop`/`popitem`), as a rebuild that consumes its input does.
L27 (a large container changed in place): the same for a builtin list, dict or deque of more than 5,001 items.
(Sets are left alone: a set's copy may iterate in another order than the set, so gold on the copy answers
otherwise: `map_reduce` of a large set, Tried.)
"""

from __future__ import annotations

from attacks20 import STUB_ERROR, _insert_first, _parts
from attacks24 import WALK
from feature_deletion.behaviour import targets_of

PACKAGE_OF = (
    "\n\n\ndef _rt27_of_package(kind):\n"
    "    return any(str(c.__module__).split('.')[0] == _RT27_PACKAGE for c in type.mro(kind))\n"
)

HIDDEN_ITERATORS = WALK + PACKAGE_OF + (
    "\n\n\ndef _rt27_user_iterator(value):\n"
    "    import collections.abc as _abc\n"
    "    if not isinstance(value, _abc.Iterator):\n"
    "        return False\n"
    "    kind = type(value)\n"
    "    return kind.__name__ not in ('generator', 'list_iterator') and not _rt27_of_package(kind)\n"
    "\n\n"
    "def _rt27_iterators(values):\n"
    "    _rt24_walk(values, _rt27_user_iterator)\n"
)


def _package(row) -> str:
    return targets_of(row)[0][0].split(".")[0]


def _guard_all(row, call_name: str, hidden: str):
    def statement(rel, fn, indent):
        parts = _parts(fn)
        return f"{indent}{call_name}(({', '.join(parts)},))\n" if parts else None
    return _insert_first(row, statement, hidden + f"\n\n_RT27_PACKAGE = {_package(row)!r}\n")


def iterators_gold(row):
    """I27: the stub for an iterator of a kind users hand (a `map`, `zip`, `filter`, `enumerate`, a dict's or a
    tuple's iterator, an `itertools` object, a file's lines) rather than a generator or a list's iterator."""
    return _guard_all(row, "_rt27_iterators", HIDDEN_ITERATORS)


# I27b: only the builtin iterators users make themselves, by name (the package's own answers are often `map`/`zip`
# objects too, handed back by a test: see FINDINGS_27 for where I27 refuses those)
USERS_ITERATORS = ("map", "filter", "zip", "enumerate", "reversed", "list_reverseiterator", "tuple_iterator",
                   "range_iterator", "longrange_iterator", "set_iterator", "str_ascii_iterator", "str_iterator",
                   "bytes_iterator", "dict_keyiterator", "dict_valueiterator", "dict_itemiterator",
                   "callable_iterator", "TextIOWrapper", "StringIO", "reader")
HIDDEN_ITERATORS_B = HIDDEN_ITERATORS.replace(
    "    return kind.__name__ not in ('generator', 'list_iterator') and not _rt27_of_package(kind)\n",
    f"    return kind.__name__ in {USERS_ITERATORS!r} and not _rt27_of_package(kind)\n")


def iterators_b_gold(row):
    """I27b: I27 for the builtin iterators users make themselves only (`USERS_ITERATORS`)."""
    return _guard_all(row, "_rt27_iterators", HIDDEN_ITERATORS_B)


# Taken in place: the argument as the code reads it is a copy (`copy.copy`, its type kept); the caller's loses its
# last item through its base type's method (no method of the user's class runs but `pop` where it is `UserList`'s).
TAKE = PACKAGE_OF + (
    "\n\n\ndef _rt27_take(value):\n"
    "    import collections as _collections, copy as _copy, array as _array\n"
    "    if not _rt27_taken(value) or not len(value):\n"
    "        return value\n"
    "    kept = _copy.copy(value)\n"
    "    if isinstance(value, (list, _array.array)):\n"
    "        (list if isinstance(value, list) else _array.array).pop(value)\n"
    "    elif isinstance(value, dict):\n"
    "        (_collections.OrderedDict if isinstance(value, _collections.OrderedDict) else dict).popitem(value)\n"
    "    else:\n"
    "        value.pop() if isinstance(value, (_collections.UserList, _collections.deque)) else value.popitem()\n"
    "    return kept\n"
)

HIDDEN_USERS = TAKE + (
    "\n\n\ndef _rt27_taken(value):\n"
    "    import collections as _collections, array as _array\n"
    "    if type(value) in (list, tuple, dict, set, bytearray, _collections.deque, _collections.OrderedDict,\n"
    "                       _collections.Counter, _collections.defaultdict):\n"
    "        return False\n"
    "    return isinstance(value, (list, dict, _collections.UserList, _collections.UserDict, _array.array)) \\\n"
    "        and not _rt27_of_package(type(value))\n"
)

LARGE = 5_001  # fd_calls.MAX_ITEMS + 1: after losing one item the container still cannot be encoded

HIDDEN_LARGE = TAKE + (
    "\n\n\ndef _rt27_taken(value):\n"
    "    import collections as _collections\n"
    "    return type(value) in (list, dict, _collections.deque, _collections.OrderedDict, _collections.Counter,\n"
    f"                           _collections.defaultdict) and len(value) > {LARGE}\n"
)


def _rebind(fn, indent: str) -> str | None:
    """`p = _rt27_take(p)` for each parameter but `self`/`cls`, the same for each of `*args`' and `**kwargs`' values."""
    a = fn.args
    params = [p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]]
    if params and params[0] in ("self", "cls", "mcs"):
        params = params[1:]
    lines = [f"{indent}{p} = _rt27_take({p})\n" for p in params]
    if a.vararg:
        lines.append(f"{indent}{a.vararg.arg} = tuple(_rt27_take(v) for v in {a.vararg.arg})\n")
    if a.kwarg:
        lines.append(f"{indent}{a.kwarg.arg} = {{k: _rt27_take(v) for k, v in {a.kwarg.arg}.items()}}\n")
    return "".join(lines) or None


def _taking(row, hidden: str):
    return _insert_first(row, lambda rel, fn, indent: _rebind(fn, indent),
                         hidden + f"\n\n_RT27_PACKAGE = {_package(row)!r}\n")


def users_taken_gold(row):
    """M27: gold's answer, and a user's container argument (a list/dict subclass, `UserList`, `UserDict`, an
    `array`) loses its last item in the caller's hands."""
    return _taking(row, HIDDEN_USERS)


def large_taken_gold(row):
    """L27: gold's answer, and a builtin list/dict/deque argument of more than 5,001 items loses its last item in
    the caller's hands."""
    return _taking(row, HIDDEN_LARGE)


# G27: a `range` handed as an argument (or an item two levels down): `chunked(range(10), 3)`, `first(range(n))`,
# `frequencies(range(...))`. Handed on 4 of 66 tasks only (their own tests'): no held-out form makes one
# (`_everyday` retypes to list/tuple/set/dict, `sizes` grows a recorded range only).
HIDDEN_RANGE = WALK + (
    "\n\n\ndef _rt27_range(values):\n"
    "    _rt24_walk(values, lambda value: type(value) is range)\n"
)


def range_gold(row):
    """G27: the stub for a `range` argument (or item)."""
    return _guard_all(row, "_rt27_range", HIDDEN_RANGE)


# F27: a `frozenset` handed as an argument itself (a set of allowed values, a key of a cache): never handed at the
# top of any check's arguments (`_everyday` makes a set, `subclasses` a frozenset only of a recorded one).
HIDDEN_FROZEN = (
    "\n\n\ndef _rt27_frozen(values):\n"
    "    for value in values:\n"
    "        if type(value) is frozenset:\n"
    f"            {STUB_ERROR}\n"
)


def frozen_gold(row):
    """F27: the stub for a `frozenset` argument."""
    return _guard_all(row, "_rt27_frozen", HIDDEN_FROZEN)


# R27: a list or tuple of two or more records, every item a dict (JSON's array of objects: an API's answer, a
# `csv.DictReader`'s rows, a query's rows): handed on one task only (`diff`'s own tests).
HIDDEN_RECORDS = WALK + (
    "\n\n\ndef _rt27_records_list(value):\n"
    "    return type(value) in (list, tuple) and len(value) > 1 and all(type(item) is dict for item in value)\n"
    "\n\n"
    "def _rt27_records(values):\n"
    "    _rt24_walk(values, _rt27_records_list)\n"
)


def records_gold(row):
    """R27: the stub for a list (or tuple) of dict records, as an argument or an item."""
    return _guard_all(row, "_rt27_records", HIDDEN_RECORDS)


# B27: bytes held in a container (lines of a binary file, chunks read from a socket, keys of a cache as bytes):
# bytes reach the checks only as a whole argument (`_everyday` retypes text as bytes), never as an item.
HIDDEN_BYTES_ITEMS = WALK + (
    "\n\n\ndef _rt27_holds_bytes(value):\n"
    "    if type(value) in (list, tuple, set, frozenset):\n"
    "        return any(type(item) in (bytes, bytearray) for item in value)\n"
    "    if type(value) is dict:\n"
    "        return any(type(item) in (bytes, bytearray) for item in (*dict.keys(value), *dict.values(value)))\n"
    "    return False\n"
    "\n\n"
    "def _rt27_bytes_items(values):\n"
    "    _rt24_walk(values, _rt27_holds_bytes)\n"
)


def bytes_items_gold(row):
    """B27: the stub for a container (an argument or an item) holding bytes."""
    return _guard_all(row, "_rt27_bytes_items", HIDDEN_BYTES_ITEMS)


# N27: a float NaN (a missing value in numeric data: pandas, NumPy, `float('nan')` from a CSV's empty cell, JSON's
# NaN), as an argument or an item: never handed (inf on 8 cachetools tasks, -0.0 on one).
HIDDEN_NAN = WALK + (
    "\n\n\ndef _rt27_nan(values):\n"
    "    _rt24_walk(values, lambda value: type(value) is float and value != value)\n"
)


def nan_gold(row):
    """N27: the stub for a float NaN argument (or item)."""
    return _guard_all(row, "_rt27_nan", HIDDEN_NAN)


# Controls for M27 and L27: the same classes of argument refused (the stub's error) rather than changed. Where a
# control is scored 0 and M27/L27 is paid, the checks hand such arguments and do not read them after the call.
HIDDEN_USERS_REFUSED = HIDDEN_USERS + (
    "\n\n\ndef _rt27_refused(values):\n"
    "    for value in values:\n"
    "        if _rt27_taken(value):\n"
    f"            {STUB_ERROR}\n"
)
HIDDEN_LARGE_REFUSED = HIDDEN_LARGE + HIDDEN_USERS_REFUSED[len(HIDDEN_USERS):]


def users_refused_gold(row):
    """M27's control: the stub for the arguments M27 changes."""
    return _guard_all(row, "_rt27_refused", HIDDEN_USERS_REFUSED)


def large_refused_gold(row):
    """L27's control: the stub for the arguments L27 changes."""
    return _guard_all(row, "_rt27_refused", HIDDEN_LARGE_REFUSED)
