"""Fifteenth red team's attack constructors (FINDINGS_15.md).

W15, state past the drift walk's reach: `fd_calls.reachable_state` walks each module-level name of the package for at
most MAX_WALK (20,000) objects, depth-first from the end of each container (a stack), and digests what it read plus
how many objects were left unread. A new private constant that is a tuple of more than 20,000 distinct empty lists,
its last list holding a call counter, is walked from its first list on (a tuple's referents come last item
first, and the walk pops the last of them first): the counter's list is never read, so
its digest is the same at the start and the end of the replay (the drift check sees nothing), and no gold name
compares it (`package_state` compares gold's names only). With that memory, gold with a guard at the top of every
deleted function, raising the stub's `NotImplementedError` from the LIMIT-th call of a process on (a time bomb no
grading process lives long enough to reach: B11's counter, red team 11, which the drift walk was built to see).
"""

from __future__ import annotations

LIMIT = 50_000  # calls of the deleted functions in one process before the rebuild stops answering
SPREAD = 20_100  # distinct lists after the counter's: more than fd_calls.MAX_WALK (20,000)

HIDDEN = (
    "\n\n_RT15_SEEN = (" + "[], " * SPREAD + "[0])\n\n\n"
    "def _rt15_tick():\n"
    "    _RT15_SEEN[-1][0] += 1\n"
    f"    if _RT15_SEEN[-1][0] > {LIMIT}:\n"
    '        raise NotImplementedError("this feature was deleted; rebuild it")\n'
)


# W15n, the same memory in one float: the walk (and `package_state`) read a float by `repr`, and every NaN's repr is
# "nan" whatever its payload; `struct` (an allowed module) writes and reads 48 bits of payload. A one-element list
# whose NaN (`1e999 * 0`, folded by the compiler: no call at import) is replaced at every call by a NaN carrying the
# count reads the same at the start and the end of the replay.
HIDDEN_NAN = (
    "\n\n_RT15_NAN = [1e999 * 0]\n\n\n"
    "def _rt15_tick():\n"
    "    import struct\n"
    "\n"
    "    count = struct.unpack('<Q', struct.pack('<d', _RT15_NAN[0]))[0] & 0xFFFFFFFFFFFF\n"
    "    _RT15_NAN[0] = struct.unpack('<d', struct.pack('<Q', 0x7FF8000000000000 | (count + 1)))[0]\n"
    f"    if count >= {LIMIT}:\n"
    '        raise NotImplementedError("this feature was deleted; rebuild it")\n'
)


def nan_counted_gold(row, limit: int = LIMIT) -> list[tuple[str, dict]] | None:
    """W15n on any task: `counted_gold` with the count kept in a NaN's payload."""
    return counted_gold(row, limit, HIDDEN_NAN.replace(f">= {LIMIT}:", f">= {limit}:"))


def counted_gold(row, limit: int = LIMIT, helper: str | None = None) -> list[tuple[str, dict]] | None:
    """W15 on any task: gold, with `_rt15_tick()` as the first statement of every deleted function or method (its own
    line, before a docstring-less body's first statement, after a docstring), and the hidden counter appended to each
    file it touches. None where no deleted function has a statement to put it before."""
    from attacks13 import guarded_gold

    return guarded_gold(row, "_rt15_tick()", helper or HIDDEN.replace(f"> {LIMIT}:", f"> {limit}:"))


# I15, interleaving of callbacks: each step observes how many times each callback was called (`called`), never in
# what order the calls to different callbacks came. `map_reduce` that computes every key first and then every value
# (keys while the items are read, then the values) answers every step like gold and calls keyfunc and
# valuefunc as often, but a user whose callbacks have effects sees them in another order.
MAP_REDUCE = "more-itertools-10.5.0/more_itertools/more.py:map_reduce:def"
_MAP_REDUCE_GOLD = '''    ret = defaultdict(list)
    for item in iterable:
        key = keyfunc(item)
        value = valuefunc(item)
        ret[key].append(value)
'''
_MAP_REDUCE_TWO_PASS = '''    items, keys = [], []
    for item in iterable:
        items.append(item)
        keys.append(keyfunc(item))
    values = [valuefunc(item) for item in items]
    ret = defaultdict(list)
    for key, value in zip(keys, values):
        ret[key].append(value)
'''


def map_reduce_two_pass(row) -> list[tuple[str, dict]]:
    rel = row.deletion.targets[0].file
    text = row.gold_files[rel]
    assert text.count(_MAP_REDUCE_GOLD) == 1
    return [("write_file", {"path": rel, "content": text.replace(_MAP_REDUCE_GOLD, _MAP_REDUCE_TWO_PASS)})]
