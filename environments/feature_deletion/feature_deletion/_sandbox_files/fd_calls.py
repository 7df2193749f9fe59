"""Programs that exercise the deleted feature: recorded from the tests on the gold code, replayed on any code.

Standard library only; it runs inside the sandbox. It never sees an expected result: the grader keeps
those (feature_deletion.behaviour) and compares what this module prints in its own process.

A *program* is a list of steps, each plain data: call an importable function or class
(`["ref", module, qualname]`), call a method of an object an earlier step returned, take the next item
of an iterator an earlier step returned, read an attribute. Arguments are plain data with exact types,
references to earlier results, *callbacks* (a table of the answers the test's own function gave, by
arguments) and *streams* (the items an iterator handed to the code, in order).

As a pytest plugin (`-p fd_calls`, FD_CALLS_SPEC=<json {"targets": [[module, qualname, kind]], "src": [dir]}>,
FD_CALLS_OUT=<path>): every class of the package (modules under `src`) and every deleted function is
wrapped, and each test's calls into them from outside (from the test, or from package code that is not
itself inside a recorded call) become the steps of one program; the deleted functions' own nested calls
with plain-data arguments (recursion included) become one-step programs of their own. Objects the code
returns are followed: instances of the package's classes by identity, iterators and plain functions
behind a thin proxy. Nothing of the test's outcome is needed: the expectations are the gold code's
answers when the grader replays the programs (below), so a program only has to be a plausible use.

As a script (`python fd_calls.py PROGRAMS.json RESULTS.jsonl`): installs the grader's audit hook
(fd_guard), runs every program (`random` seeded with FD_SEED, 0 by default, and the program's steps) on the code it
imports and writes one line per program, JSON [index, observations], an observation per step: the result
(plain data, or a handle numbered by first appearance with its kind), the raised exception's type,
arguments (and the items iterators handed yield) mutated in place and how far streams were read.

A step may run STEP_S seconds: then an exception is raised inside it (SIGALRM), and the step is observed as a
timeout. Code that catches it (a bare `except:`) is ended at STEP_S + STEP_SLACK_S by a watchdog thread
(`os._exit(DEADLINE_EXIT)`, which nothing in the step can catch), or by the kernel (SIGPROF, whose default action
ends the process) where the step holds the interpreter in C for PROF_SLACK_S more CPU time. The results file is opened only
when no agent code runs (every program done, or the watchdog ending the driver) and the driver leaves with
`os._exit`: agent code never holds a descriptor of it, and no exit handler or finaliser of it runs after it is
written.
"""

import array
import collections
import collections.abc
import copy
import csv
import ctypes
import dataclasses
import datetime
import decimal
import enum
import fractions
import functools
import hashlib
import importlib
import io
import itertools
import json
import operator
import os
import pathlib
import random
import re
import signal
import struct
import sys
import threading
import time
import types
import uuid
import warnings

TEST_DIRS = {"tests", "test", "testing"}  # feature_deletion.task.TEST_DIRS
MAX_STEPS = 150  # steps of one recorded program
MAX_STEP_BYTES = 4000  # JSON of one recorded step; a larger one ends its program
MAX_PROGRAMS = 80  # programs written per test run, spread evenly over its tests
MAX_INNER = 60  # one-step programs from the deleted functions' own nested calls
MAX_TABLE = 500  # answers kept per callback
MAX_STREAM = 2000  # items kept per stream
MAX_ITEMS = 5000  # elements of one container
MAX_OBSERVED_ITEMS = 100_000  # of one container a step answered or changed: a large input's answer is large too
MAX_STR = 100_000
MAX_DEPTH = 40
MAX_OBSERVATION = 1000  # characters: a longer observation is compared by its SHA-256
MAX_WARNING = 200  # characters of a warning's message kept
MAX_WARNINGS = 20  # warnings kept per step; the rest are counted
STEP_S = 3  # seconds one replayed step may run
STEP_SLACK_S = 2  # past STEP_S + this, a step that caught its timeout ends the driver
# SIGPROF is the backstop for a step that holds the interpreter in C, so it fires this much later than the watchdog:
# one spinning thread's CPU time never runs ahead of the wall clock, and the watchdog polls every 0.25 s, so at the
# same mark the kernel could win the race (exit 155, the programs already done lost) on a quiet machine.
PROF_SLACK_S = 1
DEADLINE_EXIT = 87  # the driver's exit status when it does (feature_deletion.behaviour.DEADLINE_EXIT)


class Unrecordable(Exception):
    """A value that is not plain data and has no other form here."""


class Artifact(BaseException):
    """A replayed step went past what was recorded (a callback asked an unknown question, a stream read past
    its recorded items) or past its time. BaseException, so that `except Exception` in the code does not
    swallow it; a bare `except` does, which is why the driver also notes it on the side."""


# ------------------------------------------------------------------------------------------- plain data

def _qual(t):
    return getattr(t, "__module__", "?") + "." + getattr(t, "__qualname__", "?")


def resolve(module, qualname):
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


# While recording, a reference must also be importable where the programs run: not from a test module.
REF_OK = None


def ref_of(obj):
    """["ref", module, qualname] when that names `obj` itself in a module already loaded, else None."""
    qual = getattr(obj, "__qualname__", None)
    mod = getattr(obj, "__module__", None)
    if mod is None and hasattr(obj, "__objclass__"):  # methods of builtin types: str.upper
        mod = getattr(obj.__objclass__, "__module__", None)
    if not isinstance(qual, str) or not isinstance(mod, str) or "<" in qual:
        return None
    found = sys.modules.get(mod)
    try:
        for part in qual.split("."):
            found = getattr(found, part)
    except Exception:  # noqa: BLE001 - anything that does not resolve is no reference
        return None
    if found is not obj or (REF_OK is not None and not REF_OK(mod)):
        return None
    return ["ref", mod, qual]


_REDUCIBLE = ("functools.partial", "operator.itemgetter", "operator.attrgetter", "operator.methodcaller")


def encode(x, other, depth=0, items=MAX_ITEMS):
    """A tagged JSON form that keeps exact types; `other(x, depth)` encodes what is not plain data; a container of
    more than `items` elements is none."""
    if depth > MAX_DEPTH:
        raise Unrecordable("nested too deep")
    t = type(x)
    if x is None or t is bool:
        return [t.__name__, x]
    if t is int:
        return ["int", x] if abs(x) < 1 << 53 else ["bigint", str(x)]
    if t is str:
        if len(x) > MAX_STR:
            raise Unrecordable("string too long")
        try:
            x.encode("utf-8")
        except UnicodeEncodeError:
            return ["strx", x.encode("utf-8", "surrogatepass").hex()]
        return ["str", x]
    if t is float:
        return ["float", repr(x)]
    if t is complex:
        return ["complex", [repr(x.real), repr(x.imag)]]
    if t in (bytes, bytearray):
        if len(x) > MAX_STR:
            raise Unrecordable("bytes too long")
        return [t.__name__, x.hex()]
    if t in (list, tuple, set, frozenset, collections.deque):
        if len(x) > items:
            raise Unrecordable("container too long")
        out = [encode(i, other, depth + 1, items) for i in x]
        if t in (set, frozenset):
            out.sort(key=json.dumps)
        if t is collections.deque:
            return ["deque", [out, x.maxlen]]
        return [t.__name__, out]
    if t in (dict, collections.OrderedDict, collections.Counter, collections.defaultdict):
        if len(x) > items:
            raise Unrecordable("container too long")
        out = [[encode(k, other, depth + 1, items), encode(v, other, depth + 1, items)] for k, v in x.items()]
        if t is collections.defaultdict:
            return ["defaultdict", [encode(x.default_factory, other, depth + 1), out]]
        return [t.__name__, out]
    if t is range:
        return ["range", [x.start, x.stop, x.step]]
    if t is slice:
        return ["slice", [encode(x.start, other, depth + 1), encode(x.stop, other, depth + 1),
                          encode(x.step, other, depth + 1)]]
    if x is Ellipsis:
        return ["ellipsis", None]
    if t is decimal.Decimal:
        return ["Decimal", str(x)]
    if t is fractions.Fraction:
        return ["Fraction", [x.numerator, x.denominator]]
    if t in (datetime.datetime, datetime.time):
        return [t.__name__, [x.isoformat(), _tz(x.tzinfo)]]
    if t is datetime.date:
        return ["date", x.isoformat()]
    if t is datetime.timedelta:
        return ["timedelta", [x.days, x.seconds, x.microseconds]]
    if t is datetime.timezone:
        return ["timezone", _tz(x)]
    if isinstance(x, BaseException) and ref_of(t):
        return ["exc", [ref_of(t), [encode(a, other, depth + 1) for a in x.args[:20]]]]
    if isinstance(x, enum.Enum) and ref_of(t):
        return ["enum", [ref_of(t), x.name]]
    if isinstance(x, tuple) and hasattr(t, "_fields") and ref_of(t):
        return ["namedtuple", [ref_of(t), [encode(i, other, depth + 1) for i in x]]]
    if _qual(t) in _REDUCIBLE:
        fn, args = x.__reduce__()[:2]
        state = x.__reduce__()[2] if t is functools.partial else None
        return ["reduce", [_qual(t), [encode(a, other, depth + 1) for a in args],
                           encode(state, other, depth + 1) if state is not None else None]]
    if isinstance(x, (type, types.FunctionType, types.BuiltinFunctionType, types.MethodDescriptorType,
                      types.WrapperDescriptorType, types.MethodWrapperType, types.ModuleType)) or callable(x):
        ref = ref_of(x)
        if ref is not None:
            return ref
    return other(x, depth)


def _tz(tz):
    if tz is None:
        return None
    if type(tz) is datetime.timezone:
        off = tz.utcoffset(None)
        return [off.days, off.seconds, tz.tzname(None)]
    raise Unrecordable("time zone " + _qual(type(tz)))


def no_other(x, depth):
    raise Unrecordable(_qual(type(x)))


def opaque(x, depth):
    """How a callback's arguments are keyed: an object that is not plain data only by that."""
    return ["opaque", None]


def is_data(x):
    try:
        encode(x, no_other)
    except Unrecordable:
        return False
    return True


def decode(x, other):
    """The value of an encoding; `other(tag, value)` decodes tags that are not plain data."""
    tag, v = x[0], x[1]
    if tag in ("NoneType", "bool", "int", "str", "float"):
        return float(v) if tag == "float" else v
    if tag == "bigint":
        return int(v)
    if tag == "strx":
        return bytes.fromhex(v).decode("utf-8", "surrogatepass")
    if tag == "complex":
        return complex(float(v[0]), float(v[1]))
    if tag in ("bytes", "bytearray"):
        return (bytes if tag == "bytes" else bytearray).fromhex(v)
    if tag in ("list", "tuple", "set", "frozenset"):
        return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[tag](decode(i, other) for i in v)
    if tag == "deque":
        return collections.deque((decode(i, other) for i in v[0]), v[1])
    if tag in ("dict", "OrderedDict", "Counter"):
        kind = {"dict": dict, "OrderedDict": collections.OrderedDict, "Counter": collections.Counter}[tag]
        out = kind()
        for k, val in v:
            out[decode(k, other)] = decode(val, other)
        return out
    if tag == "defaultdict":
        out = collections.defaultdict(decode(v[0], other))
        for k, val in v[1]:
            out[decode(k, other)] = decode(val, other)
        return out
    if tag == "range":
        return range(*v)
    if tag == "callable":  # a function the tests name, handed as users' callables also are (behaviour.callables)
        fn = decode(v[3], other)
        return _callable_as(fn, *v[:3], *v[4:]) if callable(fn) else fn
    if tag == "grown":  # a recorded input at a size no recorded step holds (behaviour.sizes)
        return _grown(*v, other)
    if tag == "sub":
        return _subclassed(*v[:3], decode(v[3], other))
    if tag == "obj":
        return _user_object(*v[:3], decode(v[3], other))
    if tag == "iter":  # its items kept by the driver where one decodes it (`Driver.decode_other`: "fed")
        items = decode(v[1], other)
        return _iterable_as(v[0], other("fed", items, x) if other is not None else items, *v[2:])
    if tag == "cyclic":  # a list or a record that holds itself (behaviour.nested, "cycle")
        made = decode(v, other)
        if type(made) is list:
            made.append(made)
        else:
            made["parent"] = made
        return made
    if tag == "same":  # one container held many times in an argument (behaviour.iterables, "same rows")
        if v[0] == "fromkeys":  # `dict.fromkeys(keys, [])`
            return dict.fromkeys(decode(v[1], other), decode(v[2], other))
        return {"list": list, "tuple": tuple}[v[0]]([decode(v[1], other)] * v[2])  # `[row] * n`, `[[0] * 3] * 2`
    if tag == "slice":
        return slice(*(decode(i, other) for i in v))
    if tag == "ellipsis":
        return Ellipsis
    if tag == "Decimal":
        return decimal.Decimal(v)
    if tag == "Fraction":
        return fractions.Fraction(*v)
    if tag in ("datetime", "time"):
        kind = datetime.datetime if tag == "datetime" else datetime.time
        value = kind.fromisoformat(v[0])
        return value.replace(tzinfo=_untz(v[1])) if v[1] is not None else value
    if tag == "date":
        return datetime.date.fromisoformat(v)
    if tag == "timedelta":
        return datetime.timedelta(days=v[0], seconds=v[1], microseconds=v[2])
    if tag == "timezone":
        return _untz(v)
    if tag == "exc":
        return resolve(*v[0][1:])(*(decode(a, other) for a in v[1]))
    if tag == "enum":
        return getattr(resolve(*v[0][1:]), v[1])
    if tag == "namedtuple":
        return resolve(*v[0][1:])(*(decode(i, other) for i in v[1]))
    if tag == "reduce":
        module, _, name = v[0].rpartition(".")
        value = resolve(module, name)(*(decode(a, other) for a in v[1]))
        if v[2] is not None:
            value.__setstate__(decode(v[2], other))
        return value
    if tag == "ref":
        return resolve(v, x[2])
    return other(tag, v, x)


def _generator(items):
    """A generator expression over `items`, named as one written at a module's top level is: one written in a
    function names it (`_grown.<locals>.<genexpr>`), a trait of the driver."""
    fed = (item for item in items)
    fed.__qualname__ = "<genexpr>"
    return fed


def _grown(how, enc, size, seed, other):
    """A recorded input `enc` (text, bytes, a list, tuple, set, frozenset or mapping) at `size` items, drawn by a
    generator seeded with `seed`: "copies" repeats its items; "drawn" draws each item from its items (text: its
    words, with its separators); "fresh" makes each item new from one of its items (numbers moved, text lengthened:
    `_fresh`), "sorted" sorts those; "natural" makes them as real data has them (`_natural`); "inner" makes one of
    its items (a mapping: one value) large, naturally; a stream's items as a generator expression or an iterator of
    a list. A set or mapping grows fresh (it keeps its items, then adds new ones), natural or inner. Every item is
    decoded anew, so that no two share a mutable part."""
    rng = random.Random(seed)
    tag, items = enc
    if tag == "stream":  # a recorded stream's items grown as a list, handed as an iterator of them
        made = _grown(how, ["list", items["items"]], size, seed, other)
        if (how in ("copies", "natural")) == (seed % 2 == 0):  # each way both kinds (red team 23, G23)
            return _generator(made)
        return iter(made)
    if how == "natural":
        return _natural(tag, decode(enc, other), size, rng, canonical=seed % 2 == 0)
    if how == "inner":  # one item of it (a dict: one value) large, as a record holds a long array
        value = decode(enc, other)
        keys = list(value) if isinstance(value, dict) else list(range(len(value)))
        key = rng.choice(keys)
        item, canonical = value[key], seed % 2 == 0
        # a list of items like it (an array in a record), or, where it is sized, it grown (a document in a record)
        part = item if type(item) in _SIZED and len(item) and not (canonical and type(item) in (str, bytes)) \
            else [item]
        large = _natural(type(part).__name__, part, size, rng, canonical)
        if isinstance(value, dict):
            value[key] = large
            return value
        return type(value)(large if i == key else item for i, item in enumerate(value))
    if tag in ("str", "bytes"):
        value = decode(enc, other)
        if how == "copies":
            return value * -(-size // max(1, len(value)))
        if tag == "bytes":
            return bytes(rng.choice(value) for _ in range(size)) if how == "drawn" else rng.randbytes(size)
        words, gaps = value.split(), re.findall(r"\s+", value) or [" "]
        if how == "drawn" and len(words) > 1:
            out, n = [], 0
            while n < size:
                out += [rng.choice(words), rng.choice(gaps)]
                n += len(out[-1]) + len(out[-2])
            return "".join(out)[:size]
        letters = sorted(set(value) | set("abcdefghijklmnopqrstuvwxyz "))
        return "".join(rng.choice(letters) for _ in range(size))
    value = decode(enc, other)
    numbers = [x for x in _leaves(list(value)) if type(x) in (int, float)]  # a mapping's: its keys
    spread = min(10, max(numbers) - min(numbers)) if numbers else 0
    width = int(size * (1 + spread))
    if tag in ("list", "tuple"):
        if how == "copies":
            made = [decode(i, other) for _ in range(-(-size // len(items))) for i in items]
        elif how == "drawn":
            made = [decode(rng.choice(items), other) for _ in range(size)]
        else:
            made = [_fresh(decode(rng.choice(items), other), rng, width) for _ in range(size)]
            if how == "sorted":
                try:
                    made.sort()
                except TypeError:  # items of no order among them: left as drawn
                    pass
        return list(made) if tag == "list" else tuple(made)
    # a set, frozenset or mapping: grown with new keys until it holds `size`
    pairs = items[1] if tag == "defaultdict" else items
    grown = set(value) if tag in ("set", "frozenset") else value
    for _ in range(8 * size):
        if len(grown) >= size:
            break
        if tag in ("set", "frozenset"):
            grown.add(_fresh(decode(rng.choice(items), other), rng, width))
        else:
            key, val = rng.choice(pairs)
            grown[_fresh(decode(key, other), rng, width)] = decode(rng.choice(pairs)[1], other)
    return frozenset(grown) if tag == "frozenset" else grown


# The words English text uses most, in order: drawn most in `_prose`, as real text has them.
_COMMON_WORDS = (
    "the of and to a in is that it was for on are as with his they at be this from have or by one had not but what "
    "all were when we there can an your which their said if do will each about how up out them then she many some so "
    "these would other into has more her two like him see time could no make than first been its who now people my "
    "made over did down only way find use may water long little very after words called just where most know get "
    "through back much before go good new write our used me man too any day same right look think also around another "
    "came come work three word must because does part even place well such here take why things help put years "
    "different away again off went old number great tell men say small every found still between name should home "
    "big give air line set own under read last never us left end along while might next sound below saw something "
    "thought both few those always looked show large often together asked house world going want school important "
    "until form food keep children feet land side without boy once animals life enough took sometimes four head above "
    "kind began almost live page got earth need far hand high year mother light parts country father let night "
    "following picture being study second eyes soon times story boys since white days ever paper hard near sentence "
    "better best across during today others however sure means knew its try told young miles sun ways thing whole "
    "hear example heard several change answer room sea against top turned learn point city play toward five using "
    "himself usually").split()
_ONSETS = dict(zip("b c d f g h j k l m n p r s t v w y z ch sh th st tr br pl gr wh".split(),
                   (15, 28, 43, 22, 20, 40, 2, 8, 40, 24, 67, 19, 60, 63, 91, 10, 24, 20, 1, 8, 6, 30, 8, 6, 4, 3, 4, 4)))
_ONSETS[""] = 60
_VOWELS = dict(zip("a e i o u y ea ou ai ee io".split(), (82, 127, 70, 75, 28, 10, 8, 8, 5, 5, 4)))
_CODAS = dict(zip(["", "n", "r", "s", "t", "l", "d", "nd", "st", "ng", "ck", "m", "rt", "nt"],
                  (300, 60, 50, 45, 45, 30, 25, 12, 10, 10, 6, 15, 5, 10)))
_SYLLABLES = [(o + v + c, wo * wv * wc) for o, wo in _ONSETS.items() for v, wv in _VOWELS.items()
              for c, wc in _CODAS.items()]  # English-like syllables, weighted by their letters' frequencies


def _words(rng, n, mean):
    """`n` made-up words of about `mean` letters, of English-like syllables: real vocabularies hold far more words
    than any list a driver could carry."""
    syllables, weights = zip(*_SYLLABLES)
    counts = rng.choices((1, 2, 3, 4, 5), [max(0.05, 1 - abs(k - mean / 3.2)) for k in range(1, 6)], k=n)
    drawn = iter(rng.choices(syllables, weights, k=sum(counts)))
    return ["".join(next(drawn) for _ in range(k)) for k in counts]


def _styled(word, like, rng):
    """`word` in the case and shape of the recorded text `like`: upper, capitalised, or joined to a common word as
    the recorded one is ("first_name", "max-age")."""
    for sep in "_-. ":
        if sep in like.strip(sep):
            word = sep.join((word, rng.choice(_COMMON_WORDS)))
            break
    if like.isupper():
        return word.upper()
    return word.capitalize() if like[:1].isupper() else word


def _distinct(kind, n, rng, likes, canonical):
    """`n` different values of `kind` (int, float or str) such as a column of real data holds. `canonical`: the
    commonest shapes, positions (`range(a, a + n)` from 0, 1 or a recorded number, mostly in order), evenly spaced
    numbers, a vocabulary of words shaped as the recorded text (`_styled`); otherwise ids with gaps (spanning up to 4
    times `n`, in order or not), measurements, numbered names."""
    if kind is int:
        start = rng.choice([0, 1, *likes]) if likes else rng.choice([0, 1])
        span = n if canonical else int(n * rng.uniform(1.05, 4))
        made = list(range(start, start + n)) if canonical else rng.sample(range(start, start + span), n)
        if canonical and rng.random() < 0.7 or not canonical and rng.random() < 0.5:
            return sorted(made)
        rng.shuffle(made)
        return made
    if kind is float:
        if canonical:  # a grid: `start + i * step`, as `numpy.arange` and `linspace` make
            start, step = rng.choice([0.0, *likes]) if likes else 0.0, rng.choice((0.1, 0.25, 0.5, 1.0, 1.5))
            return [round(start + i * step, 10) for i in range(n)]
        scale = max(1.0, *(abs(x) for x in likes)) if likes else 1.0
        made = {round(rng.uniform(-scale, scale) * rng.choice((1, 10, 100)), rng.randint(1, 6)) for _ in range(2 * n)}
        made = list(made)[:n]
        while len(made) < n:
            made.append(rng.random() + len(made))
        return sorted(made) if rng.random() < 0.5 else made
    if likes and all(like.isdigit() for like in likes):  # numbers as text: different numbers
        return [str(i) for i in _distinct(int, n, rng, [int(like) for like in likes], canonical)]
    mean, numbered = rng.uniform(4, 9), not canonical and rng.random() < 0.5
    out, seen = [], set()
    while len(out) < n:
        for word in _words(rng, n - len(out) + 8, mean):
            word = f"{_styled(word, rng.choice(likes) if likes else 'word', rng)}{len(out) if numbered else ''}"
            if word not in seen and len(out) < n:
                seen.add(word)
                out.append(word)
    return out


def _refilled(x, take):
    """`x` with each int, float and text in it (tuples and lists 3 levels down) the next value `take` gives."""
    t = type(x)
    if t in (int, float, str):
        return take(t)
    if t in (tuple, list):
        return t(_refilled(i, take) for i in x)
    return x


def _column(templates, rng, canonical):
    """Each of `templates` (decoded items) with its numbers and text made different from all others'
    (`_distinct`), numbers near and text shaped as the templates' own."""
    counts, likes = collections.Counter(), collections.defaultdict(list)

    def count(t):
        counts[t] += 1
    for x in templates:
        _refilled(x, count)
        for leaf in _leaves(x):
            if type(leaf) in (int, float, str):
                likes[type(leaf)].append(leaf)
    made = {t: iter(_distinct(t, n, rng, likes[t][:50], canonical)) for t, n in counts.items()}
    return [_refilled(x, lambda t: next(made[t])) for x in templates]


_CONTRACTIONS = "don't it's I'm can't you're isn't didn't that's we'll they've won't there's let's I'd".split()


def _prose(rng, size, like, canonical):
    """`size` characters of text as people write it: sentences of words drawn by Zipf's law from the most common
    English words, contractions, the recorded text's and made-up ones (`_words`), capitalised, with commas,
    hyphenated words, numbers, words in brackets and quoted speech, and paragraphs (red team 23, T23: prose of
    letters and `.,?!;:` only); `canonical` at the rates English text has them, otherwise at rates drawn from none
    to twice those."""
    own = re.findall(r"[^\W\d_]+", like)
    vocabulary = list(dict.fromkeys([*_COMMON_WORDS[: rng.randint(60, len(_COMMON_WORDS))], *own]))
    rates = [rate * (1 if canonical else rng.choice((0, 0, 0.5, 1, 2))) for rate in (0.02, 0.01, 0.01, 0.01, 0.1)]
    hyphen, number, bracket, contraction, quoted = rates
    mean = rng.uniform(4, 8)
    vocabulary += _words(rng, max(60, size // rng.randint(8, 30)), mean)
    top = vocabulary[:40]
    rng.shuffle(top)  # which common words lead differs between texts
    vocabulary[:40] = top
    power = rng.uniform(0.8, 1.2)
    weights = [1 / (rank + 2.7) ** power for rank in range(len(vocabulary))]
    out, n = [], 0
    while n < size:
        words = rng.choices(vocabulary, weights, k=rng.randint(3, 28))
        for i in range(len(words)):
            if rng.random() < contraction:
                words[i] = rng.choice(_CONTRACTIONS)
            elif rng.random() < number:
                words[i] = str(rng.choice((rng.randint(2, 99), rng.randint(1700, 2030), rng.randint(100, 99999))))
            elif rng.random() < hyphen and i + 1 < len(words):
                words[i] = f"{words[i]}-{words[i + 1]}"
        words[0] = words[0][:1].upper() + words[0][1:]
        for i in range(1, len(words) - 1):
            if rng.random() < 0.07:
                words[i] += ","
            elif rng.random() < bracket:
                j = min(len(words) - 1, i + rng.randint(0, 3))
                words[i], words[j] = "(" + words[i], words[j] + ")"
        sentence = " ".join(words) + rng.choices((".", "?", "!", ";", ":"), (90, 4, 2, 2, 2))[0]
        if rng.random() < quoted:
            sentence = f'"{sentence}" {rng.choice(("he said", "she said", "they said", "I said"))}.'
        sentence += "\n\n" if rng.random() < 0.08 else " "
        out.append(sentence)
        n += len(sentence)
    text = "".join(out)[:size]
    return text[:-1] + "." if text[-1:].isspace() else text


def _shape(x):
    """What kind of item `x` is: its type, and a tuple's or list's items' kinds."""
    return (type(x).__name__, *map(_shape, x)) if type(x) in (tuple, list) and len(x) <= 8 else type(x).__name__


def _natural(tag, value, size, rng, canonical):
    """`value` (decoded) grown to `size` as real data of its kind is large: text as prose (`_prose`; digits as a
    long number, then as prose), a list or tuple as a column of different ids, positions, names or records
    (`_column`) made from the recorded items of one kind (a column holds one), a set of them, a mapping whose keys
    are such a column and whose values are positions, a column too, or the recorded ones (a `Counter`: counts by
    Zipf's law).
    `canonical` (an even seed: `behaviour.sizes` hands one at each function's first size) makes the commonest
    shapes, `list(range(n))`, `{key: i}`, a vocabulary, from the commonest kind of item; otherwise the others. Red
    team 22 (N22): a guard that refused `list(range(n))`, a vocabulary, an index `{key: i}`, `set(range(n))` and a
    paragraph past 1,000 items refused no other grown input."""
    if tag in ("str", "bytes"):
        text = value.decode("utf-8", "replace") if tag == "bytes" else value
        if text.strip().isdigit() and canonical:  # a number as text: a long number; otherwise prose too
            made = "".join(rng.choice("0123456789") for _ in range(size)).lstrip("0") or "0"
        else:
            made = _prose(rng, size, text, canonical)
        return made.encode("utf-8")[:size] if tag == "bytes" else made
    def one_kind(items):
        kinds = collections.Counter(map(_shape, items))
        kind = kinds.most_common(1)[0][0] if canonical else rng.choice(sorted(kinds, key=repr))
        return [x for x in items if _shape(x) == kind]

    if tag in ("list", "tuple", "set", "frozenset"):
        items = one_kind(list(value)) if value else [0]
        made = _column([rng.choice(items) for _ in range(size)], rng, canonical)
        return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[tag](made)
    pairs = list(value.items())
    keys = _column([rng.choice(one_kind([k for k, _ in pairs]) or [0]) for _ in range(size)], rng, canonical)
    values = [v for _, v in pairs] or [0]
    how = "position" if canonical else rng.choice(("column", "recorded"))
    if isinstance(value, collections.Counter):
        made = [max(1, int(rng.paretovariate(1.2))) for _ in keys]
    elif how == "position" or not any(type(v) in (int, float, str) for v in values):
        start = rng.choice((0, 1))
        made = [start + i for i in range(len(keys))]
    elif how == "column":
        made = _column([rng.choice(one_kind(values)) for _ in keys], rng, canonical)
    else:
        made = [copy.deepcopy(rng.choice(values)) for _ in keys]
    grown = value.copy()
    grown.clear()
    for key, item in zip(keys, made):  # not `update`: a Counter's counts its argument's items
        grown[key] = item
    return grown


_SIZED = (str, bytes, list, tuple, set, frozenset, dict)


def _leaves(x, depth=0):
    """The numbers and text in a decoded value, 3 levels down."""
    if isinstance(x, (tuple, list, set, frozenset)) and depth < 3:
        return [y for i in x for y in _leaves(i, depth + 1)]
    return [x]


def _fresh(x, rng, width):
    """A new item like `x`: each number in it moved by up to `width`, each text lengthened by a few letters drawn
    from its own and a-z, in tuples and lists 3 levels down; anything else as it is."""
    t = type(x)
    if t is int:
        return x + rng.randint(-width, width)
    if t is float:
        return x + rng.uniform(-width, width)
    if t is str:
        letters = sorted(set(x) | set("abcdefghijklmnopqrstuvwxyz"))
        return x + "".join(rng.choice(letters) for _ in range(rng.randint(1, 4)))
    if t in (tuple, list):
        return t(_fresh(i, rng, width) for i in x)
    return x


_USER_CLASSES = {}
_OWN_OBJECTS = set()  # the classes of `_user_object`'s mutable objects, whose attributes `_plain` reads
_USER_WRAPPERS = {  # the methods whose answers a user's "keeps" subclass gives its own type, as markupsafe's Markup
    str: ("__add__", "__mul__", "__rmul__", "__mod__", "__getitem__", "capitalize", "casefold", "center",
          "expandtabs", "format", "join", "ljust", "lower", "lstrip", "partition", "removeprefix", "removesuffix",
          "replace", "rjust", "rpartition", "rsplit", "rstrip", "split", "splitlines", "strip", "swapcase", "title",
          "translate", "upper", "zfill"),
    int: ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__floordiv__", "__rfloordiv__",
          "__mod__", "__rmod__", "__pow__", "__neg__", "__pos__", "__abs__", "__and__", "__or__", "__xor__",
          "__lshift__", "__rshift__", "__invert__"),
    float: ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
            "__floordiv__", "__mod__", "__pow__", "__neg__", "__pos__", "__abs__"),
    list: ("__add__", "__mul__", "__rmul__", "copy"),
    tuple: ("__add__", "__mul__", "__rmul__"),
    dict: ("copy", "__or__", "__ror__"),
    set: ("__or__", "__and__", "__sub__", "__xor__", "__ror__", "__rand__", "__rsub__", "__rxor__", "union",
          "intersection", "difference", "symmetric_difference", "copy"),
}
_USER_WRAPPERS[bytes] = tuple(m for m in _USER_WRAPPERS[str] if hasattr(bytes, m))
_USER_WRAPPERS[frozenset] = _USER_WRAPPERS[set]


def _keeping(base):
    """The body of a subclass of `base` whose operators and methods answer its own type where `base`'s answer
    `base` (markupsafe's `Markup`, Django's `SafeString`, a `Money(int)`): red team 21, S21."""
    def wrapped(name):
        method = getattr(base, name)

        def keep(self, *args, **kwargs):
            out = method(self, *args, **kwargs)
            if type(out) is base:
                return type(self)(out)
            if type(out) in (list, tuple) and base in (str, bytes):  # split, partition: each part
                return type(out)(type(self)(i) if type(i) is base else i for i in out)
            return out
        return keep

    body = {name: wrapped(name) for name in _USER_WRAPPERS[base]}
    if base in (str, bytes, list, tuple):  # the base has no reflected `+`: `"a" + Markup("b")` is a Markup too
        def radd(self, left):
            return type(self)(base.__add__(left, self)) if isinstance(left, base) else NotImplemented
        body["__radd__"] = radd
    if base in (list, tuple):  # a slice is of the type, an item is as it is
        def item(self, key):
            out = base.__getitem__(self, key)
            return type(self)(out) if isinstance(key, slice) else out
        body["__getitem__"] = item
    return body


_USER_KINDS = {str: collections.UserString, list: collections.UserList, dict: collections.UserDict}
_ABSTRACT = {dict: collections.abc.Mapping, list: collections.abc.Sequence, tuple: collections.abc.Sequence,
             set: collections.abc.Set, frozenset: collections.abc.Set}


def _abstract(base):
    """The body of a user's class of `base`'s abstract kind (`_ABSTRACT`) that keeps the items in a store of its own
    and defines only what `collections.abc` asks: a read-only config mapping, a lazy sequence, a set over a
    database (red team 22, A22b)."""
    store = dict if base is dict else frozenset if base in (set, frozenset) else list

    def init(self, data=()):
        self._items = store(data)

    body = {"__init__": init, "__len__": lambda self: len(self._items), "__iter__": lambda self: iter(self._items),
            "__repr__": lambda self: f"{type(self).__name__}({self._items!r})"}
    if base is dict:
        body["__getitem__"] = lambda self, key: self._items[key]
    elif store is list:
        body["__getitem__"] = lambda self, index: self._items[index]
    else:
        body["__contains__"] = lambda self, item: item in self._items
    return body


def _subclassed(how, name, module, value):
    """`value` as an instance of a class a user's code defines on its type, named `name` in a module named `module`
    (never loaded: the kinds an observation names are the program's): an `enum.StrEnum` or `IntEnum` member (`how`
    "enum"); a subclass with an empty body ("plain"), with `__slots__ = ()` ("slots"), or whose operators keep its
    type ("keeps", `_keeping`); a namedtuple of a tuple's items; a `collections.UserString`, `UserList` or `UserDict`
    ("user", the classes users derive their own from); a class of its `collections.abc` kind that is none of these
    ("abc", `_abstract`); a container of no builtin type: a dict as a `MappingProxyType` ("proxy") or its items
    view ("items") or values view ("values"), a set as a dict's keys view ("keys"), numbers as an `array.array`
    ("array"), a list as a `deque` ("deque"), bytes as a `bytearray` ("bytearray"); or, for a class of
    the package ("class"), a subclass of it with an empty body, as users derive their own cache or mapping. Each
    class made once per process."""
    base = type(value)
    if how == "user":
        return _USER_KINDS[base](value)
    if how == "proxy":
        return types.MappingProxyType(value)
    if how == "keys":
        return dict.fromkeys(value).keys()
    if how == "items":
        return value.items()
    if how == "values":
        return value.values()
    if how == "deque":
        return collections.deque(value)
    if how == "bytearray":
        return bytearray(value)
    if how == "array":
        return array.array("d" if any(type(x) is float for x in value) else "q", value)
    if how == "class":
        key = (how, value, name, module)
        if key not in _USER_CLASSES:
            _USER_CLASSES[key] = types.new_class(name, (value,), exec_body=lambda body: body.update(
                {"__module__": module, "__qualname__": name}))
        return _USER_CLASSES[key]
    key = (how, base, name, module, value if how == "enum" else len(value) if how == "namedtuple" else None)
    if key not in _USER_CLASSES:
        if how == "enum":
            kind = enum.StrEnum if base is str else enum.IntEnum
            _USER_CLASSES[key] = kind(name, [("MEMBER", value)], module=module, qualname=name).MEMBER
        elif how == "namedtuple":
            _USER_CLASSES[key] = collections.namedtuple(name, [f"field{i}" for i in range(len(value))], module=module)
        else:
            body = {"__module__": module, "__qualname__": name}
            body.update({"__slots__": ()} if how == "slots" else _keeping(base) if how == "keeps" else
                        _abstract(base) if how == "abc" else {})
            _USER_CLASSES[key] = type(name, (_ABSTRACT[base] if how == "abc" else base,), body)
    made = _USER_CLASSES[key]
    return made if how == "enum" else made(*value) if how == "namedtuple" else made(value)


def _plain_init(self, value):
    self.value = value


def _plain_repr(self):
    return f"{type(self).__name__}({self.value!r})"


def _user_object(how, name, module, value):
    """`value` held in an object of no builtin type, as users' code hands records and ids (red team 26, R26: no check
    handed one): a frozen dataclass record of a class named `name` in `module` holding it ("record"), a member of a
    plain `enum.Enum` whose value it is ("enum"), a `uuid.UUID` made from it ("uuid"), a `pathlib.PurePosixPath` of
    its text ("path"), a bare `object()` sentinel in its place ("sentinel"). Each equal to another made of the same
    value but the sentinel, and hashable; each class made once per process. And (red team 30, U30 and M30: every one
    of those is immutable, and a guard on a user's mutable object, or code setting an attribute of its own on one,
    was paid on every task played) a dataclass record that is not frozen ("mutable") and an object of a plain class
    with an attribute, equal only to itself ("plain"): their attributes are read as what they hold (`_plain`), so a
    step that changes them is seen."""
    if how == "uuid":
        return uuid.UUID(int=value % (1 << 128)) if type(value) is int else uuid.uuid5(uuid.NAMESPACE_URL, str(value))
    if how == "path":
        return pathlib.PurePosixPath(str(value))
    if how == "sentinel":
        return object()
    key = (how, name, module, value if how == "enum" else None)
    if key not in _USER_CLASSES:
        if how == "enum":  # a member takes attributes too: a memo set on one is seen (`_plain`)
            _USER_CLASSES[key] = enum.Enum(name, [("MEMBER", value)], module=module, qualname=name).MEMBER
            _OWN_OBJECTS.add(type(_USER_CLASSES[key]))
        else:
            if how == "plain":
                made = type(name, (), {"__init__": _plain_init, "__repr__": _plain_repr})
            else:  # a mutable record is hashed by its fields, as `unsafe_hash=True` asks: a cache key, a dict key
                made = dataclasses.make_dataclass(name, [("value", object)], frozen=how == "record",
                                                  unsafe_hash=how == "mutable")
            made.__module__, made.__qualname__ = module, name
            _USER_CLASSES[key] = made
            if how != "record":
                _OWN_OBJECTS.add(made)
    made = _USER_CLASSES[key]
    return made if how == "enum" else made(value)


def _iterable_as(how, items, raised=None):
    """`items` (a list) handed as an iterator users hand (red team 27, I27: every stream was replayed as a generator
    or a list's iterator): a `map`, a `filter` (which drops falsy items), a `reversed`, a tuple's or a dict's values'
    or keys' iterator, `itertools.chain`/`islice`, `enumerate`, `zip` of it with itself, a text's iterator (of its
    one-letter items), a file's lines and a `csv.reader` of them (of its text items, each a line); and (red team
    28) a dict's items' iterator, a set's (of its number items), a bytes object's (of its byte-sized ints), a
    generator that raises after its last item or where `raised` says (`_raising`), and a generator expression of
    them (R28: of rows)."""
    if how == "map":
        return map(copy.copy, items)
    if how == "filter":
        return filter(None, items)
    if how == "reversed":
        return reversed(items[::-1])
    if how == "tuple":
        return iter(tuple(items))
    if how == "values":
        return iter(dict(enumerate(items)).values())
    if how == "keys":
        return iter(dict.fromkeys(items))
    if how == "chain":
        return itertools.chain(items)
    if how == "islice":
        return itertools.islice(items, None)
    if how == "enumerate":
        return enumerate(items)
    if how == "zip":
        return zip(items, items)
    if how == "text":
        return iter("".join(items))
    if how in ("lines", "csv"):
        lines = io.StringIO("".join(f"{item}\n" for item in items))
        return lines if how == "lines" else csv.reader(lines)
    if how == "items":
        return iter(dict(enumerate(items)).items())
    if how == "set":
        return iter(set(items))
    if how == "bytesiter":
        return iter(bytes(items))
    if how == "raising":  # named as a generator expression is, as `_generator`'s are: no name of the driver's
        made = _raising(items, *(raised or ["ValueError", None, None]))
        made.__name__ = made.__qualname__ = "<genexpr>"
        return made
    if how == "generator":
        return _generator(items)
    raise ValueError("unknown iterator " + how)


BUILTIN_ERRORS = {kind.__name__: kind for kind in (KeyError, IndexError, TypeError, AttributeError, OSError, ValueError,
                                                   ZeroDivisionError, UnicodeDecodeError, RuntimeError, AssertionError)}
_USER_ERRORS = {}  # (name, module): an exception class of a user's, one per name (`_raising`)


def _raising(items, name, module, at):
    """`items` (the first `at` of them, None: all), then an exception of type `name` (`_error`: a builtin of
    `BUILTIN_ERRORS`, or a user's class of `module`), as a user's generator raises on a bad row: every stream a check
    handed ended (red team 28, X28: code that takes any exception from `next()` for the end, `except Exception` where
    gold has `except StopIteration`, answered from the items before it and was paid on 54 of 62 tasks), and then
    every one raised a `ValueError` after its items (red team 29: X29, code taking a `LookupError` for the end; F29,
    code taking an error at the first item for empty input)."""
    error = _error(name, module)
    yield from items if at is None else items[:at]
    raise error


def _error(name, module):
    """An exception of type `name`: a builtin of `BUILTIN_ERRORS`, or a user's class of `module`."""
    if module is None:
        kind = BUILTIN_ERRORS[name]
    else:
        kind = _USER_ERRORS.setdefault((name, module), type(name, (Exception,), {"__module__": module,
                                                                                "__qualname__": name}))
    return kind("utf-8", b"\xff", 0, 1, "invalid start byte") if kind is UnicodeDecodeError else kind("bad item")


def _untz(v):
    return datetime.timezone(datetime.timedelta(days=v[0], seconds=v[1]), v[2])


def _is_iterator(x):
    return hasattr(type(x), "__next__") and hasattr(type(x), "__iter__")


# ------------------------------------------------------------------------------------------- recording

_SKIP = frozenset({
    "__getattribute__", "__getattr__", "__setattr__", "__delattr__", "__init_subclass__", "__subclasshook__",
    "__class_getitem__", "__new__", "__del__", "__reduce__", "__reduce_ex__", "__getstate__", "__setstate__",
    "__copy__", "__deepcopy__", "__sizeof__", "__dir__", "__get__", "__set__", "__delete__", "__set_name__",
    "__instancecheck__", "__subclasscheck__", "__getnewargs__", "__getnewargs_ex__", "__prepare__",
    "__mro_entries__", "__init__", "__post_init__", "__hash__", "__eq__", "__ne__",
})


class Program:
    def __init__(self, name):
        self.name = name
        self.steps = []
        self.handles = {}  # id(object) -> ["slot", step, path]
        self.keep = []  # the objects behind handles, so that their ids stay theirs
        self.open = True

    def add(self, step):
        if len(self.steps) >= MAX_STEPS or len(json.dumps(step)) > MAX_STEP_BYTES:
            self.open = False
            return None
        self.steps.append(step)
        return len(self.steps) - 1

    def track(self, obj, where):
        self.handles[id(obj)] = where
        self.keep.append(obj)

    def forget(self, obj):
        self.handles.pop(id(obj), None)

    def json(self):
        return {"name": self.name, "steps": self.steps}


class Recorder:
    def __init__(self, src, root):
        self.src = tuple(os.path.realpath(s).rstrip("/") + "/" for s in src)
        self.root = os.path.realpath(root).rstrip("/") + "/"
        self.local = threading.local()
        self.program = None
        self.programs = []
        self.inner = []
        self.classes = set()

    # -- state
    @property
    def depth(self):
        return getattr(self.local, "depth", 0)

    @depth.setter
    def depth(self, value):
        self.local.depth = value

    def recording(self):
        p = self.program
        return p is not None and p.open and self.depth == 0 and threading.current_thread() is threading.main_thread()

    def in_package(self, filename):
        return os.path.realpath(filename).startswith(self.src) if filename else False

    def importable(self, module):
        """A module the replay copy has too: the package's own (not its tests) or one from outside the repository."""
        path = getattr(sys.modules.get(module), "__file__", None)
        if not isinstance(path, str):
            return True
        real = os.path.realpath(path)
        if not real.startswith(self.root):
            return True
        rel = real[len(self.root):]
        name = rel.rsplit("/", 1)[-1]
        return self.in_package(real) and not (name.startswith("test_") or name.endswith("_test.py")
                                              or name == "conftest.py" or set(rel.split("/")[:-1]) & TEST_DIRS)

    def caller(self):
        """'package' when the code that crossed into a wrapper is the package's own, else 'test'."""
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename in (__file__, functools.__file__):
            frame = frame.f_back
        return "package" if frame is not None and self.in_package(frame.f_code.co_filename) else "test"

    # -- arguments
    def encode_args(self, program, args, kwargs):
        """Encoded arguments, and the values to pass on: iterators become streams, the test's own functions
        callbacks, both behind proxies that write down what the code took from them."""
        def one(value):
            if isinstance(value, (_Stream, _Callback)):
                return value.encoding, value
            if id(value) in program.handles:
                return program.handles[id(value)], value
            if _is_iterator(value) and not self.known(value):
                proxy = _Stream(value, self)
                return proxy.encoding, proxy
            if callable(value) and not isinstance(value, type) and ref_of(value) is None and not self.known(value) \
                    and not is_data(value):
                proxy = _Callback(value)
                return proxy.encoding, proxy
            return encode(value, lambda x, d: self.handle_of(program, x)), value

        enc_args, values = [], []
        for a in args:
            e, v = one(a)
            enc_args.append(e)
            values.append(v)
        enc_kwargs, kw_values = [], {}
        for k, a in kwargs.items():
            e, v = one(a)
            enc_kwargs.append([k, e])
            kw_values[k] = v
        return enc_args, enc_kwargs, values, kw_values

    def handle_of(self, program, x):
        if id(x) in program.handles:
            return program.handles[id(x)]
        raise Unrecordable(_qual(type(x)))

    def known(self, x):
        return isinstance(x, tuple(self.classes)) if self.classes else False

    # -- results
    def follow(self, program, result, slot, path=()):
        """The result handed back to the caller: objects that are not plain data are followed as handles."""
        where = ["slot", slot, list(path)]
        if isinstance(result, (_Iter, _Fn)) or id(result) in program.handles:
            return result
        if self.known(result):
            program.track(result, where)
            return result
        if _is_iterator(result):
            proxy = _Iter(result, self, program)
            program.track(proxy, where)
            return proxy
        if callable(result) and not isinstance(result, type) and ref_of(result) is None:
            proxy = _Fn(result, self, program)
            program.track(proxy, where)
            return proxy
        if type(result) in (list, tuple) and len(result) <= 64 and len(path) < 3 and not is_data(result):
            items = [self.follow(program, item, slot, (*path, i)) for i, item in enumerate(result)]
            return type(result)(items)
        return result

    # -- one crossing into the package
    def cross(self, program, step, fn, args, kwargs, self_obj=None):
        """Record `step` (its arguments encoded here), run fn and follow the result."""
        try:
            enc_args, enc_kwargs, values, kw_values = self.encode_args(program, args, kwargs)
        except Unrecordable:
            if self_obj is not None:
                program.forget(self_obj)
            for a in (*args, *kwargs.values()):
                program.forget(a)
            return self.run(fn, (self_obj, *args) if self_obj is not None else args, kwargs)
        step.update(args=enc_args, kwargs=enc_kwargs, src=self.caller())
        slot = program.add(step)
        if slot is None:
            return self.run(fn, (self_obj, *args) if self_obj is not None else args, kwargs)
        result = self.run(fn, (self_obj, *values) if self_obj is not None else values, kw_values)
        return self.follow(program, result, slot)

    def run(self, fn, args, kwargs):
        self.depth += 1
        try:
            return fn(*args, **kwargs)
        finally:
            self.depth -= 1

    def nested(self, target, fn, args, kwargs):
        """A deleted function called inside recorded code: a one-step program of its own when every
        argument is plain data."""
        if len(self.inner) < MAX_INNER and threading.current_thread() is threading.main_thread():
            try:
                step = {"op": "call", "fn": target, "args": [encode(a, no_other) for a in args],
                        "kwargs": [[k, encode(v, no_other)] for k, v in kwargs.items()], "src": "inner"}
            except Unrecordable:
                step = None
            if step is not None and len(json.dumps(step)) > MAX_STEP_BYTES:
                step = None
            if step is not None and all(step != p["steps"][0] for p in self.inner):
                self.inner.append({"name": "inner", "steps": [step]})
        return self.run(fn, args, kwargs)

    # -- wrappers
    def function(self, target, fn, bound_to=None, deleted=True):
        rec = self
        if bound_to is not None:  # a classmethod, installed as a staticmethod that binds it to its class
            fn = functools.partial(fn, bound_to)

        @functools.wraps(fn)
        def recorded(*args, **kwargs):
            if rec.recording():
                return rec.cross(rec.program, {"op": "call", "fn": target}, fn, args, kwargs)
            if rec.depth > 0 and bound_to is None and deleted:
                return rec.nested(target, fn, args, kwargs)
            return fn(*args, **kwargs)

        recorded.__fd_original__ = fn
        return recorded

    def method(self, name, fn):
        rec = self

        @functools.wraps(fn)
        def recorded(obj, *args, **kwargs):
            program = rec.program
            if rec.recording() and id(obj) in program.handles:
                return rec.cross(program, {"op": "method", "obj": program.handles[id(obj)], "name": name}, fn,
                                 args, kwargs, self_obj=obj)
            return rec.run(fn, (obj, *args), kwargs) if rec.recording() else fn(obj, *args, **kwargs)

        recorded.__fd_original__ = fn
        return recorded

    def constructor(self, cls, fn, is_new):
        """__init__ (or __new__ where a class has no __init__ of its own): the first one to run for a new object
        from outside a recorded call is a `new` step of the package class that the object is."""
        rec = self

        @functools.wraps(fn)
        def recorded(first, *args, **kwargs):
            program = rec.program
            if not rec.recording():
                return fn(first, *args, **kwargs)
            made = first if is_new else type(first)
            owner = next((c for c in made.__mro__ if c in rec.classes and ref_of(c)), None)
            if is_new or id(first) not in program.handles:
                if owner is None:
                    return rec.run(fn, (first, *args), kwargs)
                try:
                    enc_args, enc_kwargs, values, kw_values = rec.encode_args(program, args, kwargs)
                except Unrecordable:
                    return rec.run(fn, (first, *args), kwargs)
                slot = program.add({"op": "new", "cls": ref_of(owner), "args": enc_args, "kwargs": enc_kwargs,
                                    "src": rec.caller()})
                if slot is None:
                    return rec.run(fn, (first, *args), kwargs)
                if is_new:
                    obj = rec.run(fn, (first, *values), kw_values)
                    program.track(obj, ["slot", slot, []])
                    return obj
                program.track(first, ["slot", slot, []])
                return rec.run(fn, (first, *values), kw_values)
            return rec.run(fn, (first, *args), kwargs)

        recorded.__fd_original__ = fn
        return recorded

    def wrap_class(self, cls):
        """Wrap what a class defines (and the Python methods it inherits from outside the package); an attribute
        the class does not let be replaced stays as it is."""
        def put(name, value):
            try:
                setattr(cls, name, value)
            except (TypeError, AttributeError):
                pass

        own = cls.__dict__
        for name, attr in list(own.items()):
            if name in _SKIP or (name.startswith("__") and name not in _INHERITED_DUNDERS and name != "__init__"
                                 and not isinstance(attr, types.FunctionType)):
                continue
            if isinstance(attr, types.FunctionType):
                put(name, self.method(name, attr))
            elif isinstance(attr, (staticmethod, classmethod)) and isinstance(attr.__func__, types.FunctionType) \
                    and ref_of(cls) is not None:
                # Called through the class or an instance alike: a call of the class's attribute by name.
                target = ["ref", cls.__module__, f"{cls.__qualname__}.{name}"]
                bound = self.function(target, attr.__func__, bound_to=cls if isinstance(attr, classmethod) else None)
                put(name, staticmethod(bound))
            elif isinstance(attr, property) and isinstance(attr.fget, types.FunctionType):
                put(name, property(self.getter(name, attr.fget), attr.fset, attr.fdel, attr.__doc__))
        # Methods a package class inherits from the standard library (MutableMapping.get, say) are crossings too.
        for name in dir(cls):
            if name in _SKIP or name in own or (name.startswith("__") and name not in _INHERITED_DUNDERS):
                continue
            owner = next((c for c in cls.__mro__ if name in c.__dict__), None)
            attr = owner.__dict__[name] if owner is not None else None
            if owner is not None and owner not in self.classes and owner is not object \
                    and isinstance(attr, types.FunctionType):
                put(name, self.method(name, attr))
        init = cls.__dict__.get("__init__")
        if isinstance(init, types.FunctionType):
            put("__init__", self.constructor(cls, init, is_new=False))
        elif cls.__init__ is object.__init__ and cls.__new__ is not object.__new__ and "__new__" not in own:
            base_new = cls.__new__
            put("__new__", staticmethod(self.constructor(cls, lambda c, *a, **k: base_new(c, *a, **k),
                                                                  is_new=True)))

    def getter(self, name, fget):
        rec = self

        @functools.wraps(fget)
        def recorded(obj):
            program = rec.program
            if rec.recording() and id(obj) in program.handles:
                slot = program.add({"op": "getattr", "obj": program.handles[id(obj)], "name": name,
                                    "src": rec.caller()})
                result = rec.run(fget, (obj,), {})
                return rec.follow(program, result, slot) if slot is not None else result
            return fget(obj)

        return recorded

    def install(self, targets, callers=False):
        for module, _, _ in targets:
            importlib.import_module(module)
        modules = [m for m in list(sys.modules.values())
                   if isinstance(getattr(m, "__file__", None), str) and self.in_package(m.__file__)]
        for m in modules:
            for value in list(vars(m).values()):
                if isinstance(value, type) and value.__module__ == m.__name__:
                    self._collect(value)
        for cls in sorted(self.classes, key=lambda c: len(c.__mro__)):
            try:
                self.wrap_class(cls)
            except Exception as exc:  # noqa: BLE001 - a class that cannot be followed is only not followed
                sys.stderr.write(f"fd_calls: {_qual(cls)} not followed: {type(exc).__name__}: {exc}\n")
        for module, qualname, kind in targets:
            if kind != "function" or "." in qualname:
                continue
            fn = getattr(importlib.import_module(module), qualname)
            fn = getattr(fn, "__fd_original__", fn)
            self.replace(fn, self.function(["ref", module, qualname], fn))
        if callers:
            # The package's public functions too, for code the tests reach only through them (its arguments there
            # are no plain data: a regex match handed to a helper by `re.sub`).
            deleted = {(module, qualname) for module, qualname, _ in targets}
            for m in modules:
                for name, value in list(vars(m).items()):
                    if isinstance(value, types.FunctionType) and not name.startswith("_") \
                            and value.__module__ == m.__name__ and (m.__name__, name) not in deleted \
                            and value.__qualname__ == name:
                        self.replace(value, self.function(["ref", m.__name__, name], value, deleted=False))

    @staticmethod
    def replace(fn, wrapper):
        """`wrapper` wherever a module holds `fn` under any name."""
        for mod in list(sys.modules.values()):
            namespace = getattr(mod, "__dict__", None)
            if not isinstance(namespace, dict):
                continue
            for key, value in list(namespace.items()):
                if value is fn:
                    namespace[key] = wrapper

    def _collect(self, cls):
        if cls in self.classes:
            return
        self.classes.add(cls)
        for value in list(vars(cls).values()):
            if isinstance(value, type) and value.__qualname__.startswith(cls.__qualname__ + "."):
                self._collect(value)

    # -- programs
    def start(self, name):
        self.program = Program(name)

    def finish(self):
        p, self.program = self.program, None
        if p is not None and p.steps:
            self.programs.append(p)

    def output(self):
        """Programs of tests spread evenly over the run (streams and callbacks as they were read to the end)."""
        every = max(1, -(-len(self.programs) // MAX_PROGRAMS))
        return [p.json() for p in self.programs[::every]] + self.inner


_INHERITED_DUNDERS = frozenset({
    "__contains__", "__iter__", "__len__", "__getitem__", "__setitem__", "__delitem__", "__reversed__",
    "__repr__", "__str__", "__bool__", "__call__", "__enter__", "__exit__", "__add__", "__sub__", "__and__",
    "__or__", "__xor__", "__le__", "__lt__", "__ge__", "__gt__", "__iadd__", "__isub__", "__ior__", "__iand__",
    "__ixor__", "__radd__", "__rsub__", "__rand__", "__ror__", "__rxor__", "__next__",
})


class _Stream:
    """An iterator the test handed to the package: forwards every item and writes it down."""

    def __init__(self, it, rec):
        self._it, self._rec = it, rec
        self.items = []
        self.encoding = ["stream", {"items": self.items, "end": False}]

    def __iter__(self):
        return self

    def __next__(self):
        try:
            item = next(self._it)
        except StopIteration:
            self.encoding[1]["end"] = True
            raise
        if len(self.items) < MAX_STREAM:
            try:
                self.items.append(encode(item, no_other))
            except Unrecordable:
                self.items.append(None)
        return item


class _Callback:
    """One of the test's own functions handed to the package: answers as it does and writes the answers down."""

    def __init__(self, fn):
        self._fn = fn
        self.calls = []
        names = {k: getattr(fn, k, None) for k in ("__name__", "__qualname__", "__doc__", "__module__")}
        self.encoding = ["callback", {"calls": self.calls,
                                      "names": {k: v for k, v in names.items() if isinstance(v, str)}}]

    def __call__(self, *args, **kwargs):
        try:
            result = self._fn(*args, **kwargs)
        except Exception as exc:
            # A callback that raises is part of the contract too (more-itertools' `iterate` stops where `func` raises
            # StopIteration): the replay raises it again.
            self._write(args, kwargs, exc, raised=True)
            raise
        self._write(args, kwargs, result)
        return result

    def _write(self, args, kwargs, result, raised=False):
        if len(self.calls) >= MAX_TABLE:
            return
        try:
            key = [[encode(a, opaque) for a in args], [[k, encode(v, opaque)] for k, v in kwargs.items()]]
        except Unrecordable:
            return
        try:
            answer = ["raise", encode(result, no_other)] if raised else encode(result, no_other)
        except Unrecordable:
            answer = None
        self.calls.append([key, answer])

    def __getattr__(self, name):
        return getattr(self._fn, name)


class _Iter:
    """An iterator the package returned: each `next` from outside is a step."""

    def __init__(self, it, rec, program):
        self._it, self._rec, self._program = it, rec, program

    def __iter__(self):
        return self

    def __next__(self):
        rec, program = self._rec, self._program
        if rec.recording() and rec.program is program and id(self) in program.handles:
            slot = program.add({"op": "next", "obj": program.handles[id(self)], "src": rec.caller()})
            if slot is not None:
                return rec.follow(program, rec.run(next, (self._it,), {}), slot)
        return next(self._it)

    def __length_hint__(self):
        return getattr(self._it, "__length_hint__", lambda: 0)()

    def __getattr__(self, name):
        return getattr(self._it, name)


class _Fn:
    """A function the package returned: each call from outside is a step."""

    def __init__(self, fn, rec, program):
        self._fn, self._rec, self._program = fn, rec, program

    def __call__(self, *args, **kwargs):
        rec, program = self._rec, self._program
        if rec.recording() and rec.program is program and id(self) in program.handles:
            return rec.cross(program, {"op": "callh", "obj": program.handles[id(self)]}, self._fn, args, kwargs)
        return self._fn(*args, **kwargs)

    def __getattr__(self, name):
        rec, program = self._rec, self._program
        value = getattr(self._fn, name)
        if rec.recording() and rec.program is program and id(self) in program.handles and not name.startswith("__"):
            slot = program.add({"op": "getattr", "obj": program.handles[id(self)], "name": name, "src": rec.caller()})
            if slot is not None:
                return rec.follow(program, value, slot)
        return value


_RECORDER = None


def pytest_configure(config):
    global _RECORDER, REF_OK
    spec = json.loads(os.environ.get("FD_CALLS_SPEC", "{}"))
    if spec:
        _RECORDER = Recorder(spec["src"], spec["root"])
        REF_OK = _RECORDER.importable
        _RECORDER.install(spec["targets"], spec.get("callers", False))


def pytest_runtest_logstart(nodeid, location):
    if _RECORDER is not None:
        _RECORDER.start(nodeid)


def pytest_runtest_logfinish(nodeid, location):
    if _RECORDER is not None:
        _RECORDER.finish()


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("FD_CALLS_OUT")
    if path and _RECORDER is not None:
        with open(path, "w") as f:
            json.dump(_RECORDER.output(), f)


# ------------------------------------------------------------------------------------------- replaying

class _Table:
    """A callback's recorded answers: the first unused answer to the same arguments, else the last one given to
    them; arguments it has never seen are an Artifact, or answered `otherwise` where a program gives one (an object
    filled with new items calls a cache's `ttu` with keys no test used: `behaviour.filled`). The driver's own: the
    code gets `_stub`'s function."""

    def __init__(self, calls, driver, reenter=None, otherwise=None, raises=None):
        self._driver = driver
        self._reenter = reenter  # a step the first call makes before it answers (`Driver.reenter`)
        self._otherwise = otherwise
        self._raises = raises  # [name, module, n]: the n-th call (from 0) raises that error (`behaviour.raising`)
        self._table = {}
        for key, answer in calls:
            self._table.setdefault(json.dumps(key, sort_keys=True), []).append(answer)
        self._used = {}
        self.count = 0  # calls, observed step by step: a rebuild that calls a callback twice doubles its side effects

    def answer(self, args, kwargs):
        self.count += 1
        if self._reenter is not None:
            step, self._reenter = self._reenter, None
            self._driver.reenter(step)
        if self._raises is not None and self.count == self._raises[2] + 1:
            raise _error(*self._raises[:2])
        try:
            key = json.dumps([[encode(a, opaque) for a in args], [[k, encode(v, opaque)] for k, v in kwargs.items()]],
                             sort_keys=True)
        except Unrecordable:
            key = None
        answers = self._table.get(key)
        if not answers and self._otherwise is not None:
            answers = [self._otherwise]
        if not answers:
            self._driver.artifact("callback")
        n = self._used.get(key, 0)
        self._used[key] = n + 1
        answer = answers[min(n, len(answers) - 1)]
        if answer is None:
            self._driver.artifact("callback")
        if answer[0] == "raise":
            raise decode(answer[1], self._driver.decode_other)
        return decode(answer, self._driver.decode_other)


def _stub(table, names):
    """The function the code gets for a test's callback: a plain function, as the test's was, with its names and no
    attribute of the replay's (red team 5, U5: `iterate` calling `func` twice unless `func` had the stub's `count`)."""
    def callback(*args, **kwargs):
        return table.answer(args, kwargs)

    for key, value in (names or {}).items():  # what code reads off a function: __name__, __qualname__, __module__, ...
        setattr(callback, key, value)
    return callback


def _callable_as(fn, how, name, module, getter=None):
    """A callable (a test's callback, a function the tests name) handed as users' callables also are, answering as
    `fn` (red team 25, F25 and O25: a plain function is all any test's callback was replayed as): a method of an
    object of a user's class named `name` in `module` ("method"); a builtin method bound to an object, a mapping's
    `__getitem__` whose missing keys `fn` answers, as `max(d, key=d.get)` ("builtin"); a method-wrapper, a partial's
    `__call__` ("wrapper"); a
    `functools.partial` ("partial"); a function memoized by `functools.lru_cache` ("cached"); an object of a user's
    class that defines `__call__` ("object": a strategy, a scorer, a model's predictor). The builder hands a
    builtin method only one hashable argument, a memoized one only answers that are a function of its arguments.
    And `operator`'s callables in place of a callback of one argument ("getter": red team 28, O28, a guard refusing an
    `itemgetter` was paid on all 7 tasks played): `getter` is ["itemgetter", key], ["attrgetter", name] or
    ["methodcaller", name, [args]] (encoded), which `behaviour.getter_of` chose to answer as the callback did where
    one does; gold's answers to it are the check."""
    if how == "method":
        def method(self, *args, **kwargs):
            return fn(*args, **kwargs)
        for key in ("__name__", "__qualname__", "__doc__", "__module__"):
            value = getattr(fn, key, None)
            if isinstance(value, str):
                setattr(method, key, value)
        holder = type(name, (), {"__module__": module, "__qualname__": name})
        return types.MethodType(method, holder())
    if how == "builtin":
        holder = type(name, (dict,), {"__module__": module, "__qualname__": name,
                                      "__missing__": lambda self, key: fn(key)})
        return holder().__getitem__
    if how == "wrapper":
        return functools.partial(fn).__call__
    if how == "partial":
        return functools.partial(fn)
    if how == "cached":
        return functools.lru_cache(maxsize=None)(fn)
    if how == "object":
        return type(name, (), {"__module__": module, "__qualname__": name,
                               "__call__": lambda self, *args, **kwargs: fn(*args, **kwargs)})()
    if how == "getter":
        kind, *rest = getter
        if kind == "itemgetter":
            return operator.itemgetter(decode(rest[0], None))
        if kind == "attrgetter":
            return operator.attrgetter(rest[0])
        if kind == "methodcaller":
            return operator.methodcaller(rest[0], *(decode(a, None) for a in rest[1]))
    raise ValueError("unknown callable " + how)


class _Feed:
    """A stream replayed: its recorded items, then the end if the test's iterator ended there. The code is handed
    `handed(draw)`, not the feed itself: a class of the replay's own is a trait that code can tell from any iterator
    a user hands it (red team 10; red team 12's S12: gold only for `type(seq).__name__ == "_Feed"`), and so would be
    any one kind of iterator the replay always handed."""

    def __init__(self, items, end, driver):
        self._items, self._end, self._driver = items, end, driver
        self._read = 0
        self._listed = None  # the list iterator handed over, where one was
        self.ended = False  # whether it raised StopIteration: the code read past its last item

    @property
    def taken(self):
        if self._listed is not None:
            return len(self._items) - self._listed.__length_hint__()
        return self._read

    def __iter__(self):
        return self

    def __next__(self):
        if self._read >= len(self._items):
            if self._end:
                self.ended = True
                raise StopIteration
            self._driver.artifact("stream")
        item = self._items[self._read]
        self._read += 1
        if item is None:
            self._driver.artifact("stream")
        return self._driver.feeding(decode(item, self._driver.decode_other))

    def closed(self, handed):
        """Whether `handed`, the generator handed over for the feed, was closed before the feed ended, having started:
        code that reads it through `yield from` closes it with its own generator, and a caller's generator read on
        after the call then ends at once (red team 29, C29: paid on 17 of 22, every answer gold's). Read by
        `gi_suspended` and `gi_running`: `gi_frame` is the audit hook's to refuse."""
        return type(handed).__name__ == "generator" and self._read > 0 and not self.ended \
            and not handed.gi_suspended and not handed.gi_running

    def handed(self, draw):
        """The feed as one of the commonest iterators users hand over, by `draw` (a number the program fixes, so that
        gold's answers were recorded on the kind a replay hands): a generator expression written at a module's top
        level (its frame and code are the audit hook's to refuse: `gi_frame`, `gi_code`), or where the stream ended
        and every item was recorded, `iter()` of a list of its items."""
        if draw % 2 and self._end and None not in self._items:
            self._listed = iter([self._driver.feeding(decode(item, self._driver.decode_other)) for item in self._items])
            return self._listed
        return _generator(self)


class _Timeout(Artifact):
    pass


class Driver:
    def __init__(self, root=None):
        self.flag = None
        self.clock = None  # (start,) of the running step, a new tuple for each step; None between steps
        self.root = root  # the package's directory ("/"-terminated), whose objects' own state steps read
        self.receiver = None  # the object the running step is made on (a method's, an attribute's, an iterator's)
        self.warned = None  # [category, message] of each warning shown in the running step (`shown`); None between
        self.show = warnings._showwarnmsg

    def shown(self, message):
        """What the warnings machinery shows (it calls `warnings._showwarnmsg`, a private name agent code cannot
        reach, under the process's own filters, which stay as a user's are), kept for the step that showed it, then
        shown as before. A warning is output a user sees, and an exception under `-W error` (red team 16, V16: a
        `UserWarning` at every call, filed under `sys` by a huge stack level, paid on the 34 tasks whose file warns)."""
        if self.warned is not None:
            try:
                text = str(message.message)[:MAX_WARNING]
            except Exception as exc:  # noqa: BLE001 - a message of the code's own class whose str fails: seen by how
                text = _qual(type(exc))
            kind = _qual(message.category) if isinstance(message.category, type) else "?"
            if len(self.warned) < MAX_WARNINGS:
                self.warned.append([kind, text])
            elif len(self.warned) == MAX_WARNINGS:  # past the cap, counted: warning more than gold reads unlike gold
                self.warned.append(["more", 1])
            else:
                self.warned[-1][1] += 1
        self.show(message)

    def artifact(self, kind):
        if self.flag is None:
            self.flag = kind
        raise Artifact(kind)

    def decode_other(self, tag, value, whole):
        if tag == "slot":
            step, path = value, whole[2]
            if step >= len(self.slots) or self.failed[step]:
                raise _Unavailable()
            obj = self.slots[step]
            for i in path:
                obj = list(obj.values())[i] if isinstance(obj, dict) else obj[i]
            return obj
        if tag == "given":  # an argument an earlier step was handed, as it is now
            step, key = value, whole[2]
            if step >= len(self.given) or key not in self.given[step]:
                raise _Unavailable()
            return self.given[step][key]
        if tag == "callback":
            table = _Table(value["calls"], self, value.get("reenter"), value.get("otherwise"), value.get("raises"))
            stub = _stub(table, value.get("names"))
            if value.get("as"):
                stub = _callable_as(stub, *value["as"])
            self.stubs.append(stub)
            self.tables.append(table)
            return stub
        if tag == "fed":  # the items an iterator the driver makes (`_iterable_as`) yields
            for item in value:
                self.feeding(item)
            return value
        if tag == "stream":
            feed = _Feed(value["items"], value["end"], self)
            draw = hashlib.sha256(f"{self.program}/{len(self.feeds)}".encode()).digest()[0]
            self.feeds.append(feed)
            self.fed.append(feed.handed(draw))
            return self.fed[-1]
        raise ValueError("unknown tag " + tag)

    def feeding(self, item):
        """`item`, which an iterator the code was handed yields (a stream's, an `iterables` form's), kept with a digest
        of what it holds where it can change in place: the rows a generator yields are the caller's, and a step that
        changes one changes the caller's data (red team 28, M28: no check read them, and a rebuild that took a key
        out of each row it counted was paid on 14 of 16 tasks)."""
        self.watch(["fed", len(self.rows)], item)
        return item

    def watch(self, label, x):
        """Keep `x` (where it can change in place) to read again after every later step (`rows_changed`)."""
        if len(self.rows) < MAX_HANDED and _plain(x) is not None:
            self.rows.append([label, x, _state(x)])

    def rows_changed(self):
        """[label, what it holds now] of each kept container (`watch`) changed since it was kept or last read: read
        after every step, as a row handed in one step, or an argument of a step that answered a lazy object, can be
        changed in a later one."""
        out = []
        for row in self.rows:
            now = _state(row[1])
            if now != row[2]:
                row[2] = now
                out.append([row[0], self.observe(_plain(row[1]))])
        return out

    def reenter(self, step):
        """Make `step` (a call of the package, its arguments data and callbacks) from inside a callback, as code that
        hands the package a function that calls the package does, and keep what it answered (`reentered`, in the
        observation of the step that was running): code that keeps a marker of its own running answers a call made
        within another unlike gold (red team 14, R14: a nested `map_reduce` left unreduced)."""
        try:
            call, args, kwargs = self.prepare(step)
            result = call(*args, **kwargs)
            obs = ["ok", self.observe(result)]
        except Artifact:
            raise
        except Unrecordable as exc:
            obs = ["ok", ["unencodable", str(exc)[:200]]]
        except BaseException as exc:  # noqa: BLE001 - the exception is the outcome
            obs = _raised(exc)
        self.reentered.append(obs)

    def observe_other(self, x, depth):
        for i, stub in enumerate(self.stubs):
            if x is stub:
                return ["stub", i]
        for i, fed in enumerate(self.fed):
            if x is fed:
                return ["feed", i]
        key = id(x)
        if key in self.seen:
            return ["handle", self.seen[key]]
        self.seen[key] = len(self.kept)
        self.kept.append(x)
        if _is_iterator(x):
            kind = "iterator"
        elif callable(x) and not isinstance(x, type) and type(x).__module__ in ("builtins", "functools", "operator"):
            kind = "callable"  # a function, closure, bound method or partial alike
        else:
            kind = _qual(type(x))
        return ["handle", self.seen[key], kind]

    def observe(self, value):
        enc = encode(value, self.observe_other, items=MAX_OBSERVED_ITEMS)
        text = json.dumps(enc)
        return enc if len(text) <= MAX_OBSERVATION else ["digest", hashlib.sha256(text.encode()).hexdigest()]

    def run(self, steps, seed=0):
        self.slots, self.failed = [], []
        self.stubs, self.tables, self.feeds, self.seen, self.kept, self.iters = [], [], [], {}, [], {}
        self.fed = []  # what the code was handed for each of `feeds`
        self.rows = []  # [label, container, its `_state`] read after every step (`watch`)
        self.closed = set()  # indices of `feeds` whose generator was closed early (`_Feed.closed`)
        self.reentered = []  # what the calls made from inside callbacks answered (`reenter`)
        self.states = []  # [reading, its digest] of the package's objects the steps were made on (`own_state`)
        self.held = []  # those objects, kept to the program's end: no other object takes an id a reading names
        self.names = []  # [reading, digest of the object's class and attribute names] where those change
        self.given, self.handed = [], {}  # each step's arguments; {id: [step, key, path...]} of their containers
        # Seeded by the program as well: were every program to start from one seed, its first draw would pick the
        # same place every time, and a rebuild that always picks that place (red team 5, R5: a FIFO `rr_cache`
        # that draws for show) would answer every program's first draw like gold.
        self.program = json.dumps(steps, sort_keys=True)
        random.seed(f"{seed}/{self.program}")
        out, self.spent = [], []  # seconds each step took: the builder keeps only quick steps of large inputs
        for step in steps:
            draw_room()
            started = time.monotonic()
            self.clock = (started,)
            signal.setitimer(signal.ITIMER_PROF, STEP_S + STEP_SLACK_S + PROF_SLACK_S)
            try:
                obs, result, ok = self.step(step)
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
                self.spent.append(round(time.monotonic() - started, 3))
                self.clock = None
            out.append(obs)
            self.slots.append(result)
            self.failed.append(not ok)
            if obs[0] == "timeout":
                break
        return out

    def dropped(self):
        """Indices of `feeds` whose generator is closed once the program's steps are over and what they answered and
        were handed is dropped, as a caller drops a lazy answer before reading its own generator on: a lazy rebuild
        reading the caller's generator through `yield from` closes it only then, after every step (red team 29, C29
        on `ichunked`, `strip`: paid 1.000). Collected only where a fed generator was left part read."""
        open_ = [i for i, f in enumerate(self.feeds) if i not in self.closed and f.taken and not f.ended]
        if not open_:
            return []
        import gc

        self.slots, self.kept, self.iters, self.seen, self.held, self.stubs = [], [], {}, {}, [], []
        self.given, self.handed, self.rows, self.tables, self.reentered = [], {}, [], [], []
        self.receiver = None
        gc.collect()
        return [i for i in open_ if self.feeds[i].closed(self.fed[i])]

    def step(self, step):
        self.flag = None
        self.given.append({})
        self.receiver = None
        try:
            call, args, kwargs = self.prepare(step)
        except _Unavailable:
            return ["unavailable"], None, False
        except Exception as exc:  # noqa: BLE001 - a reference that does not resolve on this code
            return ["raises", _qual(type(exc))], None, False
        given = [*enumerate(args), *kwargs.items()]
        index = len(self.given) - 1
        self.given[index] = dict(given)  # held to the program's end: ids of what it was handed stay unique
        for key, a in given:
            for i, (path, _) in _containers(a, [index, key], {}).items():
                if len(self.handed) < MAX_HANDED:
                    self.handed.setdefault(i, path)
        before = {key: _state(a) for key, a in given if _plain(a) is not None}
        calls = [t.count for t in self.tables]
        taken = [f.taken for f in self.feeds]
        reentered = len(self.reentered)
        self.warned = []
        # every step shows its warnings as a fresh process would: the once-per-place registries are emptied, so what a
        # step shows never hangs on which programs ran before it in this process
        warnings._filters_mutated()
        drawn = random.getstate()
        held = self.receiver if self.root and _of_package(self.receiver, self.root) else None
        if held is not None:
            self.held.append(held)
            stop = module_spaces()
            self.read(f"{index}<", held, stop)
        signal.setitimer(signal.ITIMER_REAL, STEP_S)
        try:
            result = call(*args, **kwargs)
            ok = True
        except Artifact:
            result, ok = None, False
        except BaseException as exc:  # noqa: BLE001 - the exception is the outcome
            result, ok = exc, False
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if self.flag == "timeout":
            return ["timeout"], None, False
        if self.flag is not None:
            return ["artifact", self.flag], None, False
        if held is not None:
            self.read(str(index), held, stop)
        # What a step did besides its answer, each where it did it: arguments changed in place (keyword ones and
        # containers nested in a tuple too), containers of the answer that are those the program handed to this step
        # or an earlier one (toolz `dissoc` handing back the caller's dict: red team A; a cache that stores a copy of
        # the value it was given: red team 7, A7), each callback's calls and each stream's items taken in this
        # step (red team 4, U2: `iterate` calling `func` twice per item), and where `random`'s shared stream stands
        # after a step that drew from it (R4: a FIFO `rr_cache` never draws; one that draws for show draws otherwise).
        extras = []
        try:
            mutated = [[key, self.observe(_plain(a))] for key, a in given if key in before and _state(a) != before[key]]
            mutated += self.rows_changed()
            shared = _shared(result, self.handed) if ok else []
        except Exception as exc:  # noqa: BLE001 - encoding ran the code's own methods
            mutated, shared = [["unencodable", _qual(type(exc))]], []
        if mutated:
            extras.append(["mutated", mutated])
        if shared:
            extras.append(["shares", shared])
        called = [[i, t.count - (calls[i] if i < len(calls) else 0)] for i, t in enumerate(self.tables)]
        called = [c for c in called if c[1]]
        if called:
            extras.append(["called", called])
        if len(self.reentered) > reentered:
            extras.append(["reentered", self.reentered[reentered:]])
        warned, self.warned = self.warned, None
        if warned:
            extras.append(["warned", warned])
        read = [[i, f.taken - (taken[i] if i < len(taken) else 0)] for i, f in enumerate(self.feeds)]
        read = [r for r in read if r[1]]
        if read:
            extras.append(["taken", read])
        closed = [i for i, (f, h) in enumerate(zip(self.feeds, self.fed)) if i not in self.closed and f.closed(h)]
        if closed:
            self.closed.update(closed)
            extras.append(["closed", closed])
        state = random.getstate()
        if state != drawn:
            extras.append(["rng", hashlib.sha256(repr(state).encode()).hexdigest()[:16]])
        if not ok:
            return [*_raised(result), *extras], None, False
        try:
            obs = ["ok", self.observe(result)]
        except Unrecordable as exc:
            obs = ["ok", ["unencodable", str(exc)[:200]]]
        except Exception as exc:  # noqa: BLE001 - encoding ran the code's own methods
            obs = ["ok", ["unencodable", _qual(type(exc))]]
        if obs[1][:1] == ["handle"]:  # a lazy answer (a generator, an object) runs the code again in later steps,
            for key, a in given:  # which can change what this step was handed (red team 29, P29: paid 1.000)
                self.watch(["given", index, key], a)
        return obs + extras, result, True

    def read(self, label, obj, stop):
        """A reading of a package's object a step is made on (`own_state`, `own_names`): the object's id and its
        class's with the digest of what it holds, and where its names (or another object's) change, the names."""
        self.states.append([label, f"{id(obj):x}.{id(type(obj)):x}.{own_state(obj, self.root, stop)}"])
        names = own_names(obj)
        if not self.names or self.names[-1][1] != names:
            self.names.append([label, names])

    def prepare(self, step):
        args = [decode(a, self.decode_other) for a in step.get("args", [])]
        kwargs = {k: decode(v, self.decode_other) for k, v in step.get("kwargs", [])}
        op = step["op"]
        if op in ("call", "new"):
            return decode(step["fn" if op == "call" else "cls"], self.decode_other), args, kwargs
        obj = decode(step["obj"], self.decode_other)
        self.receiver = obj
        if op == "callh":
            return obj, args, kwargs
        if op == "next":
            it = self.iters.get(id(obj))
            if it is None:
                it = self.iters[id(obj)] = iter(obj)
                self.kept.append(it)
            return next, [it], {}
        if op == "getattr":
            return getattr, [obj, step["name"]], {}
        if op == "spoil":
            return spoil, [obj], {}
        name = step["name"]
        method = functools.partial(getattr(type(obj), name), obj) if name.startswith("__") and name.endswith("__") \
            else getattr(obj, name)
        if op == "fill":
            return fill, [method, step.get("pairs", False), *args], {}
        return method, args, kwargs


CONTAINERS = (list, tuple, dict, set, bytearray, collections.deque, collections.OrderedDict, collections.Counter,
              collections.defaultdict)
MAX_SHARED = 200  # containers walked in an answer and in the arguments, each
MAX_HANDED = 2000  # containers of the arguments a program remembers


def _typed(x, depth):
    """Objects that are not plain data, by their type alone: no code of theirs runs."""
    return ["obj", _qual(type(x))]


def _plain(x):
    """What an argument that can change in place holds, as plain data read by its builtin base's own methods, so no
    method of a user's class runs: a builtin container itself; a subclass of one (a `Config(dict)`, a list of rows)
    as its base's items; a `UserList`'s or `UserDict`'s data; an `array`'s items. None for anything else (red team
    27, M27: "mutated" read only the exact builtin types, so a rebuild that popped a user's `UserDict` was paid)."""
    t = type(x)
    if t in CONTAINERS:
        return x
    if isinstance(x, array.array):
        return array.array.tolist(x)
    if t in _OWN_OBJECTS:  # the driver's own class: its attributes, by the instance dict, no code of the agent's
        return dict(object.__getattribute__(x, "__dict__"))
    if isinstance(x, (collections.UserList, collections.UserDict)):
        try:
            data = object.__getattribute__(x, "__dict__").get("data")
        except Exception:  # noqa: BLE001 - a class that hides its instance dict holds nothing we can read
            return None
        return _plain(data)
    base = next((b for b in t.__mro__ if b in CONTAINERS), None)
    if base is None:
        return None
    if issubclass(base, dict):
        return dict(base.items(x))  # OrderedDict's own order for its subclasses
    if base is set:
        return set(set.__iter__(x))
    return (tuple if base is tuple else list)(base.__iter__(x))


def _held(x, depth):
    """`encode`'s `other` for `_state`: a container of a user's class by what it holds, anything else by its type."""
    plain = _plain(x)
    if plain is None:
        return _typed(x, depth)
    return ["held", [_qual(type(x)), encode(plain, _held, depth + 1, MAX_OBSERVED_ITEMS)]]


def _state(x):
    """A digest of what an argument holds, to tell whether a step changed it: containers of users' classes by their
    items at any depth (`_held`), and past `MAX_ITEMS` (red team 27, L27: a larger list was compared by the name of
    the exception its encoding raised, the same before and after a rebuild popped it)."""
    try:
        text = json.dumps(encode(x, _held, items=MAX_OBSERVED_ITEMS))
    except Exception as exc:  # noqa: BLE001 - an argument too big or too deep is compared by what went wrong
        return _qual(type(exc))
    return hashlib.sha256(text.encode()).hexdigest()


def _snapshot(x):
    try:
        return json.dumps(encode(x, _typed))
    except Exception as exc:  # noqa: BLE001 - an argument too big or too deep is compared by what went wrong
        return _qual(type(exc))


def _containers(x, path, into, depth=0):
    """{id: (path, container)} of the mutable containers in `x` (itself, and what lists, tuples and dicts hold, 3
    levels down)."""
    if len(into) >= MAX_SHARED or depth > 3:
        return into
    t = type(x)
    if t in CONTAINERS and t is not tuple:
        into.setdefault(id(x), (path, x))
    if t in (list, tuple, collections.deque):
        for i, item in enumerate(list(x)[:MAX_SHARED]):
            _containers(item, [*path, i], into, depth + 1)
    elif t in (dict, collections.OrderedDict, collections.Counter, collections.defaultdict):
        for i, item in enumerate(list(x.values())[:MAX_SHARED]):
            _containers(item, [*path, i], into, depth + 1)
    return into


def _shared(result, handed):
    """[[path in the answer, [step, key, path in the argument]]] of each mutable container the answer holds that the
    program handed to a step as (part of) an argument (`handed`: {id: that path})."""
    return sorted([path, handed[i]] for i, (path, _) in _containers(result, [], {}).items() if i in handed)


SPOILED = "fd-spoiled"  # the item `spoil` adds: one a caller of its own would add


def spoil(x):
    """Add an item to each mutable container `x` holds (`_containers`: itself, 3 levels down), through the base
    type's own method (no method of the code's runs), as a caller that keeps an answer and adds to it does: the
    number changed. An answer the code keeps and hands out again (a module-level `{}` for every empty input: red
    team 14, M14) then holds the caller's item, in the next answer and in the package's state."""
    found = [c for _, c in _containers(x, [], {}).values()]
    for c in found:
        if isinstance(c, dict):
            dict.__setitem__(c, SPOILED, SPOILED)
        elif type(c) is set:
            set.add(c, SPOILED)
        elif type(c) is bytearray:
            bytearray.append(c, 0)
        else:
            type(c).append(c, SPOILED)  # list, deque: the exact types, so their own `append`
    return len(found)


def fill(method, pairs, items):
    """Call `method` (a store of an object: `__setitem__`, `add`, `append`) once for each of `items`, or each
    (key, value) of them with `pairs`: an object filled as a user's loop fills it (`behaviour.filled`)."""
    for item in items.items() if pairs else items:
        if pairs:
            method(*item)
        else:
            method(item)


ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")


def _raised(exc):
    """The observation of a raised exception: its type and arguments and, where it carries any, its notes (PEP 678),
    which every traceback a user sees prints under it (red team 18, E18: gold's exceptions with a line of text added
    by `add_note`, paid 1.0 on 5 of 6 tasks). Read from the exception's own dict, no code of the agent's run."""
    obs = ["raises", _qual(type(exc)), _exception_args(exc), *_chained(exc)]
    try:
        notes = _GENERIC_DICT(exc, None).get("__notes__")
    except AttributeError:
        notes = None
    if notes is None:
        return obs
    if type(notes) is not list:
        return [*obs, ["notes", _qual(type(notes))]]
    kept = [n[:MAX_WARNING] if type(n) is str else _qual(type(n)) for n in notes[:MAX_WARNINGS]]
    if len(notes) > MAX_WARNINGS:
        kept.append(["more", len(notes)])
    return [*obs, ["notes", kept]]


_CAUSE = BaseException.__cause__.__get__
_CONTEXT = BaseException.__context__.__get__
_SUPPRESSED = BaseException.__suppress_context__.__get__


def _chained(exc):
    """The second exception a traceback of `exc` shows, by type: its explicit cause (`raise ... from`), else the one
    being handled where it was raised unless suppressed (`from None`); nothing where it shows none. Red team 18, E18c:
    a rebuild that dropped gold's `from None` answered every step like gold while every traceback a user saw grew a
    second exception. Read through BaseException's own descriptors: no code of the agent's runs."""
    cause = _CAUSE(exc)
    if cause is not None:
        return [["cause", _qual(type(cause))]]
    context = _CONTEXT(exc)
    return [["context", _qual(type(context))]] if context is not None and not _SUPPRESSED(exc) else []


def _exception_args(exc):
    """A raised exception's arguments (its message), objects by type and memory addresses blanked: observed beside
    its type (red team 4, U3: `one([])` saying "too many items" where gold says "too few")."""
    try:
        text = ADDRESS.sub("0x?", json.dumps(encode(list(exc.args[:20]), _typed)))
    except Exception as exc2:  # noqa: BLE001 - arguments too big, too deep or failing as they are read
        return ["unencodable", _qual(type(exc2))]
    return json.loads(text) if len(text) <= MAX_OBSERVATION else ["digest", hashlib.sha256(text.encode()).hexdigest()]


# ------------------------------------------------------------------------------------------- the package's state

STDLIB_STATE = "stdlib:"  # names of the process's state outside the package: compared where both runs have them
# What the sandbox draws for every command (its time zone, `sandbox.zones`): inputs no code in the process can change
# (`time.tzset` rereads the environment, which agent code cannot reach), and that differ from one run to the next.
DRAWN = frozenset({"time.altzone", "time.timezone", "time.tzname", "time.daylight"})


def package_state(root, watched=()):
    """{name: digest} of what the package's modules hold at module level and on their classes (plain data, other
    objects by type; functions, classes and modules left out): compared by the grader with gold's, name by name, at
    the start and the end of the replay (red team 4, U1: an `ordinal` adding "window" to `UNCOUNTABLES`). Beside
    it, under STDLIB_STATE, the public module-level values of the standard modules agent code may import
    (`watched`, loaded ones), `decimal`'s context and the locale: the process's state that plain code can change
    (red team 5, P5: an `ordinal` setting `decimal.getcontext().prec = 6`)."""
    out = {}
    for mod_name, mod in sorted(list(sys.modules.items()), key=lambda kv: kv[0]):
        if mod_name.split(".", 1)[0] in watched and isinstance(mod, types.ModuleType):
            for name, value in list(vars(mod).items()):
                if name.startswith("_") or f"{mod_name}.{name}" in DRAWN:
                    continue
                if isinstance(value, type) and getattr(value, "__module__", None) == mod_name:
                    out[f"{STDLIB_STATE}{mod_name}.{name}"] = _class_digest(value)
                elif _stateful(value):
                    out[f"{STDLIB_STATE}{mod_name}.{name}"] = _object_digest(value)
            continue
        if not _in_package(mod, root):
            continue
        for name, value in list(vars(mod).items()):
            if name.startswith("__"):
                continue
            if isinstance(value, type) and getattr(value, "__module__", None) == mod_name:
                for attr, member in list(vars(value).items()):
                    if not attr.startswith("__") and _stateful(member):
                        out[f"{mod_name}.{value.__qualname__}.{attr}"] = _digest(member)
            elif _stateful(value):
                out[f"{mod_name}.{name}"] = _digest(value)
    if "decimal" in sys.modules:
        out[f"{STDLIB_STATE}decimal.getcontext()"] = _digest(repr(sys.modules["decimal"].getcontext()))
    if "locale" in sys.modules:
        out[f"{STDLIB_STATE}locale.setlocale()"] = _digest(sys.modules["locale"].setlocale(sys.modules["locale"].LC_ALL))
    return out


DRIFT = "drift"  # the state section of the names whose reachable state changed during the replay
MAX_WALK = 20_000  # objects one name's walk visits; a name that reaches more reads as changed (`_walk`)
# Read through `type`'s own descriptors: an attribute read on a class of the agent's metaclass runs the agent's code.
_MRO, _FLAGS, _QUALNAME, _DICT = (type.__dict__[n].__get__ for n in ("__mro__", "__flags__", "__qualname__",
                                                                    "__dict__"))
_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made at run time; one without it cannot change
_PYTHON = (types.FunctionType, staticmethod, classmethod, property)


def reachable_state(root, watched):
    """{name: digest} of everything each module-level name of the package (private and dunder names too) and each
    public name of the standard modules agent code may import reaches: containers (keys too), instances, functions
    (their defaults, closures and attributes), classes, generators' frames, `random.Random`'s state and what objects
    of types written in C hand to pickling. Read at the start and at the end of the replay, in one process, to tell
    which names' state the replay changed (DRIFT): a rebuild that keeps state where gold keeps none (red team 5, B5:
    a call counter in a new private list that makes `ordinal` wrong from its 5,000th call; or in a closure, an
    iterator, a generator, an attribute of a standard function) changes a name gold never changes. A walk enters
    only the functions and classes of the modules it reads (the package's files; the standard module's own): others
    are read under their own names. No code of the agent's runs: objects are walked by `gc.get_referents` and
    classes read through `type`'s descriptors."""
    stop = module_spaces()
    out, kinds, seen = {}, {}, {}
    for mod_name, mod in sorted(list(sys.modules.items()), key=lambda kv: kv[0]):
        if not isinstance(mod, types.ModuleType):
            continue
        if mod_name.split(".", 1)[0] in watched:
            names, prefix, home = [n for n in list(vars(mod)) if not n.startswith("_")
                                   and f"{mod_name}.{n}" not in DRAWN], STDLIB_STATE, mod
        elif _in_package(mod, root):
            names, prefix, home = [n for n in list(vars(mod)) if n != "__builtins__"], "", None
        else:
            continue
        enter = functools.partial(_owned, root=root, home=home)
        for name in names:
            value = vars(mod).get(name)
            out[f"{prefix}{mod_name}.{name}"] = _walk(value, stop, enter, kinds, seen, home is None,
                                                      f"{prefix}{mod_name}.{name}")
            if isinstance(value, type) and "_abc_impl" in _DICT(value):
                # what an ABC counts as its own, kept in C where no walk reaches (red team 11, P11a:
                # `numbers.Integral.register(float)` made `isinstance(2.5, Integral)` true for every caller)
                out[f"{prefix}{mod_name}.{name}.register()"] = _registered(value)
    return out


def _registered(cls):
    import _abc

    classes = (ref() for ref in _abc._get_dump(cls)[0])
    return ",".join(sorted(f"{_DICT(c).get('__module__')}.{_QUALNAME(c)}" for c in classes if isinstance(c, type)))


def _owned(x, root, home):
    """Whether a walk of the package's names (`home` None) or of the standard module `home`'s enters function or
    class `x`."""
    if type(x) is types.FunctionType:
        file = x.__code__.co_filename
        return file.startswith(root) if home is None else file == getattr(home, "__file__", None)
    module = _DICT(x).get("__module__")
    held = sys.modules.get(module) if isinstance(module, str) else None
    theirs = isinstance(held, types.ModuleType) and vars(held).get(_QUALNAME(x)) is x
    return not (theirs and not _in_package(held, root)) if home is None else theirs and held is home


_WHOLE = (tuple, list, dict, set, frozenset, types.BuiltinFunctionType, types.MethodType, types.CellType)
_PLAIN = (int, float, complex, bool, str, bytes, type(None))
# What the interpreter caches as code runs, not state of the code's: an ABC's record of the classes it was asked
# about (`isinstance(x, Mapping)` fills it), and `lru_cache`'s store, walked in the package only (`_walk`).
_ABC_DATA = type(collections.abc.Mapping._abc_impl)


def _kind(t, kinds):
    """What a walk does with an object of type `t`: (its name, "plain" | "code" | "space" | "abc" | "lru" | "class" |
    "function" | "random" | "c" (read from pickling too) | "object", whether a dict), kept in `kinds` (the walk looks
    there first)."""
    mro = _MRO(t)
    kind = ("plain" if t in _PLAIN else "code" if t is types.CodeType else "space" if t is types.ModuleType
            else "abc" if t is _ABC_DATA else "lru" if t is functools._lru_cache_wrapper
            else "class" if type in mro else "function" if t is types.FunctionType
            else "random" if random.Random in mro else "c" if t not in _WHOLE and _written_in_c(t) else "object")
    kinds[t] = (_QUALNAME(t), kind, dict in mro)
    return kinds[t]


def _walk(value, stop, enter, kinds, seen, caches, label=""):
    """The digest of what `value` reaches that no earlier walk of this reading did (`seen`: id -> (object, the label
    of the walk that met it first, its place in that walk)); with `caches`, what `functools.lru_cache` holds too (the
    package's own: a counter may hide there; the standard library's fill as any code calls them, `typing`'s as
    annotations are read). An object met again is read as where it was first met: which of several equal objects
    sits where is identity, and a permutation of them is state (red team 18, P18: a call counter in the order of a
    new private list of 40 empty lists, read back by `is` against a copy, paid on 66 of 66 tasks while a repeated
    object read as a bare "@"). The place is counted per walk, so a name of gold's that grows moves only the names
    that share objects with it."""
    import gc

    out = []  # what is read, hashed once at the end: one append per object is what keeps a reading fast
    stack, walked = [(value, True)], 0
    while stack and walked < MAX_WALK:
        x, reducible = stack.pop()
        t = type(x)
        name, kind, is_dict = kinds.get(t) or _kind(t, kinds)
        out.append(name)
        if kind == "plain":  # by value, wherever it is (the interpreter shares small numbers and strings)
            # A string keeps its hash (64 bits of SipHash under a key drawn per process, read once per process); a
            # large int is read by its bytes, never its hash, which is its value modulo 2**61 - 1 (red team 16, H16: a
            # call counter adding 2**61 - 1 to a new constant read the same at both ends); a float by its bits: every
            # NaN prints `nan`, whatever its payload holds (red team 15, W15n: a call counter there)
            out.append(hash(x) if t is str or t is bytes
                       else hashlib.sha256(x.to_bytes((x.bit_length() + 8) // 8, "little", signed=True)).digest()
                       if t is int and not -1 << 60 < x < 1 << 60
                       else struct.pack("<d", x) if t is float
                       else struct.pack("<dd", x.real, x.imag) if t is complex else x)
            continue
        if id(x) in seen:
            out.append(("@", *seen[id(x)][1:]))
            continue
        seen[id(x)] = (x, label, walked)  # ids stay unique while the reading holds what it made (pickling's tuples)
        walked += 1
        if kind == "code":
            out.append(x.co_qualname)
            continue
        if kind in ("space", "abc") or id(x) in stop or kind == "lru" and not caches:
            continue  # another namespace: walked under its own names, if at all; or the interpreter's cache
        if kind == "class":
            out.append(_QUALNAME(x))
            if not (_FLAGS(x) & _HEAPTYPE and enter(x)):
                continue
        elif kind == "function":
            out.append(x.__qualname__)
            if not enter(x):
                continue
        stack.extend((c, reducible) for c in gc.get_referents(x))
        if is_dict:
            stack.extend((k, reducible) for k in list(dict.keys(x)))  # string keys: the collector shows values only
        # What no referent shows (a generator's frame does; an iterator's position, a count, a seed do not), read
        # from pickling; what it makes is new at each read, so it is walked but never reduced again.
        if kind == "random":
            stack.append((random.Random.__mro__[1].getstate(x), False))  # `_random.Random`'s, in C
        elif kind == "c" and reducible:
            try:
                stack.append((t.__reduce_ex__(x, 4), False))
            except Exception as exc:  # noqa: BLE001 - not picklable: its referents are all there is
                out.append(_qual(type(exc)))
    if stack:
        # Cut at MAX_WALK: what was not read may hold state (red team 15, W15: a call counter in the last of 20,100
        # lists of a new private tuple, read the same at both ends), so the name reads as changed at every reading:
        # one gold keeps that large is among gold's drifted names too, one the agent added is state gold does not keep
        return "cut:" + os.urandom(8).hex()
    return hashlib.sha256(repr(out).encode()).hexdigest()[:16]


def _written_in_c(cls):
    """Whether no method of `cls` (nor of its bases, nor its metaclass) is Python code: pickling it then runs none."""
    return type(cls) is type and (not _FLAGS(cls) & _HEAPTYPE or not any(
        isinstance(v, _PYTHON) for k in _MRO(cls) for v in list(_DICT(k).values())))


# the states of the package's objects a program's steps were made on (`Driver.step`, `own_state`); no attribute's name
STATES = "(states)"
NAMES = "(names)"  # the classes and attribute names of those objects, where they change (`own_names`)
# CPython's own getter of an instance's `__dict__` slot (public C API since 3.3), resolved before any code of the
# task loads: it makes the dict of an instance whose attributes are inline without a lookup on the instance's class,
# which the class could answer itself (a `__dict__` property: code of the agent's, and no dict made)
_GENERIC_DICT = ctypes.pythonapi.PyObject_GenericGetDict
_GENERIC_DICT.restype = ctypes.py_object
_GENERIC_DICT.argtypes = (ctypes.py_object, ctypes.c_void_p)


def module_spaces():
    """{id: namespace} of every loaded module: a walk stops there (`own_state`, `reachable_state`). Each namespace is
    the module's own dict, held while the walk runs: `vars` may hand a new dict at each call (a cffi library's module
    does), whose id, freed at once, a dict the walk meets later could take and be skipped as a namespace."""
    out = {}
    for m in list(sys.modules.values()):
        if isinstance(m, types.ModuleType):
            try:
                space = _GENERIC_DICT(m, None)
            except AttributeError:
                continue
            out[id(space)] = space
    return out


def own_state(obj, root, stop):
    """The digest of what a package's object holds: its attributes' names and values, private ones too, and what
    they reach, read as the drift walk reads a module's names (no code of the agent's runs), up to the module
    namespaces `stop` (`module_spaces`, read once per step so both readings of it follow the same rules). Read
    before and after each step made on it (`Driver.step`), the program's readings of each object are compared by
    which of them are equal: where gold's object is as it was at an earlier reading (a lookup, a length, an item set
    then deleted, the one item a cache held popped), the rebuild's must be as it was at that reading too, whatever
    names it keeps its own representation under. A private call counter (red team 16, I16: wrong from the 50,001st
    call on one object, paid on 23 of 23 tasks with a deleted method) never returns to a value; bumped only in
    steps where gold's object changes as well (red team 17, M17: one-way "unchanged" steps), it still never
    returns. Compared one way: a rebuild may return where gold does not (`behaviour.states_kept`)."""
    import gc

    try:
        # CPython 3.11 keeps an instance's attributes inline until its `__dict__` is made, and the collector then
        # shows their values only: which names are set was a memory no reading saw (red team 17, N17: 9 of 18
        # private names present, all None, counting calls). Made here, for gold's object as for the rebuild's.
        _GENERIC_DICT(obj, None)
    except AttributeError:
        pass  # no `__dict__` (`__slots__` only): the collector shows every slot
    t = type(obj)
    return _walk([r for r in gc.get_referents(obj) if r is not t], stop,
                 functools.partial(_owned, root=root, home=None), {}, {}, True)


def own_names(obj):
    """The digest of a package object's class (module and qualified name) and the names of its attributes, private
    ones too, in a form every process reads alike (no string's hash): where the rebuild keeps gold's own class and its
    construction (no `__init__` among the deleted definitions: `behaviour.builds_objects`), the objects it works on
    hold gold's names at every reading (red team 17, M17 on `TLRUCache.popitem`: gold's object never returns to an
    earlier state there, and a private counter made in the rebuilt method went unread; a `__class__` swapped for a
    look-alike class). Read without code of the agent's (`own_state`)."""
    try:
        keys = list(_GENERIC_DICT(obj, None))
    except AttributeError:
        keys = []  # `__slots__` only: its class says which
    t = type(obj)
    names = sorted(k for k in keys if type(k) is str)
    # only plain strings are printed: a `str` subclass's repr is code of whoever made it
    home = [v if type(v) is str else "?" for v in (_DICT(t).get("__module__"), _QUALNAME(t))]
    return hashlib.sha256(repr([*home, names, len(keys) - len(names)]).encode()).hexdigest()[:16]


def _of_package(obj, root):
    """Whether `obj` is an instance of one of the package's classes (its class's module read without running code)."""
    module = _DICT(type(obj)).get("__module__")
    return isinstance(module, str) and _in_package(sys.modules.get(module), root)


def public_attributes(objects, root, prefix):
    """{prefix.slot.name: digest} of the public instance attributes of the objects the steps made that are instances
    of the package's classes, read once a program is done (red team 2: `time_limited` that starts with `timed_out =
    True` answered every step like gold). Private attributes are the rebuild's own representation."""
    out = {}
    for slot, obj in enumerate(objects):
        if not _in_package(sys.modules.get(getattr(type(obj), "__module__", None) or ""), root):
            continue
        try:
            attributes = _GENERIC_DICT(obj, None)  # not `vars`: a class may answer for its `__dict__` (`own_state`)
        except AttributeError:  # no __dict__: slots only
            continue
        for name in [k for k in list(attributes) if isinstance(k, str) and not k.startswith("_")]:
            out[f"{prefix}.{slot}.{name}"] = _digest(attributes[name])
    return out


def _in_package(module, root):
    """Whether `module` is one of the package's: its file lies under `root` (a directory, "/"-terminated)."""
    path = getattr(module, "__file__", None)
    return isinstance(path, str) and os.path.join(_realdir(os.path.dirname(path)), "").startswith(root)


@functools.lru_cache(maxsize=None)
def _realdir(path):
    return os.path.realpath(path)  # once per directory: the state readings ask for every module and class


def _stateful(value):
    return not isinstance(value, (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
                                  staticmethod, classmethod, property, functools.partial)) \
        and not type(value).__name__.endswith("_descriptor")


def _class_digest(cls):
    """A standard class's own members, by what they are (red team 6, P6k: `collections.Counter.most_common`
    replaced); dunders left out, as the interpreter adds some as it goes (`__slotnames__` on a first copy)."""
    members = {k: [_qual(type(v)), str(getattr(v, "__module__", "")), str(getattr(v, "__qualname__", ""))]
               for k, v in list(vars(cls).items()) if not (k.startswith("__") and k.endswith("__"))}
    return hashlib.sha256(json.dumps(members, sort_keys=True).encode()).hexdigest()[:16]


def _object_digest(value):
    """A standard module's value: plain data by value, an object also by its repr (addresses blanked) and its own
    attributes (red team 6: `decimal.DefaultContext.prec` and `calendar.c`'s first weekday, seen by type only)."""
    text = _snapshot(value)
    if text.startswith('["obj"'):
        try:
            text += ADDRESS.sub("0x?", repr(value))
        except Exception as exc:  # noqa: BLE001 - a repr that fails is compared by how
            text += _qual(type(exc))
        text += _snapshot(dict(vars(value))) if hasattr(value, "__dict__") else ""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _digest(value):
    return hashlib.sha256(_snapshot(value).encode()).hexdigest()[:16]


class _Unavailable(Exception):
    """A step refers to a result an earlier step did not produce."""


# The recursion room (frames left before RecursionError) is drawn for every step and for the package's import: at
# the driver's fixed depth it told code it was replayed (red team 10, D10: `ordinal` gold only where a plain recursive
# count found at most 993 frames left, "th" from a script's top level, where 996 are); drawn per program, a memory of
# the rooms told the replay (many rooms) from a user's loop (one: red team 11, R11). The range holds the room of a
# script's top level and more; never less than the room gold's answers were recorded with (Python's default limit of
# 1000 at the driver's fixed depth: 997 frames left above `run`, 998 above `main`), since gold's own deepest
# recursions (toolz `_merge_sorted_binary`) come within a few frames of it.
ROOM = (998, 1012)
# A raised limit, as scripts and notebooks that recurse set it (red team 19, R19: a 1,600-deep probe raising
# `RecursionError` only in the grader's rooms, paid 1.0), for the replay whose configuration has it (`Traits.deep`);
# gold answers there too, so an answer of gold's that depends on where recursion ends is no check
DEEP_ROOM = (3_000, 10_000)


def draw_room():
    """Set the recursion limit so that the caller has a room drawn from ROOM (the operating system's entropy: the
    program's seed is one its code might rebuild)."""
    frame, depth = sys._getframe(1), 0
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    sys.setrecursionlimit(depth + _ROOMS.randint(*(DEEP_ROOM if os.environ.get("FD_ROOM") == "deep" else ROOM)))


_ROOMS = random.SystemRandom()


def write_results(path, lines):
    with open(path, "w") as out:
        out.write("".join(line + "\n" for line in lines))


def watch(driver, done, path):
    """End the driver when a step runs past STEP_S + STEP_SLACK_S, keeping the programs already done."""
    while True:
        time.sleep(0.25)
        mark = driver.clock
        if mark is not None and time.monotonic() - mark[0] > STEP_S + STEP_SLACK_S and driver.clock is mark:
            write_results(path, list(done))
            os.write(2, f"\nfd-calls: program {len(done)} ran a step past its deadline ({STEP_S + STEP_SLACK_S} s): "
                        "its code caught the timeout; the replay is ended\n".encode())
            os._exit(DEADLINE_EXIT)


def main():
    import fd_guard  # noqa: F401 - installs the grader's audit hook (FD_GUARD) before any code of the task loads

    with open(sys.argv[1]) as f:
        programs = json.load(f)
    root = os.environ.get("FD_PACKAGE")
    root = os.path.realpath(root).rstrip("/") + "/" if root else None
    driver = Driver(root)
    warnings._showwarnmsg = driver.shown
    done = []

    def alarm(signum, frame):
        driver.flag = driver.flag or "timeout"
        raise _Timeout("step")

    signal.signal(signal.SIGALRM, alarm)
    threading.Thread(target=watch, args=(driver, done, sys.argv[2]), daemon=True).start()
    state = {}
    if root:
        driver.clock = (time.monotonic(),)  # the package's import is the agent's code running, under a deadline
        draw_room()
        for module in json.loads(os.environ.get("FD_MODULES", "[]")):
            try:
                importlib.import_module(module)
            except Exception:  # noqa: BLE001 - a module that does not import is seen in the programs' answers
                pass
        watched = frozenset(json.loads(os.environ.get("FD_STDLIB", "[]")))
        for module in sorted(watched):  # all of them, so that one gold never loads is compared too (red team 6, P6c)
            try:
                importlib.import_module(module)
            except ImportError:
                pass
        state["initial"] = package_state(root, watched)
        reached = reachable_state(root, watched)
        driver.clock = None
        state["objects"] = {}
    for index, program in enumerate(programs):
        observations = driver.run(program["steps"], int(os.environ.get("FD_SEED", "0")))
        driver.clock = (time.monotonic(),)
        if root:
            state["objects"].update(public_attributes(driver.slots, root, str(index)))
            # Keyed by the program's steps, not its place: the checks kept may be fewer than the programs answered
            key = hashlib.sha256(driver.program.encode()).hexdigest()[:16]
            if driver.states:
                state["objects"][f"{key}.{STATES}"] = driver.states
                state["objects"][f"{key}.{NAMES}"] = driver.names
        closed = driver.dropped()  # the agent's finalisers run, under the deadline
        driver.clock = None
        if closed and observations:
            observations[-1] = [*observations[-1], ["dropped", closed]]
        done.append(json.dumps([index, observations]))
        done.append(json.dumps(["spent", [index, driver.spent]]))
    if root:
        driver.clock = (time.monotonic(),)
        state["final"] = package_state(root, watched)
        now = reachable_state(root, watched)
        state[DRIFT] = {name: "changed" for name in sorted(set(reached) | set(now))
                        if reached.get(name) != now.get(name)}
        driver.clock = None
        done.append(json.dumps(["state", state]))
    import gc

    driver.clock = (time.monotonic(),)  # the agent's finalisers run now, under the deadline, and never again
    gc.collect()
    gc.disable()
    driver.clock = None
    write_results(sys.argv[2], done)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
