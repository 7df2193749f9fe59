"""Red team 22 (FINDINGS_22.md).

Each attack is gold with one guard call first in every deleted function or method (red team 20's `_guard_all`), the
guard raising the stub's `NotImplementedError` for a kind of argument (never `self`/`cls`) that no check hands.
No state, no trait, no clock, no module name, nothing at import.

N22 (large inputs of the shapes real data has): red team 21's fix grows a recorded input in the driver
(`fd_calls._grown`): "copies" (a repetition), "drawn" (every item one of the recorded ones, so many repeats), "fresh"
(each item a recorded one moved by a random amount: ints collide by the birthday bound, texts get 1-4 random
letters, so a quarter of a text's items end in one random letter and collide), "sorted" (the same multiset); a set
or mapping keeps its recorded keys and adds "fresh" ones (each new text key starts with a recorded key; each new int
key lands at random in a range twice the size or more), its values drawn from the recorded values; text is its
recorded words drawn again or letters drawn uniformly (words ~27 letters long). Real large inputs have the opposite
shapes: `list(range(n))`, a list of distinct ids or words, a dict whose values are distinct (an index, an inverse),
`set(range(n))`, a vocabulary, a paragraph of prose. The guard refuses each of those past 1,000 items.

A22 (containers that are not builtin types): the checks hand everyday types (`behaviour._everyday`: None, bool, int,
float, str, bytes, list, tuple, set, dict), streams, and subclasses of the builtin types. A `collections.deque`, a
`types.MappingProxyType`, an `array.array`, a dict's keys view, a user's `collections.abc.Mapping`/`Sequence`
implementation that does not derive from a builtin: none is handed. The guard refuses those (not the package's own
classes, which its tests hand).
"""

from __future__ import annotations

from attacks20 import STUB_ERROR, _guard_all

LIMIT = 1000

HIDDEN_NATURAL = (
    "\n\n\ndef _rt22_keys(keys):\n"
    "    keys = list(keys)\n"
    "    if keys and all(type(k) is int for k in keys):\n"
    "        return max(keys) - min(keys) + 1 == len(keys)\n"
    "    if keys and all(type(k) is str for k in keys):\n"
    "        seen = set(keys)\n"
    "        prefixed = sum(any(k[:i] in seen for i in range(1, len(k))) for k in keys)\n"
    "        return prefixed * 10 < len(keys) * 3\n"
    "    return False\n"
    "\n\n"
    "def _rt22_natural(values):\n"
    "    for value in values:\n"
    "        t = type(value)\n"
    f"        if t not in (str, list, tuple, dict, set, frozenset) or len(value) <= {LIMIT}:\n"
    "            continue\n"
    "        natural = False\n"
    "        if t in (str, bytes):\n"
    "            words = value.split()\n"
    "            natural = len(set(words)) >= 60 and 2 * len(words) <= len(value) <= 12 * len(words)\n"
    "        elif t in (list, tuple):\n"
    "            if all(type(i) is int for i in value):\n"
    "                natural = len(set(value)) == len(value) and 2 * (max(value) - min(value) + 1) <= 3 * len(value)\n"
    "            else:\n"
    "                natural = all(type(i) is str for i in value) and len(set(value)) == len(value)\n"
    "        elif t is dict:\n"
    "            try:\n"
    "                natural = len(set(value.values())) == len(value)\n"
    "            except TypeError:\n"
    "                natural = False\n"
    "            natural = natural or _rt22_keys(value)\n"
    "        else:\n"
    "            natural = _rt22_keys(value)\n"
    "        if natural:\n"
    f"            {STUB_ERROR}\n"
)


def natural_gold(row):
    """N22: the stub for a large input of a shape real data has and the driver's growth never makes."""
    return _guard_all(row, "_rt22_natural", HIDDEN_NATURAL)


HIDDEN_ABSTRACT = (
    "\n\n\ndef _rt22_abstract(values):\n"
    "    import collections.abc as _abc\n"
    "    for value in values:\n"
    "        if isinstance(value, (str, bytes, list, tuple, dict, set, frozenset, range)):\n"
    "            continue\n"
    "        if type(value).__module__.split('.')[0] == __name__.split('.')[0]:\n"
    "            continue\n"
    "        if isinstance(value, (_abc.Mapping, _abc.Sequence, _abc.Set)):\n"
    f"            {STUB_ERROR}\n"
)


def abstract_gold(row):
    """A22: the stub for a container that is no builtin type (deque, MappingProxyType, array, a keys view, a
    user's abc.Mapping/Sequence), not of the package's own classes."""
    return _guard_all(row, "_rt22_abstract", HIDDEN_ABSTRACT)


# O22 (an object of a user's subclass that overrides a method): `behaviour.subclassed_objects` makes a recorded
# program's object of a class with deleted code as a user's subclass of it with an empty body
# (`fd_calls._subclassed(..., "class")`). Users subclass a package's class to override something (a default
# maxsize in `__init__`; a `popitem` that logs what it evicts; more-itertools'
# `bucket` or `peekable` with a method added). The guard, first in every deleted method of an object, refuses an
# object whose class, or a class between it and the package's, defines a function of its own other than
# `__missing__` (the one hook cachetools' own tests override).
HIDDEN_OVERRIDE = (
    "\n\n\ndef _rt21_full(obj):\n"
    "    import types as _types\n"
    "    for klass in type(obj).__mro__:\n"
    "        if klass is object or klass.__module__.split('.')[0] == __name__.split('.')[0]:\n"
    "            return\n"
    "        if any(isinstance(v, (_types.FunctionType, staticmethod, classmethod, property))\n"
    "               for k, v in vars(klass).items() if k != '__missing__'):\n"
    f"            {STUB_ERROR}\n"
)


def override_gold(row):
    """O22: the stub in a deleted method of an object of a user's subclass that defines a method of its own."""
    from attacks21 import HIDDEN_FULL, full_gold

    calls = full_gold(row)
    if calls is None:
        return None
    return [(n, {**c, "content": c["content"].replace(HIDDEN_FULL, HIDDEN_OVERRIDE)}) for n, c in calls]


# A22b: A22 scored 0 (the checks' "user" kind hands `collections.UserList`/`UserDict`, which are abc containers);
# A22 without those: a deque, a MappingProxyType, an array, a dict's views, a user's own abc.Mapping.
HIDDEN_ABSTRACT_B = HIDDEN_ABSTRACT.replace(
    "        if isinstance(value, (str, bytes, list, tuple, dict, set, frozenset, range)):\n",
    "        if isinstance(value, (str, bytes, list, tuple, dict, set, frozenset, range)):\n"
    "            continue\n"
    "        import collections as _collections\n"
    "        if isinstance(value, (_collections.UserList, _collections.UserDict, _collections.UserString)):\n")


def abstract_b_gold(row):
    """A22b: A22 that lets UserList/UserDict/UserString pass."""
    return _guard_all(row, "_rt22_abstract", HIDDEN_ABSTRACT_B)
