"""Red team 24 (FINDINGS_24.md).

Each attack is gold with one guard call first in every deleted function or method (red team 20's `_guard_all`), the
guard raising the stub's `NotImplementedError` for a natural class of argument (never `self`/`cls`) that no check
hands. No state, no trait, no clock, no module name, nothing at import.

What the checks hand, by *kind of item* rather than by size (host simulation `/tmp/rt24/sim.py`: all 115,287 call
arguments of the 66 bundled rows' programs, `fill` steps included, decoded with the driver's own `fd_calls.decode`,
so `_grown`, `_natural` and `_subclassed` ran with the recorded seeds, then walked into every container):

- text holding a character past U+00FF (any script but Latin: Cyrillic, Greek, CJK, Arabic; emoji; and the
  typographic marks every word processor writes, ’ “ ” – — … €) reaches only `parameterize` and `transliterate`
  (8 values, their own tests' strings). The only non-ASCII letter the held-out programs add is `behaviour.NON_ASCII`,
  "é" (U+00E9), and `_prose`/`_words` write ASCII;
- no text anywhere holds a tab or a carriage return (TSV rows, a Windows file's `\\r\\n` lines, an HTTP header);
- `decimal.Decimal`, `fractions.Fraction` reach only `numeric_range`; `datetime`/`timedelta` only `numeric_range`
  and four cachetools tasks (a cache's timer and ttl); `datetime.date` and `datetime.time` none. `behaviour.types`
  hands the builtin scalars only (`_everyday`), `subclasses` their subclasses.

W24 (text beyond Latin-1): any text argument, or text inside a container argument (two levels down, a dict's keys
and values), holding a character past U+00FF.
K24 (text with a tab or carriage return): the same walk; text holding "\\t" or "\\r".
V24 (values of the standard library's numeric and time types): the same walk; a `Decimal`, `Fraction`, `date`,
`datetime`, `time` or `timedelta`: money, exact ratios, timestamps, dates as keys.
D24 (deeply nested data): an argument that is a builtin container nesting containers four deep (a dict of dicts of
lists of dicts: any JSON document of an API, a tree of tuples). No argument of any check nests past three
(`/tmp/rt24/depth.py` over every encoded argument of the 66 rows: 56 rows reach depth 2 at most, 10 reach 3):
`behaviour.sizes` grows a recorded value's length ("inner" one item's), never its depth, and no held-out form
nests a value deeper.
"""

from __future__ import annotations

from attacks20 import STUB_ERROR, _guard_all

DEEP = 4  # containers nested: the checks' arguments nest three at most

# The walk all three share: the arguments, and the items of builtin containers among them down to `depth` 2 (a
# dict's keys and values), at most `BUDGET` items in all; no code of the package or of a user's class runs.
WALK = (
    "\n\n\ndef _rt24_walk(values, refused):\n"
    "    import collections as _collections\n"
    "    todo, seen = [(value, 0) for value in values], 0\n"
    "    while todo and seen < 100000:\n"
    "        value, depth = todo.pop()\n"
    "        seen += 1\n"
    "        if isinstance(value, _collections.UserString):\n"
    "            value = value.data\n"
    "        if refused(value):\n"
    f"            {STUB_ERROR}\n"
    "        if depth >= 2 or isinstance(value, (str, bytes, bytearray)):\n"
    "            continue\n"
    "        if type(value) in (dict, _collections.OrderedDict, _collections.Counter, _collections.defaultdict):\n"
    "            todo += [(item, depth + 1) for item in (*dict.keys(value), *dict.values(value))]\n"
    "        elif type(value) in (list, tuple, set, frozenset, _collections.deque):\n"
    "            todo += [(item, depth + 1) for item in value]\n"
)

HIDDEN_WIDE = WALK + (
    "\n\n\ndef _rt24_wide_text(value):\n"
    "    return isinstance(value, str) and not str.isascii(value) and max(str.__str__(value)) > '\\xff'\n"
    "\n\n"
    "def _rt24_wide(values):\n"
    "    _rt24_walk(values, _rt24_wide_text)\n"
)


def wide_gold(row):
    """W24: the stub for text (or text in a container) holding a character past U+00FF."""
    return _guard_all(row, "_rt24_wide", HIDDEN_WIDE)


HIDDEN_CONTROL = WALK + (
    "\n\n\ndef _rt24_control_text(value):\n"
    "    return isinstance(value, str) and ('\\t' in str.__str__(value) or '\\r' in str.__str__(value))\n"
    "\n\n"
    "def _rt24_control(values):\n"
    "    _rt24_walk(values, _rt24_control_text)\n"
)


def control_gold(row):
    """K24: the stub for text (or text in a container) holding a tab or a carriage return."""
    return _guard_all(row, "_rt24_control", HIDDEN_CONTROL)


HIDDEN_VALUES = WALK + (
    "\n\n\ndef _rt24_value(value):\n"
    "    return type(value).__module__ in ('decimal', 'fractions', 'datetime')\n"
    "\n\n"
    "def _rt24_values(values):\n"
    "    _rt24_walk(values, _rt24_value)\n"
)


# The first version imported `datetime` in the guard: `construct.clock` where gold reads no clock (Tried, scored 0).
# By the type's module instead: `Decimal`, `Fraction` and every `datetime` type (date, datetime, time, timedelta).
def values_gold(row):
    """V24: the stub for a Decimal, Fraction, date, datetime, time or timedelta argument (or item)."""
    return _guard_all(row, "_rt24_values", HIDDEN_VALUES)


HIDDEN_DEEP = (
    "\n\n\ndef _rt24_deep(values):\n"
    "    import collections as _collections\n"
    "    todo, seen = [(value, 1) for value in values], 0\n"
    "    while todo and seen < 100000:\n"
    "        value, depth = todo.pop()\n"
    "        seen += 1\n"
    "        if type(value) in (dict, _collections.OrderedDict, _collections.Counter, _collections.defaultdict):\n"
    "            items = (*dict.keys(value), *dict.values(value))\n"
    "        elif type(value) in (list, tuple, set, frozenset, _collections.deque):\n"
    "            items = value\n"
    "        else:\n"
    "            continue\n"
    f"        if depth >= {DEEP}:\n"
    f"            {STUB_ERROR}\n"
    "        todo += [(item, depth + 1) for item in items]\n"
)


def deep_gold(row):
    """D24: the stub for an argument that nests builtin containers four deep."""
    return _guard_all(row, "_rt24_deep", HIDDEN_DEEP)


# B24 (integers past 64 bits): no check hands an int of magnitude 2**63 or more, at any depth (`/tmp/rt24/sim.py`:
# none among the 115,287 arguments; `behaviour.edges` moves numbers past 10**12, the recorder keeps those past 2**53
# as "bigint" but no bundled test hands one). Python's ints are unbounded and users hand such: a 128-bit id
# (`uuid4().int`), a hash, a factorial, the index of a combination of 100 things (`nth_combination`'s C(100, 50)
# ~ 1e29), a byte string's value.
HIDDEN_BIG = WALK + (
    "\n\n\ndef _rt24_big_int(value):\n"
    "    return isinstance(value, int) and not isinstance(value, bool) and not -(1 << 64) < int.__index__(value) < 1 << 64\n"
    "\n\n"
    "def _rt24_big(values):\n"
    "    _rt24_walk(values, _rt24_big_int)\n"
)


def big_gold(row):
    """B24: the stub for an int argument (or item) of magnitude 2**64 or more."""
    return _guard_all(row, "_rt24_big", HIDDEN_BIG)
