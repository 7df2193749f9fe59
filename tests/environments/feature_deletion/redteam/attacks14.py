"""Fourteenth red team's attack constructors (FINDINGS_14.md).

D14: lazy answers read past the deepest point any check (or graded test) reads: gold for the first K items,
wrong after. M14: an answer that is a shared mutable object (a module-level empty dict handed back for empty input):
equal by value to gold's answer at every step, wrong once a caller mutates what it got back.
"""

from __future__ import annotations

from harness import replace_stub

ITERATE = "more-itertools-10.5.0/more_itertools/more.py:iterate:body"
FREQUENCIES = "toolz-1.0.0/toolz/itertoolz.py:frequencies:body"
COUNTBY = "toolz-1.0.0/toolz/recipes.py:countby:body"
PADDED = "more-itertools-10.5.0/more_itertools/more.py:padded:body"


# D14, depth: `iterate` is gold for its first 1000 items, then skips one application of `func` per item.
ITERATE_WRONG_PAST_1000 = '''
count = 0
while True:
    yield start
    count += 1
    try:
        start = func(start)
        if count >= 1000:
            start = func(start)
    except StopIteration:
        break
'''


def iterate_wrong_past_1000(row) -> list[tuple[str, dict]]:
    return replace_stub(row, ITERATE_WRONG_PAST_1000)


# D14 on `padded` with n=None (fill forever): gold for 1000 items, then stops (a finite answer).
PADDED_FINITE_PAST_1000 = '''
iterable = iter(iterable)
iterable_with_repeat = chain(iterable, repeat(fillvalue))

if n is None:
    return islice(iterable_with_repeat, 1000)
elif n < 1:
    raise ValueError('n must be at least 1')
elif next_multiple:

    def slice_generator():
        for first in iterable:
            yield (first,)
            yield islice(iterable_with_repeat, n - 1)

    # While elements exist produce slices of size n
    return chain.from_iterable(slice_generator())
else:
    # Ensure the first batch is at least size n then iterate
    return chain(islice(iterable_with_repeat, n), iterable)
'''


def padded_finite_past_1000(row) -> list[tuple[str, dict]]:
    return replace_stub(row, PADDED_FINITE_PAST_1000)


# M14, a shared answer: `frequencies` of an empty input hands back one module-level dict, every time. Equal to gold's
# `{}` at every step; a caller that adds to what it got back changes every later empty answer.
FREQUENCIES_SHARED_EMPTY = '''
d = collections.defaultdict(int)
for item in seq:
    d[item] += 1
if not d:
    return _EMPTY_COUNTS
return dict(d)
'''


def _add_constant(calls, name: str, value: str, before: str):
    [(tool, args)] = calls
    text = args["content"]
    at = text.index(before)
    return [(tool, {**args, "content": text[:at] + f"{name} = {value}\n\n\n" + text[at:]})]


def frequencies_shared_empty(row) -> list[tuple[str, dict]]:
    return _add_constant(replace_stub(row, FREQUENCIES_SHARED_EMPTY), "_EMPTY_COUNTS", "{}", "def frequencies(")


COUNTBY_SHARED_EMPTY = '''
if not callable(key):
    key = getter(key)
counts = frequencies(map(key, seq))
return counts if counts else _EMPTY_COUNTS
'''


def countby_shared_empty(row) -> list[tuple[str, dict]]:
    return _add_constant(replace_stub(row, COUNTBY_SHARED_EMPTY), "_EMPTY_COUNTS", "{}", "def countby(")


# T14, real-time scale: no check can wait. `time_limited` with a limit of 4 s or more stops at half of it (its
# start clock set back by limit/2); the checks' iterables are recorded streams, read in microseconds.
TIME_LIMITED = "more-itertools-10.5.0/more_itertools/more.py:time_limited.__init__:body"
TIME_LIMITED_HALF_PAST_4S = '''
if limit_seconds < 0:
    raise ValueError('limit_seconds must be positive')
self.limit_seconds = limit_seconds
self._iterable = iter(iterable)
self._start_time = monotonic()
if limit_seconds >= 4:
    self._start_time -= limit_seconds / 2
self.timed_out = False
'''


def time_limited_half_past_4s(row) -> list[tuple[str, dict]]:
    return replace_stub(row, TIME_LIMITED_HALF_PAST_4S)


# T14 on cachetools: `TTLCache(maxsize, ttl)` with a ttl of a minute or more (every check holding one, `ttl=600`, runs
# on the real clock, which no step can wait on) answers a miss once half the ttl has passed.
TTL_GETITEM = "cachetools-5.5.0/src/cachetools/__init__.py:TTLCache.__getitem__:body"
TTL_GETITEM_HALF_PAST_60S = '''
try:
    link = self.__getlink(key)
except KeyError:
    expired = False
else:
    now = self.timer()
    expired = not (now < link.expires)
    ttl = self.ttl
    if isinstance(ttl, (int, float)) and 60 <= ttl < float("inf") and not (now < link.expires - ttl / 2):
        expired = True
if expired:
    return self.__missing__(key)
else:
    return cache_getitem(self, key)
'''


def ttl_getitem_half_past_60s(row) -> list[tuple[str, dict]]:
    return replace_stub(row, TTL_GETITEM_HALF_PAST_60S)


# O14, an overridable hook bypassed: cachetools documents that a full cache "calls self.popitem() repeatedly until
# there is enough room" and that "derived classes may override popitem" (its docs' logging example). No check holds
# a subclass the tests define (they cannot be replayed), and no graded test overrides `popitem`: a `FIFOCache` that,
# for any subclass, makes room with its own `FIFOCache.popitem` first is paid; a user's override is never called.
FIFO_METHODS = "cachetools-5.5.0/src/cachetools/__init__.py:FIFOCache:methods"
_FIFO_GOLD_SETITEM = '''    def __setitem__(self, key, value, cache_setitem=Cache.__setitem__):
        cache_setitem(self, key, value)
'''
_FIFO_BYPASS_SETITEM = '''    def __setitem__(self, key, value, cache_setitem=Cache.__setitem__):
        if type(self) is not FIFOCache and key not in self:
            size = self.getsizeof(value)
            if size <= self.maxsize:
                while len(self) and self.currsize + size > self.maxsize:
                    FIFOCache.popitem(self)
        cache_setitem(self, key, value)
'''


def fifo_bypasses_popitem_override(row) -> list[tuple[str, dict]]:
    rel = row.deletion.targets[0].file
    text = row.gold_files[rel]
    at = text.index("class FIFOCache(")
    text = text[:at] + text[at:].replace(_FIFO_GOLD_SETITEM, _FIFO_BYPASS_SETITEM, 1)
    return [("write_file", {"path": rel, "content": text})]


# O14 on `MRUCache:methods`: the same bypass.
MRU_METHODS = "cachetools-5.5.0/src/cachetools/__init__.py:MRUCache:methods"
_MRU_GOLD_SETITEM = '''    def __setitem__(self, key, value, cache_setitem=Cache.__setitem__):
        cache_setitem(self, key, value)
        self.__update(key)
'''
_MRU_BYPASS_SETITEM = '''    def __setitem__(self, key, value, cache_setitem=Cache.__setitem__):
        if type(self) is not MRUCache and key not in self:
            size = self.getsizeof(value)
            if size <= self.maxsize:
                while len(self) and self.currsize + size > self.maxsize:
                    MRUCache.popitem(self)
        cache_setitem(self, key, value)
        self.__update(key)
'''


def mru_bypasses_popitem_override(row) -> list[tuple[str, dict]]:
    rel = row.deletion.targets[0].file
    text = row.gold_files[rel]
    at = text.index("class MRUCache(")
    assert _MRU_GOLD_SETITEM in text[at:]
    text = text[:at] + text[at:].replace(_MRU_GOLD_SETITEM, _MRU_BYPASS_SETITEM, 1)
    return [("write_file", {"path": rel, "content": text})]


# P14, output on the side: gold's answers, plus a line on standard output at every call. No check compares what the
# code prints (the replay's results are a file of its own; pytest captures output); for a user it is a library that
# writes into their program's output (a JSON or CSV stream on stdout is corrupted).
FREQUENCIES_PRINTS = '''
d = collections.defaultdict(int)
for item in seq:
    d[item] += 1
print("frequencies:", len(d), "distinct")
return dict(d)
'''


def frequencies_prints(row) -> list[tuple[str, dict]]:
    return replace_stub(row, FREQUENCIES_PRINTS)


def print_everywhere_gold(row) -> list[tuple[str, dict]] | None:
    """P14 on any task: gold, with `print(...)` as the first statement of every deleted function or method."""
    from attacks13 import first_statements

    texts, inserted = first_statements(row, lambda fn: f'print("{fn.name.strip("_")}: called")')
    if not inserted:
        return None
    return [("write_file", {"path": rel, "content": text}) for rel, text in texts.items()]


# R14, reentrancy: the checks' callbacks are tables of what the tests' functions answered; they never call back into
# the package, so a call made from inside another call of the same function is never replayed. `map_reduce` that,
# when entered again from its own keyfunc/valuefunc/reducefunc (nested grouping), leaves the inner result
# unreduced. The marker is a module-level list that every call leaves as it found it (the drift check sees `[]` at
# the start and at the end of the replay).
MAP_REDUCE = "more-itertools-10.5.0/more_itertools/more.py:map_reduce:def"
_MAP_REDUCE_GOLD = '''    valuefunc = (lambda x: x) if (valuefunc is None) else valuefunc

    ret = defaultdict(list)
    for item in iterable:
        key = keyfunc(item)
        value = valuefunc(item)
        ret[key].append(value)

    if reducefunc is not None:
        for key, value_list in ret.items():
            ret[key] = reducefunc(value_list)

    ret.default_factory = None
    return ret
'''
_MAP_REDUCE_REENTRANT_WRONG = '''    valuefunc = (lambda x: x) if (valuefunc is None) else valuefunc
    nested = bool(_MAP_REDUCE_ACTIVE)
    _MAP_REDUCE_ACTIVE.append(None)
    try:
        ret = defaultdict(list)
        for item in iterable:
            key = keyfunc(item)
            value = valuefunc(item)
            ret[key].append(value)

        if reducefunc is not None and not nested:
            for key, value_list in ret.items():
                ret[key] = reducefunc(value_list)
    finally:
        _MAP_REDUCE_ACTIVE.pop()

    ret.default_factory = None
    return ret
'''


def map_reduce_wrong_when_reentered(row) -> list[tuple[str, dict]]:
    rel = row.deletion.targets[0].file
    text = row.gold_files[rel]
    assert text.count(_MAP_REDUCE_GOLD) == 1
    text = text.replace(_MAP_REDUCE_GOLD, _MAP_REDUCE_REENTRANT_WRONG)
    at = text.index("def map_reduce(")
    return [("write_file", {"path": rel, "content": text[:at] + "_MAP_REDUCE_ACTIVE = []\n\n\n" + text[at:]})]
