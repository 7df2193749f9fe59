"""Red team 28 (FINDINGS_28.md).

Each attack is gold with one statement first in every deleted function or method (red team 20's `_insert_first`):
no state, no trait, no clock, no module name read from the process, nothing at import. X28 is no guard: it answers
as gold does on every input but one whose iterator raises; the others are guard-style (the stub's
`NotImplementedError` for a natural class of argument that no check hands, red team 24's container walk
`attacks24.WALK`, two levels down).

What the checks hand (host simulation `/tmp/rt28/sim.py`, copied to `results/redteam28_sim.py`: every argument of
every step of the 66 bundled rows' programs decoded with the driver's own `fd_calls.decode`, 164,725 arguments, on
the data answered again for red team 27):

- **an iterator that raises**: the recorder's `_Stream.__next__` marks a stream ended only at `StopIteration`; a
  test's iterator that raised anything else leaves the stream unended, and the replay's `_Feed` then answers the
  artifact "stream" (a `BaseException`) past its recorded items, on gold too. `_iterable_as` builds every other
  iterator of a list of plain items (`map(copy.copy, ...)`, `filter(None, ...)`, ...), which cannot raise. So **no
  check hands an iterator that raises an exception**: a generator over a file whose line does not parse, a `map`
  whose function fails on one item, a paged API's iterator whose request fails;
- **Latin-1 letters** beyond `behaviour.NON_ASCII` ("é"): text with ä ö ü ß ñ å ø æ reaches 5 tasks of 66 (inflection's
  `parameterize`, `transliterate`, `humanize`, `titleize`, `underscore`: their own tests' strings). `scripts` adds a
  letter of `SCRIPTS` (ж λ 東 ğ ש ا ह 😀), all past U+00FF, and `JOINED`'s decomposed é, ñ: no precomposed letter of
  German, Spanish or the Nordic languages;
- **floats written with an exponent** (`1e-05`, `2.5e-10`, `1e+16`: a tolerance, a rate, a probability, a large
  amount): none (`numbers` moves ints past 2**64, never a float; `gaps` adds 0.5); `inf` on the 8 cachetools tasks
  only;
- **operator's callables** (`itemgetter`, `attrgetter`, `methodcaller`: `countby(itemgetter('status'), rows)`,
  `groupby(attrgetter('kind'), items)`): an `itemgetter` on one task (`juxt:methods`), the others never;
- **iterators `iterables` leaves out** (`ITERATOR_HOWS`): a set's, a range's, a dict's items' iterator, a
  `callable_iterator` (`re.finditer`, `iter(f, sentinel)`), a bytes' iterator, a `csv.DictReader`: none.

X28 (a generator's error taken for its end): every argument (and each of `*args`' and `**kwargs`' values) that is a
generator is read through a generator that ends at the first exception the user's raises, as a rebuild that calls
`next(it)` under `except Exception:` (not `except StopIteration:`) does: a user's error is swallowed and the answer is
made of the items read before it.
L28 (Western European text): text (an argument, an item, a key or value two levels down) holding a letter of German,
Spanish or the Nordic languages (`WESTERN`).
E28 (floats with an exponent): a float whose `repr` holds an exponent (|x| < 1e-4 or >= 1e16), or an infinite one.
O28 (operator's callables): an argument (or item) that is an `operator.itemgetter`, `attrgetter` or `methodcaller`.
I28 (iterators the fix leaves out): an argument (or item) that is a set's, range's, dict items', bytes' iterator, a
`callable_iterator` or a `csv.DictReader`.
"""

from __future__ import annotations

from attacks20 import STUB_ERROR, _insert_first
from attacks24 import WALK
from attacks27 import _guard_all, _package

# X28: a generator argument read through a generator that stops at its first exception (`except Exception`), every
# item read one at a time when the code asks for it (no item read ahead: the stream's `taken` is gold's), named as the
# user's (a generator expression's `<genexpr>`): an error message that names the argument's type or name reads as
# gold's. (X28's first version read every iterator so, and a `map` or list iterator became a generator: gold's
# `TypeError`/`KeyError` messages naming the argument's type then differed: Tried.)
QUIET = (
    "\n\n\ndef _rt28_until_error(it):\n"
    "    while True:\n"
    "        try:\n"
    "            item = next(it)\n"
    "        except Exception:\n"
    "            return\n"
    "        yield item\n"
    "\n\n"
    "def _rt28_quiet(value):\n"
    "    if type(value).__name__ != 'generator' or type(value).__module__ != 'builtins':\n"
    "        return value\n"
    "    quiet = _rt28_until_error(value)\n"
    "    quiet.__name__, quiet.__qualname__ = value.__name__, value.__qualname__\n"
    "    return quiet\n"
)


def _rebind(fn, indent: str) -> str | None:
    """`p = _rt28_quiet(p)` for each parameter but `self`/`cls`, the same for each of `*args`' and `**kwargs`'
    values."""
    a = fn.args
    params = [p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]]
    if params and params[0] in ("self", "cls", "mcs"):
        params = params[1:]
    lines = [f"{indent}{p} = _rt28_quiet({p})\n" for p in params]
    if a.vararg:
        lines.append(f"{indent}{a.vararg.arg} = tuple(_rt28_quiet(v) for v in {a.vararg.arg})\n")
    if a.kwarg:
        lines.append(f"{indent}{a.kwarg.arg} = {{k: _rt28_quiet(v) for k, v in {a.kwarg.arg}.items()}}\n")
    return "".join(lines) or None


def quiet_gold(row):
    """X28: gold, but an iterator argument's exception (anything but `StopIteration`) is taken for its end: the
    answer is made of the items before it and the user's error is swallowed."""
    return _insert_first(row, lambda rel, fn, indent: _rebind(fn, indent), QUIET)


# X28's control: the same arguments (iterators) refused: scored 0 where the checks hand the code an iterator
HIDDEN_ITERATOR_REFUSED = (
    "\n\n\ndef _rt28_refused(values):\n"
    "    for value in values:\n"
    "        kind = type(value)\n"
    "        if hasattr(kind, '__next__') and hasattr(kind, '__iter__'):\n"
    f"            {STUB_ERROR}\n"
)


def iterators_refused_gold(row):
    """X28c: the stub for an iterator argument (the arguments X28 reads through its generator)."""
    return _guard_all(row, "_rt28_refused", HIDDEN_ITERATOR_REFUSED)


# L28: German, Spanish and Nordic letters (precomposed, as every keyboard and file of those languages writes them)
WESTERN = "äöüÄÖÜßñÑåÅøØæÆ"
HIDDEN_WESTERN = WALK + (
    "\n\n\ndef _rt28_western_text(value):\n"
    f"    return isinstance(value, str) and any(c in {WESTERN!r} for c in str.__str__(value))\n"
    "\n\n"
    "def _rt28_western(values):\n"
    "    _rt24_walk(values, _rt28_western_text)\n"
)


def western_gold(row):
    """L28: the stub for text (or text in a container) holding ä ö ü ß ñ å ø æ (German, Spanish, Nordic)."""
    return _guard_all(row, "_rt28_western", HIDDEN_WESTERN)


# E28: floats written with an exponent, and infinities
HIDDEN_EXPONENT = WALK + (
    "\n\n\ndef _rt28_exponent_float(value):\n"
    "    return type(value) is float and value == value and ('e' in float.__repr__(value) or value in (\n"
    "        float('inf'), float('-inf')))\n"
    "\n\n"
    "def _rt28_exponent(values):\n"
    "    _rt24_walk(values, _rt28_exponent_float)\n"
)


def exponent_gold(row):
    """E28: the stub for a float written with an exponent (1e-05, 2.5e-10, 1e+16) or an infinite one."""
    return _guard_all(row, "_rt28_exponent", HIDDEN_EXPONENT)


# E28b: only floats written with an exponent (inf is handed on the cachetools tasks)
HIDDEN_EXPONENT_B = HIDDEN_EXPONENT.replace(" or value in (\n        float('inf'), float('-inf')))", ")")


def exponent_b_gold(row):
    """E28b: the stub for a finite float written with an exponent (1e-05, 2.5e-10, 1e+16)."""
    return _guard_all(row, "_rt28_exponent", HIDDEN_EXPONENT_B)


# O28: operator's callables, by their type's name (the scope check refuses `operator.attrgetter` and the like named
# as a value, not called: `construct.getter_value`, the first version's Tried)
HIDDEN_OPERATOR = WALK + (
    "\n\n\ndef _rt28_operator(values):\n"
    "    _rt24_walk(values, lambda value: type(value).__module__ == 'operator' and\n"
    "               type(value).__name__ in ('itemgetter', 'attrgetter', 'methodcaller'))\n"
)


def operator_gold(row):
    """O28: the stub for an `operator.itemgetter`, `attrgetter` or `methodcaller` argument (or item)."""
    return _guard_all(row, "_rt28_operator", HIDDEN_OPERATOR)


# I28: the iterators users hand that `behaviour.iterables` does not make
LEFT_OUT = ("set_iterator", "range_iterator", "longrange_iterator", "dict_itemiterator", "callable_iterator",
            "bytes_iterator", "bytearray_iterator", "DictReader")
HIDDEN_LEFT_OUT = WALK + (
    "\n\n\ndef _rt28_left_out(values):\n"
    f"    _rt24_walk(values, lambda value: type(value).__name__ in {LEFT_OUT!r} and\n"
    "               not str(type(value).__module__).startswith(_RT28_PACKAGE))\n"
)


def left_out_gold(row):
    """I28: the stub for a set's, range's, dict items', bytes' iterator, a `callable_iterator` or a `DictReader`."""
    return _insert_first(row, lambda rel, fn, indent: _guard_statement(fn, indent, "_rt28_left_out"),
                         HIDDEN_LEFT_OUT + f"\n\n_RT28_PACKAGE = {_package(row)!r}\n")


def _guard_statement(fn, indent, call_name):
    from attacks20 import _parts
    parts = _parts(fn)
    return f"{indent}{call_name}(({', '.join(parts)},))\n" if parts else None


# M28: the items a generator argument yields (lists and dicts: rows, records) changed in place: gold reads a copy of
# each (`copy.copy`), the caller's own item loses its last entry (its base type's `pop`/`popitem`), as a rebuild that
# consumes each row as it reads it does (`while row: row.pop()`). `Driver.step` snapshots an argument only where its
# type is one of `CONTAINERS` (a generator is none), and a stream's items are decoded afresh at each `next` and held
# by no step: what the code does to them no check can read. (The open M27/L27's fix direction, snapshotting more
# argument types, leaves a generator's items out.)
TAKEN_ITEMS = (
    "\n\n\ndef _rt28_taking(it, before):\n"
    "    import copy as _copy\n"
    "    for item in it:\n"
    "        if type(item) in (list, dict) and item:\n"
    "            kept = _copy.copy(item)\n"
    "            (list.pop if type(item) is list else dict.popitem)(item)\n"
    "            yield item if before else kept\n"
    "        else:\n"
    "            yield item\n"
    "\n\n"
    "def _rt28_items_taken(value, before=False):\n"
    "    if type(value).__name__ != 'generator' or type(value).__module__ != 'builtins':\n"
    "        return value\n"
    "    taking = _rt28_taking(value, before)\n"
    "    taking.__name__, taking.__qualname__ = value.__name__, value.__qualname__\n"
    "    return taking\n"
)


def _rebind_with(call: str):
    def statement(rel, fn, indent):
        text = _rebind(fn, indent)
        return text.replace("_rt28_quiet(", call) if text else None
    return statement


def items_taken_gold(row):
    """M28: gold's answer, and each list or dict a generator argument yields loses its last entry in the caller's
    hands (gold reads a copy)."""
    return _insert_first(row, _rebind_with("_rt28_items_taken("), TAKEN_ITEMS)


def items_taken_before_gold(row):
    """M28c (control): the same items changed before the code reads them (so its answer is made of the shortened
    rows): scored 0 where the checks hand a generator of lists or dicts."""
    return _insert_first(row, _rebind_with("_rt28_items_taken_before("),
                         TAKEN_ITEMS + "\n\ndef _rt28_items_taken_before(value):\n"
                         "    return _rt28_items_taken(value, True)\n")


# K28: a mapping keyed by tuples (composite keys: `{(row, col): value}`, `{(user, day): count}`, a grouping by two
# fields): no check's mapping holds a tuple key (the sim: dict keys of str, int, float, bool, bytes, Decimal,
# Fraction, dates, times, UUID, paths, enum members and records only)
HIDDEN_TUPLE_KEYS = WALK + (
    "\n\n\ndef _rt28_tuple_keyed(value):\n"
    "    import collections as _collections\n"
    "    return type(value) in (dict, _collections.OrderedDict, _collections.Counter, _collections.defaultdict) \\\n"
    "        and any(type(key) is tuple for key in dict.keys(value))\n"
    "\n\n"
    "def _rt28_tuple_keys(values):\n"
    "    _rt24_walk(values, _rt28_tuple_keyed)\n"
)


def tuple_keys_gold(row):
    """K28: the stub for a mapping (an argument or an item) with a tuple key."""
    return _guard_all(row, "_rt28_tuple_keys", HIDDEN_TUPLE_KEYS)
