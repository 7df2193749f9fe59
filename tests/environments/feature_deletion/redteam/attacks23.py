"""Red team 23 (FINDINGS_23.md).

Each attack is gold with one guard call first in every deleted function or method (red team 20's `_guard_all`), the
guard raising the stub's `NotImplementedError` for a natural kind of argument (never `self`/`cls`) that no check
hands. No state, no trait, no clock, no module name, nothing at import.

What every large input the checks hand has in common (host simulation of all 102,326 call arguments of the 66
bundled tasks' programs, each decoded with the driver's own `fd_calls.decode`, `_grown` and `_subclassed`): a value
past 1,000 items is only ever a *top-level* argument (`behaviour.sizes` grows a recorded argument itself: no
"grown" is nested in another encoding, none is subclassed), of a builtin type (str, bytes, list, tuple, set, dict,
OrderedDict, Counter, defaultdict, range, a list iterator); the only exceptions are one recorded 2,000-item input of
`run_length.encode` and its subclassed forms. And the 25 large texts of prose shape (`_natural`'s `_prose`) are
letters, spaces and `.,?!;:` only.

L23 (a large container inside a container): a container (list, tuple, set, frozenset, dict keys or values, two
levels down) holding a container past 1,000 items: a JSON record with a big array (`{"id": 1, "data": [...5000]}`),
a list of rows each a long list, a dict of groups (`groupby`'s answer), a list of big sets.

C23 (a large container of no plain builtin type): a sized value past 1,000 items whose type is none of str, bytes,
list, tuple, set, frozenset, dict, OrderedDict, Counter, defaultdict, range (nor of the package): a big
`collections.deque` (a queue, a window), an `array.array` of readings, a `bytearray` read from a file, a dict's
`values()`/`keys()`/`items()` view of a big dict, a `MappingProxyType` of a big mapping, a user's list/dict/str
subclass holding a big table or page (`Markup` of an HTML page), a `collections.UserList`.

T23 (prose with the punctuation real prose has): text past 1,000 characters of prose shape (N22's: >= 60 distinct
words, mean length 2-12) that holds an apostrophe, a quote, a parenthesis, a hyphen or a digit: any paragraph of
English as people write it ("don't", "well-known", "(see 3.2)", "1775"). `_prose` writes letters, spaces, commas and
sentence ends only.
"""

from __future__ import annotations

from attacks20 import STUB_ERROR, _guard_all, _insert_first

LIMIT = 1000

HIDDEN_NESTED = (
    "\n\n\ndef _rt23_inner(value, depth):\n"
    "    if type(value) in (list, tuple, set, frozenset):\n"
    "        items = value\n"
    "    elif type(value) is dict:\n"
    "        items = [*value.keys(), *value.values()]\n"
    "    else:\n"
    "        return\n"
    "    for item in items:\n"
    "        if type(item) in (list, tuple, set, frozenset, dict, range) and len(item) > " + str(LIMIT) + ":\n"
    f"            {STUB_ERROR}\n"
    "        if depth < 2:\n"
    "            _rt23_inner(item, depth + 1)\n"
    "\n\n"
    "def _rt23_nested(values):\n"
    "    for value in values:\n"
    "        _rt23_inner(value, 1)\n"
)


def nested_gold(row):
    """L23: the stub for a container holding (two levels down) a container past 1,000 items."""
    return _guard_all(row, "_rt23_nested", HIDDEN_NESTED)


HIDDEN_ODD = (
    "\n\n\ndef _rt23_odd(values):\n"
    "    import collections as _collections\n"
    "    plain = (str, bytes, list, tuple, set, frozenset, dict, range, _collections.OrderedDict,\n"
    "             _collections.Counter, _collections.defaultdict)\n"
    "    for value in values:\n"
    "        if type(value) in plain or type(value).__module__.split('.')[0] == __name__.split('.')[0]:\n"
    "            continue\n"
    "        try:\n"
    "            size = len(value)\n"
    "        except Exception:\n"
    "            continue\n"
    f"        if size > {LIMIT}:\n"
    f"            {STUB_ERROR}\n"
)


def odd_gold(row):
    """C23: the stub for a sized value past 1,000 items of a type that is no plain builtin container."""
    return _guard_all(row, "_rt23_odd", HIDDEN_ODD)


HIDDEN_PUNCT = (
    "\n\n\ndef _rt23_punct(values):\n"
    "    import re as _re\n"
    "    for value in values:\n"
    f"        if type(value) is not str or len(value) <= {LIMIT}:\n"
    "            continue\n"
    "        words = value.split()\n"
    "        if len(set(words)) < 60 or not 2 * len(words) <= len(value) <= 12 * len(words):\n"
    "            continue\n"
    "        if _re.search(r\"[A-Za-z]'[A-Za-z]|[A-Za-z]-[A-Za-z]|[\\\"()0-9]\", value):\n"
    f"            {STUB_ERROR}\n"
)


def punct_gold(row):
    """T23: the stub for prose past 1,000 characters that holds an apostrophe, hyphen, quote, bracket or digit."""
    return _guard_all(row, "_rt23_punct", HIDDEN_PUNCT)


# S23 (a cache holding many entries): every check builds its caches step by step (a recorded program, or a
# recorded one with a grown *key* or *value*: `behaviour.sizes` grows the arguments of a deleted method, never the
# object's state), so no deleted cachetools method ever runs on a cache whose `currsize` passes 1,000. A cache
# of thousands of entries (an `LRUCache(maxsize=10_000)` in front of a database, a TTL cache of sessions) is what
# caches are for. The guard, first in every deleted method of a `Cache` other than `__init__` and properties,
# refuses such a cache (read through `Cache.currsize.fget`, so that a `_TimedCache` does not expire first).
HIDDEN_FULL_CACHE = (
    "\n\n\ndef _rt23_full(cache):\n"
    f"    if isinstance(cache, Cache) and Cache.currsize.fget(cache) > {LIMIT}:\n"
    f"        {STUB_ERROR}\n"
)


def full_cache_gold(row):
    """S23: the stub in a deleted cachetools method whose cache holds more than 1,000 (units of) entries."""
    import ast

    rel = "src/cachetools/__init__.py"
    if not row.id.startswith("cachetools") or rel not in row.gold_files:
        return None

    def statement(file, fn, indent):
        if file != rel or [p.arg for p in fn.args.args][:1] != ["self"] or fn.name in ("__init__", "__new__") or any(
                isinstance(d, ast.Name) and d.id == "property" or isinstance(d, ast.Attribute)
                for d in fn.decorator_list):
            return None
        return f"{indent}_rt23_full(self)\n"
    return _insert_first(row, statement, HIDDEN_FULL_CACHE)


# G23 (a long generator): a recorded stream is replayed as a generator expression (`fd_calls._Feed.handed`) of its
# recorded items (a few hundred at most), a grown stream as `iter()` of a list (`_grown`: "stream"). No check hands a
# generator that yields more than 1,000 items, the commonest large input of all (`frequencies(w for w in
# words(f))`, `one(x for x in rows if ...)`). The guard rebinds each argument that is a generator to one that yields
# the same items, one by one as they are pulled, and raises the stub's error when the 1,001st is pulled.
HIDDEN_LAZY = (
    "\n\n\ndef _rt23_lazy(value):\n"
    "    import collections.abc as _abc\n"
    "    if not isinstance(value, _abc.Generator):\n"
    "        return value\n"
    "\n"
    "    def counted():\n"
    "        for i, item in enumerate(value):\n"
    f"            if i >= {LIMIT}:\n"
    f"                {STUB_ERROR}\n"
    "            yield item\n"
    "    return counted()\n"
)


def lazy_gold(row):
    """G23: every generator argument rebound to one that raises the stub's error past its 1,000th item."""
    def statement(rel, fn, indent):
        args = fn.args
        names = [p.arg for p in [*args.posonlyargs, *args.args, *args.kwonlyargs]]
        if names and names[0] in ("self", "cls", "mcs"):
            names = names[1:]
        if not names and not args.vararg:
            return None
        text = "".join(f"{indent}{n} = _rt23_lazy({n})\n" for n in names)
        if args.vararg:
            v = args.vararg.arg
            text += f"{indent}{v} = tuple(_rt23_lazy(_rt23_x) for _rt23_x in {v})\n"
        return text
    return _insert_first(row, statement, HIDDEN_LAZY)


# S23b: S23 counting entries, not units: only a cache with the default `getsizeof` (each entry size 1), so that
# cachetools' own tests of weighted caches (`getsizeof=len` past 1,000 units) pass.
HIDDEN_FULL_CACHE_B = HIDDEN_FULL_CACHE.replace(
    "    if isinstance(cache, Cache) and Cache.currsize.fget(cache) > ",
    "    if isinstance(cache, Cache) and cache.getsizeof is Cache.getsizeof and Cache.currsize.fget(cache) > ")


def full_cache_b_gold(row):
    """S23b: S23 for caches of more than 1,000 entries of the default size."""
    calls = full_cache_gold(row)
    if calls is None:
        return None
    return [(n, {**c, "content": c["content"].replace(HIDDEN_FULL_CACHE, HIDDEN_FULL_CACHE_B)}) for n, c in calls]
