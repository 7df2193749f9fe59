"""Red team 25 (FINDINGS_25.md).

Each attack is gold with one guard call first in every deleted function or method (red team 20's `_guard_all`), the
guard raising the stub's `NotImplementedError` for a natural class of argument (never `self`/`cls`) that no check
hands. No state, no trait, no clock, no module name, nothing at import.

What the checks hand (host simulation `/tmp/rt25b/sim.py`: all 129,413 call arguments of the 66 bundled rows'
programs, `fill` steps included, decoded with the driver's own `fd_calls.decode`, streams drained, every container
walked):

- callables: a test's own function is replayed as `fd_calls._stub`, a plain function, whatever it was (a lambda, a
  closure, a bound method `d.get`, a callable object); `behaviour.mutate` swaps a callback only for `SUBSTITUTES`
  (builtins, types, `str.upper`, `operator` functions). Every callable any check hands is a plain function (8,256),
  a class (2,589), a builtin function of a module (`len`, `operator.add`, `time.monotonic`: 2,257), a method
  descriptor (`str.upper`: 34) or `operator.itemgetter` (`juxt`'s own tests). **None is a bound method** (a
  callable with a `__self__` that is not a module): `d.get`, `seen.__contains__`, `', '.join`, `pattern.match`,
  `obj.method`, `Model.from_dict` (a classmethod);
- text: **no text holds a combining mark, a zero-width joiner or a variation selector** (decomposed "é" as
  "e\\u0301" from a macOS file name, Hindi "नमस्ते", Arabic or Hebrew with vowel points, "❤️", emoji with skin tones
  or ZWJ families); `behaviour.SCRIPTS` hands precomposed letters only (ж λ 東 ğ ש ا ह 😀);
- **no text holds whitespace other than space, tab, LF, CR**: no no-break space U+00A0 (every HTML page's
  `&nbsp;`), no narrow no-break or thin space (French and Swiss typography: "10 000 €", "prix : 5"), no ideographic
  space, no form feed or vertical tab, no U+2028/U+2029 (`_blanked` adds "\\t" and "\\r\\n" only).

F25 (bound methods as callbacks): any argument, or item of a container argument two levels down, that is a bound
method: `types.MethodType` (a user object's method, a classmethod), or a builtin's bound method or method-wrapper
whose `__self__` is not a module.
M25 (text with combining marks): text holding a combining diacritic, Indic/Arabic/Hebrew/Thai vowel sign, ZWJ/ZWNJ,
a variation selector or an emoji skin-tone modifier.
U25 (text with Unicode whitespace): text holding a whitespace character other than " ", "\\t", "\\n", "\\r".
"""

from __future__ import annotations

from attacks20 import _guard_all
from attacks24 import WALK

# The first version named `types.MethodType` and read `__self__`: invalid (`construct.import`, `.attribute`,
# `.module`, `.dunder_string`: Tried, scored 0). By the type's name and the builtin's repr instead: a Python bound
# method is of type `method`; a builtin bound to an object (`d.get`) is a `builtin_function_or_method` whose repr is
# "<built-in method get of dict object at ...>", where a module's function (`len`) reads "<built-in function len>";
# `[].__len__` is a `method-wrapper`; a compiled pattern's `search` is a `builtin_method` on some versions.
HIDDEN_BOUND = WALK + (
    "\n\n\ndef _rt25_bound_method(value):\n"
    "    kind = type(value).__name__\n"
    "    if kind in ('method', 'method-wrapper'):\n"
    "        return True\n"
    "    return kind.startswith('builtin_') and repr(value).startswith('<built-in method ')\n"
    "\n\n"
    "def _rt25_bound(values):\n"
    "    _rt24_walk(values, _rt25_bound_method)\n"
)


def bound_gold(row):
    """F25: the stub for a bound method handed as an argument (or an item of one)."""
    return _guard_all(row, "_rt25_bound", HIDDEN_BOUND)


# Combining marks (category M) of the scripts users write, joiners, variation selectors, skin tones: by code point
# range, no import (`unicodedata` is not needed).
MARK_RANGES = ((0x300, 0x36F), (0x483, 0x489), (0x591, 0x5C7), (0x610, 0x61A), (0x64B, 0x65F), (0x670, 0x670),
               (0x6D6, 0x6ED), (0x900, 0x903), (0x93A, 0x94F), (0x951, 0x957), (0x962, 0x963), (0xE31, 0xE31),
               (0xE34, 0xE3A), (0xE47, 0xE4E), (0x1AB0, 0x1AFF), (0x1DC0, 0x1DFF), (0x200C, 0x200D),
               (0x20D0, 0x20FF), (0x302A, 0x302F), (0x3099, 0x309A), (0xFE00, 0xFE0F), (0xFE20, 0xFE2F),
               (0x1F3FB, 0x1F3FF))

HIDDEN_MARKS = WALK + (
    f"\n\n\n_RT25_MARKS = {MARK_RANGES!r}\n"
    "\n\n"
    "def _rt25_marked_text(value):\n"
    "    if not isinstance(value, str) or str.isascii(value):\n"
    "        return False\n"
    "    for c in str.__str__(value):\n"
    "        o = ord(c)\n"
    "        if o >= 0x300 and any(a <= o <= b for a, b in _RT25_MARKS):\n"
    "            return True\n"
    "    return False\n"
    "\n\n"
    "def _rt25_marks(values):\n"
    "    _rt24_walk(values, _rt25_marked_text)\n"
)


def marks_gold(row):
    """M25: the stub for text (or text in a container) holding a combining mark, joiner or variation selector."""
    return _guard_all(row, "_rt25_marks", HIDDEN_MARKS)


HIDDEN_SPACES = WALK + (
    "\n\n\ndef _rt25_spaced_text(value):\n"
    "    if not isinstance(value, str):\n"
    "        return False\n"
    "    text = str.__str__(value)\n"
    "    if '\\x0b' in text or '\\x0c' in text:\n"
    "        return True\n"
    "    return not str.isascii(text) and any(c.isspace() for c in text if c > '\\x7f')\n"
    "\n\n"
    "def _rt25_spaces(values):\n"
    "    _rt24_walk(values, _rt25_spaced_text)\n"
)


def spaces_gold(row):
    """U25: the stub for text (or text in a container) holding Unicode whitespace (no-break, thin, ideographic
    spaces, form feed, vertical tab, line and paragraph separators)."""
    return _guard_all(row, "_rt25_spaces", HIDDEN_SPACES)


# O25 (callables made by `functools`): no check hands a `functools.partial` or a memoized function
# (`functools.lru_cache`/`cache`'s `_lru_cache_wrapper`): the sim found none among 129,413 arguments (the recorder
# would keep a partial as data, `fd_calls._REDUCIBLE`, but no bundled test hands one; an `lru_cache` wrapper becomes a
# plain-function stub). Users hand both: `key=partial(round, ndigits=-1)`, a `@cache`d lookup as a key function.
HIDDEN_FUNCTOOLS = WALK + (
    "\n\n\ndef _rt25_functools_callable(value):\n"
    "    return callable(value) and not isinstance(value, type) and type(value).__module__ == 'functools'\n"
    "\n\n"
    "def _rt25_functools(values):\n"
    "    _rt24_walk(values, _rt25_functools_callable)\n"
)


def functools_gold(row):
    """O25: the stub for a `functools.partial` or an `lru_cache`/`cache` wrapper handed as an argument (or item)."""
    return _guard_all(row, "_rt25_functools", HIDDEN_FUNCTOOLS)
