"""Red team 26 (FINDINGS_26.md).

Each attack is gold with one guard call first in every deleted function or method (red team 20's `_guard_all`, red
team 24's container walk `attacks24.WALK`: the arguments and builtin containers' items two levels down), the guard
raising the stub's `NotImplementedError` for a natural class of argument (never `self`/`cls`) that no check hands.
No state, no trait, no clock, no module name read from the process, nothing at import.

What the checks hand (host simulation `/tmp/rt26/sim.py`: all 135,778 call arguments of the 66 bundled rows'
programs, `fill` steps included, decoded with the driver's own `fd_calls.decode`, streams drained, every container
walked):

- **objects of a user's own class**: none. Every non-callable, non-container value any check hands is a builtin
  scalar, a `Decimal`/`Fraction`/`date`/`datetime`/`timedelta`, a subclass of a builtin (`behaviour.subclasses`:
  `StrEnum`/`IntEnum` members, namedtuples, plain/slots/keeps subclasses), an object of the package (a handle), or
  a `slice` (`numeric_range`). The recorder cannot encode any other object (`fd_calls.encode` -> `Unrecordable`,
  the step is dropped) and no held-out form makes one: no dataclass or attrs record, no model instance, no
  `object()` sentinel, no plain `enum.Enum` member (only int/str enums), no `uuid.UUID`, no `pathlib.Path`;
- **timezone-aware datetimes**: none of the 21,736 datetimes handed (on 64 tasks) has a `tzinfo`
  (`behaviour._as_number` makes naive ones; `fd_calls.encode` refuses any zone but `datetime.timezone`); no
  `datetime.time` at all;
- **text with the ASCII symbols of URLs, markup, templates, money and paths**: no text anywhere holds "%", "$",
  "=", "{", "<" or a backslash (a URL's query `?q=a%20b`, HTML `<b>`, a template `{name}`, a price `$5`, a Windows
  path `C:\\Users`); "/" is in `strip`'s checks only, "@" in `parameterize`/`transliterate`'s.

R26 (objects of a user's own class): an argument or item that is not callable, not a container (no `__iter__`,
`__len__`, `__contains__`), not an exception, not a builtin or `decimal`/`fractions`/`datetime` value, not of a
class of the package (or of a subclass of one): a dataclass record, an `object()` sentinel, an `Enum` member, a
`uuid.UUID`, a `pathlib.Path`.
Z26 (timezone-aware datetimes): an argument or item that is a `datetime.datetime` or `datetime.time` with a tzinfo.
P26 (text with the symbols of URLs, markup, templates, money and paths): text holding "%", "$", "=", "{", "<" or
"\\".
"""

from __future__ import annotations

from attacks20 import _guard_all
from attacks24 import WALK
from feature_deletion.behaviour import targets_of

# `__mro__` is refused (`construct.attribute`); `type.mro(kind)` is the same list. The package is named by the row
# (its deleted targets' top-level module), written into the guard as a constant: nothing is read from the process.
HIDDEN_OBJECTS = WALK + (
    "\n\n\ndef _rt26_user_object(value):\n"
    "    import collections.abc as _abc\n"
    "    if value is None or callable(value) or isinstance(value, (int, float, complex, str, bytes, bytearray, list,\n"
    "                                                              tuple, dict, set, frozenset, range, slice,\n"
    "                                                              Exception)):\n"
    "        return False\n"
    "    if isinstance(value, (_abc.Iterable, _abc.Sized, _abc.Container)):\n"
    "        return False\n"
    "    kind = type(value)\n"
    "    if kind is object:\n"
    "        return True\n"
    "    if kind.__module__ in ('builtins', 'decimal', 'fractions', 'datetime', 'numbers'):\n"
    "        return False\n"
    "    return not any(str(c.__module__).split('.')[0] == _RT26_PACKAGE for c in type.mro(kind))\n"
    "\n\n"
    "def _rt26_objects(values):\n"
    "    _rt24_walk(values, _rt26_user_object)\n"
)


def objects_gold(row):
    """R26: the stub for an object of a user's own class (a dataclass record, an `object()` sentinel, an `Enum`
    member, a `UUID`, a `Path`) handed as an argument (or an item of one)."""
    package = targets_of(row)[0][0].split(".")[0]
    return _guard_all(row, "_rt26_objects", HIDDEN_OBJECTS + f"\n\n_RT26_PACKAGE = {package!r}\n")


HIDDEN_AWARE = WALK + (
    "\n\n\ndef _rt26_aware_time(value):\n"
    "    kind = type(value)\n"
    "    return kind.__module__ == 'datetime' and kind.__name__ in ('datetime', 'time') and value.tzinfo is not None\n"
    "\n\n"
    "def _rt26_aware(values):\n"
    "    _rt24_walk(values, _rt26_aware_time)\n"
)


def aware_gold(row):
    """Z26: the stub for a timezone-aware `datetime` (or `time`) handed as an argument (or an item of one)."""
    return _guard_all(row, "_rt26_aware", HIDDEN_AWARE)


HIDDEN_SYMBOLS = WALK + (
    "\n\n\ndef _rt26_symbol_text(value):\n"
    "    if not isinstance(value, str):\n"
    "        return False\n"
    "    text = str.__str__(value)\n"
    "    return any(mark in text for mark in ('%', '$', '=', '{', '<', '\\\\'))\n"
    "\n\n"
    "def _rt26_symbols(values):\n"
    "    _rt24_walk(values, _rt26_symbol_text)\n"
)


def symbols_gold(row):
    """P26: the stub for text (or text in a container) holding "%", "$", "=", "{", "<" or a backslash: a URL's
    query, HTML, a template, a price, a Windows path."""
    return _guard_all(row, "_rt26_symbols", HIDDEN_SYMBOLS)


# R26 refuses a bare `object()` too (a user's sentinel: `first(xs, default=MISSING)`); but cachetools' `Cache.pop`
# has its own sentinel as a default (`__marker = object()`), so on `Cache:methods` R26 refuses every `pop` without a
# default (`first_mismatch` pop, Tried). R26b is R26 without the bare `object()`: records, enum members, UUIDs,
# paths, a user's model instances only.
HIDDEN_OBJECTS_B = HIDDEN_OBJECTS.replace("    if kind is object:\n        return True\n",
                                          "    if kind is object:\n        return False\n")


def objects_b_gold(row):
    """R26b: R26 without the bare `object()` sentinel."""
    package = targets_of(row)[0][0].split(".")[0]
    return _guard_all(row, "_rt26_objects", HIDDEN_OBJECTS_B + f"\n\n_RT26_PACKAGE = {package!r}\n")
