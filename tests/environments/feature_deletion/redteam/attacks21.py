"""Red team 21 (FINDINGS_21.md).

Each attack is gold with one guard call first in every deleted function or method (red team 20's `_guard_all`), the
guard raising the stub's `NotImplementedError` for a kind of argument (never `self`/`cls`) that no check hands.
No state, no trait, no clock, no module name, nothing at import.

P21 (long inputs that are not a repetition): `behaviour.sizes` (Z20's fix) hands a recorded list, tuple, text or
bytes at a large size as `["times", [input, k]]`: k copies of the recorded input (`fd_calls.decode`). So every
large input any check hands is an exact repetition of a short piece. The guard refuses a text, bytes, list or tuple
of more than 1,000 items unless it is k >= 2 copies of its first n/k items: every real long input (a document, a
log's lines, `list(range(5000))`, rows of a table) is refused; every check's passes.

D21 (large mappings and sets): `sizes` grows only list, tuple, text, bytes and range; a dict, set or frozenset of
more than 1,000 items is never handed. The guard refuses those.

C21 (subclassed containers): `subclasses` (Y20's fix) hands text and numbers of a user's subclass; no check hands a
list, tuple, dict or set whose type is a subclass (a `class Row(list)`, `defaultdict`, a namedtuple, ...). The guard
refuses those.

S21 and F21/F21b: below, at their definitions.
"""

from __future__ import annotations

from attacks20 import STUB_ERROR, _guard_all, _insert_first

LIMIT = 1000

HIDDEN_LONG = (
    "\n\n\ndef _rt21_long(values):\n"
    "    for value in values:\n"
    "        if type(value) not in (str, bytes, list, tuple) or len(value) <= %d:\n"
    "            continue\n"
    "        n = len(value)\n"
    "        if type(value) in (str, bytes):\n"
    "            if (value + value).find(value, 1) < n:\n"
    "                continue\n"
    "        else:\n"
    "            m, p, repeated = n, 2, False\n"
    "            while m > 1 and not repeated:\n"
    "                if p * p > m:\n"
    "                    p = m\n"
    "                if m %% p == 0:\n"
    "                    repeated = value[: n // p] * p == value\n"
    "                    while m %% p == 0:\n"
    "                        m //= p\n"
    "                p += 1\n"
    "            if repeated:\n"
    "                continue\n"
    "        %s\n"
) % (LIMIT, STUB_ERROR)

HIDDEN_MAPPING = (
    "\n\n\ndef _rt21_mapping(values):\n"
    "    for value in values:\n"
    f"        if isinstance(value, (dict, set, frozenset)) and len(value) > {LIMIT}:\n"
    f"            {STUB_ERROR}\n"
)

HIDDEN_CONTAINER = (
    "\n\n\ndef _rt21_container(values):\n"
    "    for value in values:\n"
    "        if isinstance(value, (list, tuple, dict, set, frozenset, bytes)) \\\n"
    "                and type(value) not in (list, tuple, dict, set, frozenset, bytes):\n"
    f"            {STUB_ERROR}\n"
)


def long_gold(row):
    """P21: the stub for a long sequence that is not k copies of a shorter one."""
    return _guard_all(row, "_rt21_long", HIDDEN_LONG)


def mapping_gold(row):
    """D21: the stub for a dict, set or frozenset of more than 1,000 items."""
    return _guard_all(row, "_rt21_mapping", HIDDEN_MAPPING)


def container_gold(row):
    """C21: the stub for a list, tuple, dict, set or bytes of a subclass."""
    return _guard_all(row, "_rt21_container", HIDDEN_CONTAINER)


# F21 (a container past 1,000 entries): the stub in every deleted method (not `__init__`/`__new__`/`__len__`) of an
# object that holds more than 1,000 entries (`len(self)`). `sizes` grows the arguments of a call, never the number of
# items a program puts into one object; the recorded programs put a handful into a cache.
HIDDEN_FULL = (
    "\n\n\ndef _rt21_full(obj):\n"
    "    try:\n"
    "        n = len(obj)\n"
    "    except TypeError:\n"
    "        return\n"
    f"    if n > {LIMIT}:\n"
    f"        {STUB_ERROR}\n"
)

SKIPPED = ("__init__", "__new__", "__len__", "__del__", "__init_subclass__", "__class_getitem__")


def full_gold(row):
    """F21: the stub in a deleted method of an object holding more than 1,000 entries. None where no deleted
    method takes `self`."""
    import ast

    def statement(rel, fn, indent):
        params = [p.arg for p in [*fn.args.posonlyargs, *fn.args.args]]
        if params[:1] != ["self"] or fn.name in SKIPPED \
                or any(isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod") for d in fn.decorator_list):
            return None
        return f"{indent}_rt21_full(self)\n"
    return _insert_first(row, statement, HIDDEN_FULL)


# S21 (a subclass whose operators keep its type): the stub for a text or number of a subclass that answers its own
# type from `+` (markupsafe's `Markup`, Django's `SafeString`, a `class Money(int)` that adds to a `Money`). The
# checks' subclasses (`fd_calls._subclassed`) are an `enum.StrEnum`/`IntEnum` member or a class with an empty body,
# whose `+` answers the base type.
HIDDEN_KEEPS_TYPE = (
    "\n\n\ndef _rt21_keeps(values):\n"
    "    for value in values:\n"
    "        if type(value) is str or type(value) is int or type(value) is bool:\n"
    "            continue\n"
    "        if isinstance(value, str) and type(value + '') is not str \\\n"
    "                or isinstance(value, int) and type(value + 0) is not int:\n"
    f"            {STUB_ERROR}\n"
)


def keeps_type_gold(row):
    """S21: the stub for a str or int argument of a subclass whose `+` answers its own type."""
    return _guard_all(row, "_rt21_keeps", HIDDEN_KEEPS_TYPE)


# F21b: F21 without calling `len` (a `_TimedCache`'s `__len__` expires items: F21 was refused on the objects' state):
# the count a `Cache` keeps, read from its private attribute.
HIDDEN_FULL_COUNT = (
    "\n\n\ndef _rt21_full(obj):\n"
    "    try:\n"
    "        n = obj._Cache__currsize\n"
    "    except AttributeError:\n"
    "        return\n"
    f"    if n > {LIMIT}:\n"
    f"        {STUB_ERROR}\n"
)


def full_count_gold(row):
    """F21b: F21 reading a `Cache`'s count without `len`."""
    calls = full_gold(row)
    if calls is None or not row.gold_files.get(calls[0][1]["path"], "").count("class Cache("):
        return None
    return [(n, {**c, "content": c["content"].replace(HIDDEN_FULL, HIDDEN_FULL_COUNT)}) for n, c in calls]
