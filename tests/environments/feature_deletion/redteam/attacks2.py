"""The second red team's attacks (FINDINGS_2.md), as tool calls a rollout makes through `ToolSession`.

Each attack names its task by a unique part of the task id and builds the calls from what the agent sees (the
broken files, the visible tests) or, for the "restored all but one method" class, from the gold file with one
deleted method left as the task's stub: that stands for an agent that rebuilt everything but the one method, to
show that the checks never ask about it.

Held-out packages (python-slugify, humanize): their tasks are not bundled. `FD_REDTEAM_HELDOUT=PATH` names a
tasks file built with `uv run fd-build @ tests/environments/feature_deletion/redteam/heldout_small.toml` (4 tasks
per package, ~10 min); the attacks on those tasks are skipped without it.
"""

from __future__ import annotations

import ast
import copy
import functools
import os
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness import STUB, TASKS, rows

from feature_deletion import mutation
from feature_deletion.task import TaskRow

HELDOUT = os.environ.get("FD_REDTEAM_HELDOUT")


@functools.cache
def _rows(path: str) -> dict[str, TaskRow]:
    return {r.id: r for r in rows(Path(path))}


def row_of(key: str) -> TaskRow:
    """The one task whose id contains `key`, bundled or (with FD_REDTEAM_HELDOUT) held-out."""
    paths = [str(TASKS)] + ([HELDOUT] if HELDOUT else [])
    found = [r for p in paths for i, r in _rows(p).items() if key in i]
    if not found:
        skip_if_dropped(key)
    assert len(found) == 1, (key, [r.id for r in found])
    return found[0]


def skip_if_dropped(key: str) -> None:
    """Skip the test of a task the bundled set left out, with the reason the checks report gives."""
    import json

    dropped = json.loads(TASKS.with_name("tasks.checks.json").read_text()).get("dropped_tasks", {})
    why = [f"{task}: {reason}" for task, reason in dropped.items() if key in task]
    if why:
        pytest.skip("left out of the task set: " + "; ".join(why))


def tasks_dir_of(key: str) -> Path:
    row = row_of(key)
    return TASKS.parent if row.id in _rows(str(TASKS)) else Path(HELDOUT).parent


def needs_heldout(key: str) -> bool:
    return key.startswith(("python-slugify", "humanize"))


def replace_stub(row: TaskRow, body: str, target: int = 0) -> list[tuple[str, dict]]:
    """The target's file with `body` (dedented code) in place of its stub line (body deletions)."""
    rel = row.deletion.targets[target].file
    text = row.broken_files[rel]
    stub = next(line for line in text.splitlines() if line.strip() == STUB)
    indent = stub[: len(stub) - len(stub.lstrip())]
    code = textwrap.indent(textwrap.dedent(body).strip("\n") + "\n", indent)
    return [("write_file", {"path": rel, "content": text.replace(stub + "\n", code, 1)})]


def mutant(row: TaskRow, label: str) -> list[tuple[str, dict]]:
    """The gold code with one mutation-operator change (`feature_deletion.mutation`'s labels, all sites, not only the
    builder's 40): a rebuild wrong in one small, plausible place."""
    made = next(m for m in mutation.mutants(row, limit=10**6) if m.label == label)
    return [("write_file", {"path": rel, "content": made.text if rel == made.file else text})
            for rel, text in row.gold_files.items()]


@dataclass(frozen=True)
class Attack:
    task: str  # a unique part of the task id
    calls: Callable[[TaskRow], list[tuple[str, dict]]]
    what: str


# --- A. Wrong rebuilds the checks pay (the gate only asks what the visible tests' neighbourhood asks) -----------

ISITERABLE = '''
# Special-cased to the visible test: ints and the test's two "NotIterable..." classes are not iterable,
# everything else is. Wrong for None, floats, objects, generators' exhaustion... (gold: try iter(x)).
if isinstance(x, int):
    return False
if type(x).__name__.startswith("NotIterable"):
    return False
return True
'''

# A reservoir "sampler" with no randomness: the skips are what random() = 0.5 would give, and no shuffle. The
# kept checks are the steps where two seeded gold runs agree (errors, populations of one value), so they
# cannot see that this is not a random sample; test_counts (same stream as the uncounted sampler) fails.
SAMPLE_COUNTED = '''
from math import exp, floor, log, log1p
element = None
remaining = 0

def feed(i):
    nonlocal element, remaining
    while i + 1 > remaining:
        i = i - remaining
        element = next(population)
        remaining = next(counts)
    remaining -= i + 1
    return element

reservoir = []
try:
    for _ in range(k):
        reservoir.append(feed(0))
    W = 1.0
    while True:
        W *= exp(log(0.5) / k)
        skip = floor(log(0.5) / log1p(-W))
        element = feed(skip)
        reservoir[len(reservoir) // 2] = element
except StopIteration:
    pass
return reservoir
'''

# humanize's intcomma without its locale handling (the separators hard-coded): the checks replay outside the
# tests' `i18n.activate(...)`, so only the i18n F2P test sees it; the reward is the F2P fraction.
INTCOMMA = '''
import math

try:
    if isinstance(value, str):
        value = value.replace(",", "")
        if not math.isfinite(float(value)):
            return _format_not_finite(float(value))
        if "." in value:
            value = float(value)
        else:
            value = int(value)
    elif not isinstance(value, int):
        if not math.isfinite(float(value)):
            return _format_not_finite(float(value))
        float(value)
except (TypeError, ValueError):
    return str(value)
if ndigits is not None:
    return f"{value:,.{ndigits}f}"
return f"{value:,}"
'''

# slugify's entity decoding in the wrong order (numeric references before named ones): "&amp;#65;" decodes to
# "&#65;" instead of "A". No test or check asks about a double-encoded reference.
DECODE_ENTITIES = '''
if hexadecimal:
    text = MODERN_HEX_PATTERN.sub(lambda m: _numeric_reference(m, 16), text)
if decimal:
    text = DECIMAL_PATTERN.sub(lambda m: _numeric_reference(m, 10), text)
if entities:
    text = CHAR_ENTITY_PATTERN.sub(lambda m: chr(name2codepoint[m.group(1)]), text)
return text
'''

# inflection's camelize by splitting on "_" and upper-casing each part's first letter: "a__b" gives "AB" (gold
# "A_b"), "a_" gives "A" (gold "A_"). The checks' strings never hold two underscores in a row or a trailing one.
CAMELIZE = '''
if uppercase_first_letter:
    return "".join(part[:1].upper() + part[1:] for part in string.split("_"))
else:
    return string[0].lower() + camelize(string)[1:]
'''

# inflection's titleize with str.capitalize per space-separated word: "x-men" stays "X-men" (gold "X-Men"),
# "o'neil" gives "O'neil" (gold "O'Neil").
TITLEIZE = '''
return " ".join(w.capitalize() for w in humanize(underscore(word)).split(" "))
'''

PAID: dict[str, Attack] = {
    "camelize_by_split": Attack("inflection/__init__.py:camelize:", lambda r: replace_stub(r, CAMELIZE),
                                "inflection camelize by str.split('_')"),
    "titleize_by_capitalize": Attack("inflection/__init__.py:titleize:", lambda r: replace_stub(r, TITLEIZE),
                                     "inflection titleize by str.capitalize per word"),
    "isiterable_special_cased": Attack("toolz/itertoolz.py:isiterable:", lambda r: replace_stub(r, ISITERABLE),
                                       "toolz isiterable special-cased to the visible test's inputs"),
    "sample_counted_not_random": Attack("more.py:_sample_counted:", lambda r: replace_stub(r, SAMPLE_COUNTED),
                                        "more-itertools _sample_counted with no randomness"),
    "ttlcache_without_setstate": Attack("__init__.py:TTLCache:methods", lambda r: _stubbed_file(
        r, ["TTLCache.__setstate__"]), "cachetools TTLCache rebuilt without __setstate__ (unpickling)"),
    "juxt_without_pickling": Attack("functoolz.py:juxt:methods", lambda r: _stubbed_file(
        r, ["juxt.__getstate__", "juxt.__setstate__"]), "toolz juxt rebuilt without __getstate__/__setstate__"),
    "excepts_without_name_and_doc": Attack("functoolz.py:excepts:methods", lambda r: _stubbed_file(
        r, ["excepts.__name__", "excepts.__doc__"]), "toolz excepts rebuilt without its __name__ and __doc__"),
    "hashedtuple_without_getstate": Attack("keys.py:_HashedTuple:methods", lambda r: _stubbed_file(
        r, ["_HashedTuple.__getstate__"]), "cachetools _HashedTuple rebuilt without __getstate__ (pickling)"),
    "intcomma_without_locale": Attack("humanize-4.17.0/src/humanize/number.py:intcomma:", lambda r: replace_stub(r, INTCOMMA),
                                      "humanize intcomma with ',' and '.' hard-coded"),
    "decode_entities_wrong_order": Attack("python-slugify-9.2.0/slugify/slugify.py:_decode_entities:", lambda r: replace_stub(r, DECODE_ENTITIES),
                                          "python-slugify _decode_entities, numeric references first"),
}


def _stubbed_file(row: TaskRow, qualnames: list[str]) -> list[tuple[str, dict]]:
    """The gold file of the targets (one file) with each of `qualnames` left as the stub."""
    rel = row.deletion.targets[0].file
    text = row.gold_files[rel]
    for q in qualnames:
        fn = mutation.definition(ast.parse(text), q)
        stubbed = copy.deepcopy(fn)
        stubbed.body = [ast.parse(STUB).body[0]]
        text = mutation.splice(text, fn, ast.unparse(stubbed))
    return [("write_file", {"path": rel, "content": text})]


# Mutants of gold that the kept checks pass (a replay of every mutant on the task's checks; the builder tried at
# most 40 per task, and the 59 tasks not rebuilt for issue 28 were never tried against mutants at all). Only
# those that change what the code does are kept here (not a message text, a warning, a cache size).
EQUIVALENT_REBUILDS: dict[str, Attack] = {}
MUTANTS = {
    "excepts_handler_not_called": ("functoolz.py:excepts:methods", "excepts.__call__:SDL#2",
                                   "`return self.handler(e)` dropped: the exception is swallowed, None returned"),
    "excepts_handler_not_stored": ("functoolz.py:excepts:methods", "excepts.__init__:SDL#2",
                                   "`self.handler = handler` dropped"),
    "ttlcache_iter_yields_expired": ("__init__.py:TTLCache:methods", "TTLCache.__iter__:COND#1",
                                     "iteration does not skip expired items"),
    "ttlcache_link_unpicklable": ("__init__.py:TTLCache._Link:def", "TTLCache._Link:SDL#2",
                                  "the link's __reduce__ dropped"),
    "ttlcache_getitem_expired": ("__init__.py:TTLCache.__getitem__:body", "TTLCache.__getitem__:CRP#0",
                                 "`expired = False` -> True"),
    "time_limited_starts_timed_out": ("more.py:time_limited.__init__:body", "time_limited.__init__:CRP#0",
                                      "`self.timed_out = False` -> True"),
    "iterate_break_continue": ("more.py:iterate:body", "iterate:BRK#0", "break -> continue"),
    "unzip_last_head": ("more.py:unzip:def", "unzip:CRP#1", "`head = head[0]` -> head[-1]"),
    "rr_cache_default_maxsize": ("func.py:rr_cache:body", "rr_cache:CRP#1", "default maxsize 127"),
    "distinct_permutations_no_swap": ("more.py:distinct_permutations:def", "distinct_permutations:SDL#54",
                                      "the pivot swap of the r < n algorithm dropped"),
    "distinct_permutations_tail": ("more.py:distinct_permutations:def", "distinct_permutations:AOR#10",
                                   "`tail[r - i:]` -> tail[r + i:]"),
    "sample_counted_wrong_skip": ("more.py:_sample_counted:", "_sample_counted:SDL#15",
                                  "`i = i - remaining` dropped: skips miscounted, not a uniform sample"),
    "ichunk_caches_too_much": ("more.py:_ichunk:body", "_ichunk:AOR#0", "`n - len(cache)` -> n + len(cache)"),
}
# Paid, and rightly: the change is equivalent as far as any caller can tell (FINDINGS_2.md, "Paid but equivalent").
EQUIVALENT = {"unzip_last_head", "ttlcache_getitem_expired", "ichunk_caches_too_much"}
for _name, (_task, _label, _what) in MUTANTS.items():
    _attack = Attack(_task, functools.partial(lambda label, r: mutant(r, label), _label), _what)
    if _name in EQUIVALENT:
        EQUIVALENT_REBUILDS[_name] = _attack
    else:
        PAID[_name] = _attack

ATTACKS: dict[str, Attack] = {**PAID, **EQUIVALENT_REBUILDS}
