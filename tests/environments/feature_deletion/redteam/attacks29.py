"""Red team 29 (FINDINGS_29.md).

Each attack is gold with one statement first in every deleted function or method (red team 20's `_insert_first`):
no state, no trait, no clock, no module name read from the process, nothing at import. X29, F29 and C29 are no
guards: they rebind a generator argument to a generator of their own (named as the user's, `<genexpr>`) that reads
it one item at a time, as red team 28's X28 did; L29, I29 and K29 are guards (the stub's `NotImplementedError` on a
kind of input users hand, found in the arguments and two levels down: `attacks24.WALK`).

What the checks hand (host simulation `/tmp/rt29/sim.py`, copied to `results/redteam29_sim.py`: every argument of
every step of the 66 bundled rows' programs decoded with the driver's own `fd_calls.decode`, 168,050 arguments; and
the same over 7 tasks answered again with the current code, `/tmp/pre29`, 8,150 arguments; `raising.py` lists the
`raising` form's generators on those 7):

- `behaviour.raising` (red team 28's fix of X28) hands a generator that raises **`ValueError("bad item")`, always a
  `ValueError`**, and **after the recorded items**: with no item before it only where a recorded input was empty
  (`pluralize`, `strip`: 1 program each of 16); none on `one`, `map_reduce`, `countby`, `frequencies`, `transpose`;
- no step's argument holds an iterator **inside a container** (a list of generators: `transpose([g1, g2])`): 0 of
  168,050 bundled arguments and 0 of 8,150 answered again (`iterables` and `raising` make top-level arguments only);
- `scripts`' Latin-1 letters (`LATIN`) and `NON_ASCII` ("é") are put **before** a text's first letter ("Äma",
  "éx"): a Latin-1 letter *after* an ASCII letter (café, München, naïve, Zürich: how such words are written) reaches
  only the 5 inflection tasks whose own tests hold such words, and none of the 7 answered again;
- `iterables`' "pair keys" (red team 28's fix of K28) key a mapping by `(key, n)`: the only tuple keys on the 7
  answered again are `(int, int)`; **no tuple key holding text** (`('ann', '2024-01')`, a grouping by two columns);
- `Driver.step` reads a stream's items taken (`taken`) and its arguments' containers: **nothing reads a generator
  argument's own state after the step**, so code that closes the caller's generator (a wrapper's `yield from`, whose
  `close()` closes the generator it delegates to) is never told apart.

X29 (a generator's lookup error taken for its end): a generator argument read through one that ends at the first
`LookupError` (`KeyError`, `IndexError`: a row without the field, a line with too few fields) the user's raises, as
a rebuild whose `next(it)` is in a `try` block that also catches the lookup it makes (`except (StopIteration,
LookupError)`); any other error (the checks' `ValueError`) propagates as gold's.
F29 (a generator's first error taken for an empty input): a generator argument whose first `next` raises is read as
empty, as a rebuild that peeks at the first item under `except Exception:` does; errors after an item propagate.
C29 (the caller's generator closed): every generator argument read through `yield from` in a generator of the code's
own; when that is dropped (the call returned) Python closes it and the user's generator with it: the user's next
`next(it)` raises `StopIteration`, the generator's `finally` runs early. Answers are gold's on every input.
L29 (a Latin-1 letter inside a word): the stub for text where a letter U+00C0-U+00FF follows an ASCII letter.
I29 (an iterator inside a container): the stub for an argument (or an item of one, two levels down) that is a list,
tuple or dict holding an iterator.
K29 (tuple keys of two columns): the stub for a mapping with a tuple key whose last part is no `int`.
"""

from __future__ import annotations

from attacks20 import _insert_first
from attacks24 import WALK
from attacks27 import _guard_all
from attacks28 import _rebind

# the generator wrapper: the user's generator read through `gen`, named as the user's (`<genexpr>`), so that an
# error message naming it reads as gold's; any other argument left as it is
WRAP = (
    "\n\n"
    "def _rt29_wrap(value, gen):\n"
    "    if type(value).__name__ != 'generator' or type(value).__module__ != 'builtins':\n"
    "        return value\n"
    "    wrapped = gen(value)\n"
    "    wrapped.__name__, wrapped.__qualname__ = value.__name__, value.__qualname__\n"
    "    return wrapped\n"
)


def _rebind_with(call: str):
    def statement(rel, fn, indent):
        text = _rebind(fn, indent)
        return text.replace("_rt28_quiet(", call) if text else None
    return statement


# X29: `except (StopIteration, LookupError)` around `next(it)`: a missing key or index in the user's generator ends it
LOOKUP_QUIET = WRAP + (
    "\n\n\ndef _rt29_until_lookup_error(it):\n"
    "    while True:\n"
    "        try:\n"
    "            item = next(it)\n"
    "        except (StopIteration, LookupError):\n"
    "            return\n"
    "        yield item\n"
    "\n\n"
    "def _rt29_lookup_quiet(value):\n"
    "    return _rt29_wrap(value, _rt29_until_lookup_error)\n"
)


def lookup_quiet_gold(row):
    """X29: gold, but a generator argument's `KeyError`/`IndexError` is taken for its end."""
    return _insert_first(row, _rebind_with("_rt29_lookup_quiet("), LOOKUP_QUIET)


# F29: the first item peeked under `except Exception:`: an error before any item reads as an empty input
FIRST_QUIET = WRAP + (
    "\n\n\ndef _rt29_first_error_empty(it):\n"
    "    try:\n"
    "        first = next(it)\n"
    "    except Exception:\n"
    "        return\n"
    "    yield first\n"
    "    while True:\n"
    "        try:\n"
    "            item = next(it)\n"
    "        except StopIteration:\n"
    "            return\n"
    "        yield item\n"
    "\n\n"
    "def _rt29_first_quiet(value):\n"
    "    return _rt29_wrap(value, _rt29_first_error_empty)\n"
)


def first_quiet_gold(row):
    """F29: gold, but a generator argument that raises before its first item is read as empty."""
    return _insert_first(row, _rebind_with("_rt29_first_quiet("), FIRST_QUIET)


# C29: `yield from` the user's generator: when the code's own generator is dropped, Python closes it, and the
# delegation closes the user's generator too (a partly read one: `consume(it, 1)` to skip a header, then `for row
# in it`)
CLOSING = WRAP + (
    "\n\n\ndef _rt29_delegate(it):\n"
    "    yield from it\n"
    "\n\n"
    "def _rt29_closing(value):\n"
    "    return _rt29_wrap(value, _rt29_delegate)\n"
)


def closing_gold(row):
    """C29: gold's answers, and a generator argument partly read is closed once the call is done with it."""
    return _insert_first(row, _rebind_with("_rt29_closing("), CLOSING)


# C29's control: the same generator argument read one item more than gold reads (the stream's `taken` differs):
# scored 0 where the checks hand a generator that gold reads part of
AHEAD = WRAP + (
    "\n\n\ndef _rt29_ahead(it):\n"
    "    for item in it:\n"
    "        next(it, None)\n"
    "        yield item\n"
    "\n\n"
    "def _rt29_read_ahead(value):\n"
    "    return _rt29_wrap(value, _rt29_ahead)\n"
)


def read_ahead_gold(row):
    """C29c (control): every other item of a generator argument skipped: its answers wrong, its `taken` too."""
    return _insert_first(row, _rebind_with("_rt29_read_ahead("), AHEAD)


# L29: a Latin-1 letter after an ASCII letter, as words of French, German, Spanish and the Nordic languages are
# written (café, München, naïve, Zürich, señor, Ålesund's "Å" first is not one: only after a letter)
HIDDEN_IN_WORD = WALK + (
    "\n\n\ndef _rt29_latin_in_word(value):\n"
    "    if not isinstance(value, str):\n"
    "        return False\n"
    "    text = str.__str__(value)\n"
    "    return any('\\xc0' <= b <= '\\xff' and b not in '\\xd7\\xf7' and a.isascii() and a.isalpha()\n"
    "               for a, b in zip(text, text[1:]))\n"
    "\n\n"
    "def _rt29_in_word(values):\n"
    "    _rt24_walk(values, _rt29_latin_in_word)\n"
)


def latin_in_word_gold(row):
    """L29: the stub for text (or text in a container) where a Latin-1 letter follows an ASCII letter."""
    return _guard_all(row, "_rt29_in_word", HIDDEN_IN_WORD)


# L29's control: a Latin-1 letter anywhere (what `scripts`' LATIN puts first): scored 0 where the checks hold one
HIDDEN_ANY_LATIN = HIDDEN_IN_WORD.replace(
    "    return any('\\xc0' <= b <= '\\xff' and b not in '\\xd7\\xf7' and a.isascii() and a.isalpha()\n"
    "               for a, b in zip(text, text[1:]))\n",
    "    return any('\\xc0' <= b <= '\\xff' and b not in '\\xd7\\xf7\\xe9' for b in text)\n")


def any_latin_gold(row):
    """L29c (control): the stub for text holding any Latin-1 letter but é."""
    return _guard_all(row, "_rt29_in_word", HIDDEN_ANY_LATIN)


# I29: an iterator held in a list, tuple or dict (a list of generators, of files' lines, of `map`s)
HIDDEN_NESTED_ITERATOR = WALK + (
    "\n\n\ndef _rt29_holds_iterator(value):\n"
    "    import collections as _collections\n"
    "    if type(value) in (dict, _collections.OrderedDict):\n"
    "        items = dict.values(value)\n"
    "    elif type(value) in (list, tuple):\n"
    "        items = value\n"
    "    else:\n"
    "        return False\n"
    "    return any(hasattr(type(item), '__next__') and hasattr(type(item), '__iter__') for item in items)\n"
    "\n\n"
    "def _rt29_nested_iterator(values):\n"
    "    _rt24_walk(values, _rt29_holds_iterator)\n"
)


def nested_iterator_gold(row):
    """I29: the stub for a list, tuple or dict (an argument, or an item of one) holding an iterator."""
    return _guard_all(row, "_rt29_nested_iterator", HIDDEN_NESTED_ITERATOR)


# K29: a mapping with a tuple key whose last part is no int (a grouping by two columns: `{('ann', '2024-01'): 3}`,
# `{(user, day): n}`); the fix of K28 keys by (key, n) pairs, n an int
HIDDEN_TEXT_TUPLE_KEYS = WALK + (
    "\n\n\ndef _rt29_text_tuple_keyed(value):\n"
    "    import collections as _collections\n"
    "    return type(value) in (dict, _collections.OrderedDict, _collections.Counter, _collections.defaultdict) \\\n"
    "        and any(type(key) is tuple and any(isinstance(part, str) for part in key) for key in dict.keys(value))\n"
    "\n\n"
    "def _rt29_text_tuple_keys(values):\n"
    "    _rt24_walk(values, _rt29_text_tuple_keyed)\n"
)


def text_tuple_keys_gold(row):
    """K29: the stub for a mapping (an argument or an item) with a tuple key whose last part is no int."""
    return _guard_all(row, "_rt29_text_tuple_keys", HIDDEN_TEXT_TUPLE_KEYS)


# P29: a lazy function's input list consumed while its answer is read. Statement-first in a generator function runs
# at the answer's first `next`, not at the call: `Driver.step` compares only the arguments of the step it runs
# (the `next` step's is the answer), and no step reads an earlier step's arguments again, so a list the call was
# handed and the answer's reading empties is never seen changed. Gold reads a copy; the caller's list is emptied,
# as a rebuild that takes its items off the caller's list as it yields (`sizes.pop(0)`) leaves it.
TOOK = (
    "\n\n\ndef _rt29_took(*values):\n"
    "    kept = {}\n"
    "    out = [kept.setdefault(id(v), list(v)) if type(v) is list else v for v in values]\n"
    "    for value in values:\n"
    "        if type(value) is list:\n"
    "            value.clear()\n"
    "    return out\n"
)


def _took_lines(fn, indent: str) -> str | None:
    """`a, b, *rest = _rt29_took(a, b, *rest)` over the parameters but `self`/`cls` and `*args` (each list read
    as a copy, the same list once, the caller's emptied after every copy is made)."""
    a = fn.args
    params = [p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]]
    if params and params[0] in ("self", "cls", "mcs"):
        params = params[1:]
    names = params + ([f"*{a.vararg.arg}"] if a.vararg else [])
    if not names:
        return None
    joined = ", ".join(names)
    text = f"{indent}{joined}{',' if len(names) == 1 else ''} = _rt29_took({joined})\n"
    if a.vararg:
        text += f"{indent}{a.vararg.arg} = tuple({a.vararg.arg})\n"
    return text


def _own_yield(fn) -> bool:
    import ast
    todo = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return False


def _took_statement(generators_only: bool):
    def statement(rel, fn, indent):
        return _took_lines(fn, indent) if _own_yield(fn) or not generators_only else None
    return statement


def consumed_lazily_gold(row):
    """P29: gold's answers; a generator function's list arguments emptied in the caller's hands once its answer is
    first read (gold reads a copy)."""
    return _insert_first(row, _took_statement(True), TOOK)


def consumed_gold(row):
    """P29c (control): the same in every deleted function (where one is no generator, the list is emptied during
    the call step, whose arguments `Driver.step` compares): scored 0 where the checks hand a list."""
    return _insert_first(row, _took_statement(False), TOOK)
