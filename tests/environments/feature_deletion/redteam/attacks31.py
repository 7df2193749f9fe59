"""Red team 31 (FINDINGS_31.md).

Each attack is gold with statements first in every deleted function or method (red team 20's `_insert_first`): no
state read from the process, no trait, no clock, no module name, nothing at import. C31, K31, B31 are no guards (they
rebind an argument: a callable, a generator); G31 and R31 are guards (the stub's `NotImplementedError` on a kind of
use or input users really have).

What the driver (`fd_calls`) does not read, found by reading `Driver.step`, `_Table.answer`, `_Feed`, `feeding`,
`_shared`, `_state` and `_iterable_as`:

- **what object a callback is handed**: `_Table.answer` keys a call by its arguments' *values*
  (`encode(a, opaque)`), and the "called" digest is of those keys; a callback handed a copy of the user's row (a
  list, a dict) answers as one handed the row itself, so a rebuild that copies each item before calling the key
  function is never told apart (C31). What a user's key function does to the item it is handed (memoise a field on
  it, pop a field, keep it by identity) then lands on a copy the user never sees;
- **what object a callback answered**: each table answer is decoded afresh, and is in no `handed` set, so an answer
  that holds the callback's returned list or dict and one that holds a copy of it are alike (K31);
- **when a stream's items are pulled relative to the callback's calls**: `_Feed` counts items taken per step and
  `_Table` counts (and orders) its own calls, but nothing orders the two against each other: a rebuild that reads the
  whole generator into a list before it calls the key function once (memory O(n) where gold streams) answers, takes
  and calls alike (B31);
- **the package called from inside the user's generator**: `Driver.reenter` makes a call of the package from a
  callback's table only; a stream's `_Feed.__next__` never calls back into the package, so code that is not
  reentrant while it pulls from the user's iterator (a module-level scratch buffer, a "busy" flag) is never seen
  (G31: the stub there);
- **an iterable that is neither a sized container nor an iterator**: `_abstract` hands Mapping/Sequence/Set classes
  (all sized) and `_iterable_as` iterators; a user's class with `__iter__` only (a re-iterable dataset, a tree that
  yields its nodes, a reader object) is never handed (R31: the stub there).
"""

from __future__ import annotations

from attacks20 import STUB_ERROR, _insert_first
from attacks24 import WALK
from attacks27 import _guard_all, _package
from attacks29 import WRAP, _rebind_with

OWN = (
    "\n\n\ndef _rt31_own(value):\n"
    "    return str(getattr(value, '__module__', None)).split('.')[0] == _RT31_PACKAGE\n"
)


def _with_own(row, statement, hidden):
    """`_insert_first` with `_rt31_own` (a callable of the package itself, as cachetools' `cache_getitem=` default,
    is left as it is) and the package's name."""
    return _insert_first(row, statement, hidden + OWN + f"\n\n_RT31_PACKAGE = {_package(row)!r}\n")


# C31: every callable argument handed copies of the lists, dicts and sets it is called with (a rebuild that
# normalises each item before calling the key: `key(dict(row))`, `key(list(item))`)
COPIED_ARGS = (
    "\n\n\ndef _rt31_copy_args(value):\n"
    "    import copy as _copy\n"
    "    import functools as _functools\n"
    "    if not callable(value) or isinstance(value, type) or _rt31_own(value):\n"
    "        return value\n"
    "\n"
    "    def fresh(a):\n"
    "        return _copy.copy(a) if type(a) in (list, dict, set) else a\n"
    "\n"
    "    @_functools.wraps(value)\n"
    "    def copying(*args, **kwargs):\n"
    "        return value(*[fresh(a) for a in args], **{k: fresh(v) for k, v in kwargs.items()})\n"
    "    return copying\n"
)


def callback_copies_gold(row):
    """C31: gold's answers, but every callable argument is called with copies of the lists, dicts and sets gold hands
    it: the user's key function never sees the user's own row."""
    return _with_own(row, _rebind_with("_rt31_copy_args("), COPIED_ARGS)


# K31: every callable argument's list, dict or set answers copied (a rebuild that normalises what the key or value
# function gives back: `list(valuefunc(item))`)
COPIED_ANSWERS = (
    "\n\n\ndef _rt31_copy_answers(value):\n"
    "    import copy as _copy\n"
    "    import functools as _functools\n"
    "    if not callable(value) or isinstance(value, type) or _rt31_own(value):\n"
    "        return value\n"
    "\n"
    "    @_functools.wraps(value)\n"
    "    def copying(*args, **kwargs):\n"
    "        answer = value(*args, **kwargs)\n"
    "        return _copy.copy(answer) if type(answer) in (list, dict, set) else answer\n"
    "    return copying\n"
)


def answer_copies_gold(row):
    """K31: gold, but the lists, dicts and sets a callable argument answers are copied before gold uses them: an
    answer holding them holds copies, not the objects the user's function returned."""
    return _with_own(row, _rebind_with("_rt31_copy_answers("), COPIED_ANSWERS)


# B31: a generator argument read whole before gold runs (its error, if any, kept and raised where gold would meet
# it), then replayed as a generator of the same name: memory O(n) where gold streams, and every item pulled before the
# key function is called once
WHOLE = WRAP + (
    "\n\n\ndef _rt31_replayed(items, error):\n"
    "    for item in items:\n"
    "        yield item\n"
    "    if error is not None:\n"
    "        raise error\n"
    "\n\n"
    "def _rt31_read_whole(value):\n"
    "    if type(value).__name__ != 'generator' or type(value).__module__ != 'builtins':\n"
    "        return value\n"
    "    items, error = [], None\n"
    "    while True:\n"
    "        try:\n"
    "            items.append(next(value))\n"
    "        except StopIteration:\n"
    "            break\n"
    "        except Exception as exc:\n"
    "            error = exc\n"
    "            break\n"
    "    return _rt29_wrap(value, lambda _: _rt31_replayed(items, error))\n"
)


def read_whole_gold(row):
    """B31: gold's answers, but each generator argument is read to its end (or its error) before gold runs."""
    return _insert_first(row, _rebind_with("_rt31_read_whole("), WHOLE)


# G31: the stub where the package is called from inside the user's generator while a deleted function pulls from it
# (`frequencies(tuple(sorted(frequencies(w).items())) for w in words)`: anagram classes); a rebuild with a
# module-level scratch table or a "busy" flag is not reentrant there
REENTRY = WRAP + (
    "\n\n\n_RT31_PULLING = [0]\n"
    "\n\n"
    "def _rt31_pulled(it):\n"
    "    while True:\n"
    "        _RT31_PULLING[0] += 1\n"
    "        try:\n"
    "            item = next(it)\n"
    "        except StopIteration:\n"
    "            return\n"
    "        finally:\n"
    "            _RT31_PULLING[0] -= 1\n"
    "        yield item\n"
    "\n\n"
    "def _rt31_reentry(value):\n"
    "    if _RT31_PULLING[0]:\n"
    f"        {STUB_ERROR}\n"
    "    if type(value).__name__ != 'generator' or type(value).__module__ != 'builtins':\n"
    "        return value\n"
    "    return _rt29_wrap(value, _rt31_pulled)\n"
)


def reentry_gold(row):
    """G31: the stub for a call of a deleted function made from inside a generator another deleted call is pulling
    from (the package used within the user's generator expression); gold otherwise."""
    return _insert_first(row, _rebind_with("_rt31_reentry("), REENTRY)


# R31: an iterable of a user's class that has `__iter__` only (no `__len__`, no `__next__`): a re-iterable dataset,
# a tree yielding its nodes, a reader object
HIDDEN_UNSIZED = WALK + (
    "\n\n\ndef _rt31_unsized_iterable(value):\n"
    "    kind = type(value)\n"
    "    if isinstance(value, (str, bytes, type)) or kind.__module__ in ('builtins', 'collections', 'itertools'):\n"
    "        return False\n"
    "    if not hasattr(kind, '__iter__') or hasattr(kind, '__next__') or hasattr(kind, '__len__'):\n"
    "        return False\n"
    "    return not any(str(c.__module__).split('.')[0] == _RT27_PACKAGE for c in type.mro(kind))\n"
    "\n\n"
    "def _rt31_unsized(values):\n"
    "    _rt24_walk(values, _rt31_unsized_iterable)\n"
)


def unsized_gold(row):
    """R31: the stub for an iterable of a user's class with `__iter__` only (an argument or an item two levels
    down)."""
    return _guard_all(row, "_rt31_unsized", HIDDEN_UNSIZED)


# B31's control: generator arguments refused (scored 0 where the checks hand the code a generator)
HIDDEN_GENERATOR_REFUSED = (
    "\n\n\ndef _rt31_generators(values):\n"
    "    for value in values:\n"
    "        if type(value).__name__ == 'generator' and type(value).__module__ == 'builtins':\n"
    f"            {STUB_ERROR}\n"
)


def generator_refused_gold(row):
    """B31c (control): the stub for a generator argument (those B31 and G31 rebind)."""
    return _guard_all(row, "_rt31_generators", HIDDEN_GENERATOR_REFUSED)


# E31: the user's own error remade: an exception a callable argument or a generator argument raises is re-raised as a
# copy (`copy.copy`: same type, args and attributes, its notes too) `from None` (a rebuild that "cleans up" the
# user's error: `except Exception as exc: raise type(exc)(*exc.args) from None`). `fd_calls._raised` reads the type,
# the args, the notes and the chain the observed error *shows* (`from None` shows none); nothing reads the error's
# identity, its traceback (the user's failing line is gone: it points into the package), or the chain of the user's
# own error (its `__context__`/`__cause__`: a key function's `raise ValueError(...)` inside an `except KeyError`)
REMADE = WRAP + (
    "\n\n\ndef _rt31_remade(exc):\n"
    "    import copy as _copy\n"
    "    try:\n"
    "        return _copy.copy(exc)\n"
    "    except Exception:\n"
    "        return exc\n"
    "\n\n"
    "def _rt31_remade_stream(it):\n"
    "    while True:\n"
    "        try:\n"
    "            item = next(it)\n"
    "        except StopIteration:\n"
    "            return\n"
    "        except Exception as exc:\n"
    "            raise _rt31_remade(exc) from None\n"
    "        yield item\n"
    "\n\n"
    "def _rt31_remake_errors(value):\n"
    "    import functools as _functools\n"
    "    if type(value).__name__ == 'generator' and type(value).__module__ == 'builtins':\n"
    "        return _rt29_wrap(value, _rt31_remade_stream)\n"
    "    if not callable(value) or isinstance(value, type) or _rt31_own(value):\n"
    "        return value\n"
    "\n"
    "    @_functools.wraps(value)\n"
    "    def remaking(*args, **kwargs):\n"
    "        try:\n"
    "            return value(*args, **kwargs)\n"
    "        except StopIteration:\n"
    "            raise\n"
    "        except Exception as exc:\n"
    "            raise _rt31_remade(exc) from None\n"
    "    return remaking\n"
)


def errors_remade_gold(row):
    """E31: gold's answers and errors by type, args and shown chain; but the error a user's callable or generator
    raises is re-raised as a copy `from None`: its identity, traceback and own chain are lost."""
    return _with_own(row, _rebind_with("_rt31_remake_errors("), REMADE)


# G31b: the stub where the package is called from inside a callback's second or later call (a key function that
# itself groups or counts: `countby(lambda ws: len(frequencies(ws)), groups)`). `behaviour.reentries` makes the
# reentrant call at a callback's *first* call only; a rebuild with a module-level scratch table (cleared on entry,
# filled item by item) is wrong exactly from the second item on, when the outer call's table already holds entries
REENTRY_LATER = (
    "\n\n\n_RT31_CALLBACK = [0]\n"
    "\n\n"
    "def _rt31_reentered_later(value):\n"
    "    import functools as _functools\n"
    "    if _RT31_CALLBACK[0] > 1:\n"
    f"        {STUB_ERROR}\n"
    "    if not callable(value) or isinstance(value, type) or _rt31_own(value):\n"
    "        return value\n"
    "    calls = [0]\n"
    "\n"
    "    @_functools.wraps(value)\n"
    "    def counted(*args, **kwargs):\n"
    "        calls[0] += 1\n"
    "        outer, _RT31_CALLBACK[0] = _RT31_CALLBACK[0], calls[0]\n"
    "        try:\n"
    "            return value(*args, **kwargs)\n"
    "        finally:\n"
    "            _RT31_CALLBACK[0] = outer\n"
    "    return counted\n"
)


def reentry_later_gold(row):
    """G31b: the stub for a call of a deleted function made from inside a callback's second or later call (gold at
    the first, where `behaviour.reentries` reenters)."""
    return _with_own(row, _rebind_with("_rt31_reentered_later("), REENTRY_LATER)


# F31: the user's function given an attribute of the code's own (a memo kept on the key function: `key.rt31_seen`,
# as M30 kept one on the user's object); `fd_calls` compares no callable's attributes (a test's callback is a
# `_stub` function, a user object's `__call__`, a partial): every answer gold's, the user's function changed
MARKED_CALLABLE = (
    "\n\n\ndef _rt31_mark_callable(value):\n"
    "    if callable(value) and not isinstance(value, type) and not _rt31_own(value):\n"
    "        try:\n"
    "            value.rt31_seen = True\n"
    "        except (AttributeError, TypeError):\n"
    "            pass\n"
    "    return value\n"
)


def callable_marked_gold(row):
    """F31: gold's answers; each callable argument gets an attribute of the code's own (where it takes one)."""
    return _with_own(row, _rebind_with("_rt31_mark_callable("), MARKED_CALLABLE)


# R31b: an iterator of a user's own class (`__iter__` returning self and `__next__`: a paginator, a reader, a
# tokenizer); `_iterable_as` hands builtin iterators only (generators, map, zip, csv.reader, a file's lines, ...)
HIDDEN_USERS_ITERATOR = WALK + (
    "\n\n\ndef _rt31_users_iterator_kind(value):\n"
    "    kind = type(value)\n"
    "    if isinstance(value, (str, bytes, type)) or not hasattr(kind, '__next__') or not hasattr(kind, '__iter__'):\n"
    "        return False\n"
    "    if str(kind.__module__).split('.')[0] in ('builtins', 'collections', 'itertools', 'csv', '_csv', 'io',\n"
    "                                             '_io', 'codecs', 'functools', 'operator', 'enum', 'typing', 're',\n"
    "                                             'os'):\n"
    "        return False\n"
    "    return not any(str(c.__module__).split('.')[0] == _RT27_PACKAGE for c in type.mro(kind))\n"
    "\n\n"
    "def _rt31_users_iterators(values):\n"
    "    _rt24_walk(values, _rt31_users_iterator_kind)\n"
)


def users_iterator_gold(row):
    """R31b: the stub for an iterator of a user's own class (an argument or an item two levels down)."""
    return _guard_all(row, "_rt31_users_iterators", HIDDEN_USERS_ITERATOR)


# P31: B31 where a callback meets a generator: the generator read whole *with* the key function called on each item
# as it is read (as gold interleaves them), the keys kept, then gold served the items and the kept answers (a rebuild
# that materialises `keys = [key(x) for x in seq]` before it counts): the same pulls, the same calls in the same
# order, the same error at the same point; memory O(n) where gold streams
PREFETCH = WRAP + (
    "\n\n\ndef _rt31_replay_items(items):\n"
    "    for item in items:\n"
    "        yield item\n"
    "\n\n"
    "def _rt31_prefetch(values):\n"
    "    import functools as _functools\n"
    "    fns = [i for i, v in enumerate(values) if callable(v) and not isinstance(v, type) and not _rt31_own(v)]\n"
    "    gens = [i for i, v in enumerate(values)\n"
    "            if type(v).__name__ == 'generator' and type(v).__module__ == 'builtins']\n"
    "    if len(fns) != 1 or len(gens) != 1:\n"
    "        return values\n"
    "    fn, gen = values[fns[0]], values[gens[0]]\n"
    "    items, kept, error = [], [], None\n"
    "    while True:\n"
    "        try:\n"
    "            item = next(gen)\n"
    "        except StopIteration:\n"
    "            break\n"
    "        except Exception as exc:\n"
    "            error = exc\n"
    "            break\n"
    "        items.append(item)\n"
    "        try:\n"
    "            kept.append((item, True, fn(item)))\n"
    "        except Exception as exc:\n"
    "            kept.append((item, False, exc))\n"
    "            break\n"
    "\n"
    "    def replay():\n"
    "        yield from _rt31_replay_items(items)\n"
    "        if error is not None:\n"
    "            raise error\n"
    "\n"
    "    @_functools.wraps(fn)\n"
    "    def answered(*args, **kwargs):\n"
    "        if len(args) == 1 and not kwargs and kept and args[0] is kept[0][0]:\n"
    "            _, ok, answer = kept.pop(0)\n"
    "            if not ok:\n"
    "                raise answer\n"
    "            return answer\n"
    "        return fn(*args, **kwargs)\n"
    "    out = list(values)\n"
    "    out[fns[0]], out[gens[0]] = answered, _rt29_wrap(gen, lambda _: replay())\n"
    "    return tuple(out)\n"
)


def _prefetch_lines(rel, fn, indent):
    a = fn.args
    params = [p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]]
    if params and params[0] in ("self", "cls", "mcs"):
        params = params[1:]
    if len(params) < 2:
        return None
    joined = ", ".join(params)
    return f"{indent}({joined},) = _rt31_prefetch(({joined},))\n"


def prefetched_gold(row):
    """P31: gold's answers; where a deleted call is handed one callable and one generator, the generator is read whole
    first with the callable called on each item as it is read, and gold is served the items and those answers."""
    return _with_own(row, _prefetch_lines, PREFETCH)
