"""The verdict: the deleted feature's behaviour, compared by the grader against answers the sandbox never sees.

Build time (trusted: only the gold code runs): the fail-to-pass tests run once with a recorder
(`_sandbox_files/fd_calls.py`) that writes down, as plain-data *programs*, how they use the deleted
definitions and the package's classes (calls, methods of the objects they return, iterators read, the
tests' own functions as answer tables, the iterators they hand over as item lists); the deleted
functions' nested calls (recursion included) become programs of their own. From these the builder makes
*held-out* programs: one argument of one step changed (numbers, strings, containers, streams, a callback
swapped for a standard function), inputs no test uses. Every program is then replayed by the driver in a
sandbox holding only the package's source files: twice on the gold code (the answers, kept where both runs
agree) and once on the untouched task (a step is *discriminating* where the two differ). A held-out step
counts only where its answer differs from the visible program's answer at the same step, so that
answering "as the nearest visible test" fails it. The programs kept are chosen to kill gold's mutants
(feature_deletion.mutation: every candidate replayed on each, a hunt for survivors, greedy set cover), so that a
rebuild wrong in one small way is not paid. The programs and answers go into the task row
(`checks`), which never enters a sandbox; a task without enough held-out checks leaves the task set,
with its reason in the build stats.

Grading: a fresh sandbox holding only the package's source files with the agent's changes (no tests, no
conftest, nothing any test run wrote) runs the programs' steps (never their answers), with the
grader's audit hook on the agent's lines; the grader compares each observation with gold's in its own
process. A mismatch where the untouched code already behaved like gold means the submission broke
something that worked (reward 0); so does any discriminating or held-out step answered unlike gold: the
checks are a gate, never a share (a table of the visible answers farms a share). A task whose held-out
steps a table with a per-function fallback answer would pass is not graded (`unsound`).
"""

from __future__ import annotations

import collections.abc
import copy
import datetime
import fractions
import hashlib
import itertools
import json
import math
import random
import re
import shutil
import signal
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from feature_deletion.fstree import remove_tree, temporary_directory
from feature_deletion.sandbox import Limits, Sandbox, Traits, draw_traits, log_uniform, read_output
from feature_deletion.scope import PURE_MODULES
from feature_deletion.task import CheckProgram, Checks, TaskRow, apply_files, is_test_path, materialize

RESULTS = "results.jsonl"  # what the driver writes in the sandbox's output dir, one [index, observations] a line
STATE_BYTES = 1 << 20  # the package's state: names and 16-character digests
RESULTS_BYTES_PER_STEP = 8192  # an observation (<= fd_calls.MAX_OBSERVATION characters, JSON-escaped) and its extras
GUARD_EXIT = 86  # _sandbox_files/fd_guard.py's EXIT
STDLIB_STATE = "stdlib:"  # _sandbox_files/fd_calls.py's: the process's state outside the package
DRIFT = "drift"  # _sandbox_files/fd_calls.py's: the names whose reachable state the replay changed
STATES = "(states)"  # _sandbox_files/fd_calls.py's: a program's readings of the package's objects its steps were made on
NAMES = "(names)"  # fd_calls.py's: those objects' classes and attribute names where they change (`builds_objects`)
# Deleted definitions that make an object's representation: where one is rebuilt, so are the objects' names
CONSTRUCTION = frozenset({"__init__", "__new__", "__setstate__", "__getstate__", "__reduce__", "__reduce_ex__",
                          "__copy__", "__deepcopy__", "__init_subclass__", "__set_name__"})
DEADLINE_EXIT = 87  # _sandbox_files/fd_calls.py's: a step caught its timeout and the driver's watchdog ended it
STEP_DEADLINE_S = 3 + 2 + 1  # fd_calls.STEP_S + STEP_SLACK_S + PROF_SLACK_S: by then a step is ended, by the watchdog or by SIGPROF
REPLAY_START_S = 60.0  # the replay's sandbox and interpreter starting, beside its steps' deadlines
MIN_HELDOUT = 3  # held-out steps a task needs, with at least two different answers among them
MAX_VARIANTS = 100  # held-out programs tried per task
HUNT_VARIANTS = 12  # more tried per constant of the gold code, where some mutant survives the others
VARIANT_TAIL = 12  # steps a held-out program keeps after the one whose argument changed
PROBES = 3  # calls without arguments the tests make on an object of a class, added at the end of a held-out program
SEPARATORS = frozenset(" -_'.&;#")  # separators a changed string may get, beside those its task's strings hold
RETYPE_SHARE = 0.2  # of the changed arguments, those given another type (`retyped`)
MAX_RETYPED_ITEMS = 20  # characters of a string retyped as a list of them
CLOCK_EXTRA = 32  # answers a clock on a new schedule gives beyond the recorded ones
COPYING = frozenset({"__getstate__", "__setstate__", "__reduce__", "__reduce_ex__", "__getnewargs__",
                     "__getnewargs_ex__", "__copy__", "__deepcopy__"})
ROUND_TRIPS = 24  # held-out programs that copy an object (`round_trips`), where the deleted code defines copying
HASHING = frozenset({"__hash__", "__eq__"})
# Gold processes that answer the chosen programs, each with its own hash seed (the sandbox draws one per command): a
# step two seeds agree on by chance (a set of two strings listed) is cut where a third disagrees.
ANSWER_RUNS = 3
GROWN = 16  # held-out programs that change a list after handing it over (`grown`)
FORMS = 32  # programs that hand a recorded input in another everyday form (`forms`)
MAX_STREAMED_ITEMS = 2000  # fd_calls.MAX_STREAM: items a replayed stream holds
FORM_MORE = 2  # items a list or tuple handed at a larger size has beyond the recorded ones (`powerset`: 4 times the sets)
FORM_NEXT = 80  # items read of what a step answered, where a program read it item by item and the input grew
FORM_READS = 8  # items read of an iterator a step answered that its program did not read
TYPES = 40  # programs that hand a deleted definition a recorded input as another everyday type (`types`)
ALIASES = 16  # programs that add to a container a deleted definition answered, then ask again (`aliases`)
REENTRIES = 12  # programs whose callback calls a deleted definition itself (`reentries`)
SIZES = 40  # programs that hand a deleted definition a recorded input at a size no recorded step holds (`sizes`)
SIZE_PARTS = ((1_001, 4_000), (4_000, 40_000))  # items or characters, drawn log-uniformly within each part
QUICK_S = 0.3  # seconds gold's step of a large input may take where it is answered: a tenth of the step's deadline
SUBCLASSES = 32  # programs that hand a recorded value as an instance of a user's subclass of its type (`subclasses`)
FILLS = 16  # programs that fill an object of a class with deleted code to a size no recorded step makes (`filled`)
OBJECT_SUBCLASSES = 8  # programs whose objects of a class with deleted code are of a user's subclass of it
# Names users give their subclasses and the modules they live in, drawn per program
USER_CLASS_NAMES = ("Color", "Status", "Kind", "Label", "Unit", "Markup", "SafeString", "Token", "Word", "Key",
                    "Level", "Mode", "Field", "Name", "Code", "Amount", "Count", "Score", "Tag", "Choice")
USER_MODULES = ("__main__", "app.models", "models", "enums", "constants", "myproject.types", "core.fields",
                "settings", "api.schemas", "utils")
MUTABLE = frozenset({"list", "dict", "set", "deque", "bytearray", "OrderedDict", "Counter", "defaultdict"})
NON_ASCII = "é"  # put before a string's first letter: a letter that no ASCII-only rule matches
HELDOUT_DIR = "fd_heldout_tests"  # where a task's held-out test files are written, in the gold copy recorded only
# Programs kept per task of the recorded and held-out kinds; the "form" kind is kept whole, each family within its own
# limit (`FORMS`, `SCRIPT_FORMS`, ...), as `answer_again` adds it to a task built before a family existed.
MAX_KEPT = {"visible": 40, "heldout": 60}
MAX_KEPT_STEPS = 800  # steps kept per task of those two kinds, all programs together
MAX_KEPT_BYTES = 120_000  # JSON of those kept programs (steps and answers), all together
INT_TEXT = re.compile(r"-?[0-9]{1,15}")
# Standard functions a callback is swapped for in held-out programs, by the number of arguments it took.
SUBSTITUTES = {
    1: [["builtins", "abs"], ["builtins", "str"], ["builtins", "repr"], ["builtins", "bool"], ["builtins", "len"],
        ["builtins", "int"], ["operator", "neg"], ["operator", "not_"], ["builtins", "sorted"], ["builtins", "tuple"],
        ["builtins", "sum"], ["builtins", "max"], ["builtins", "min"], ["builtins", "str.upper"]],
    2: [["operator", "add"], ["operator", "mul"], ["operator", "sub"], ["builtins", "max"], ["builtins", "min"],
        ["operator", "eq"], ["operator", "lt"], ["builtins", "divmod"]],
}


def module_of(row: TaskRow, rel: str) -> str:
    """The dotted module name of a repository file, as the tests import it."""
    path = Path(rel).relative_to(row.import_root) if row.import_root else Path(rel)
    parts = list(path.with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def targets_of(row: TaskRow) -> list[list[str]]:
    """[module, qualname, kind] of every deleted definition."""
    return [[module_of(row, t.file), t.qualname, t.kind] for t in row.deletion.targets]


def source_copy(row: TaskRow, tasks_dir: Path, dest: Path, changes: dict[str, bytes | None] | None = None,
                state: str = "broken") -> Path:
    """A fresh tree of the package's source files only (`src_paths`, no tests, conftest or config), with the
    task's `state` and then `changes` applied: what the replay driver imports."""
    full = materialize(row, tasks_dir, dest.with_name(dest.name + ".full"), state=state, git=False)  # type: ignore[arg-type]
    apply_files(full, changes or {})
    for src in row.src_paths:
        origin = full / src
        if origin.is_file() and origin.suffix == ".py" and not is_test_path(src):
            (dest / src).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, dest / src)
        elif origin.is_dir():
            for path in sorted(origin.rglob("*")):
                rel = path.relative_to(full)
                if path.is_file() and not path.is_symlink() and not is_test_path(str(rel)):
                    (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, dest / rel)
    dest.mkdir(parents=True, exist_ok=True)
    remove_tree(full)
    return dest


@dataclass
class Replay:
    observations: list[list | None]  # per program: its observations, None where none came back
    returncode: int
    timed_out: bool
    output_tail: str
    state: dict | None = None  # the package's state, as the driver read it (fd_calls.package_state)
    spent: dict[int, list[float]] = field(default_factory=dict)  # per program: seconds each step took (not compared)

    @property
    def deadline(self) -> bool:
        """A step ran past its deadline: the driver's watchdog ended it, or the kernel (SIGPROF: CPU time in C, where
        no Python code runs), or the command's wall clock (the steps' deadlines together)."""
        return self.timed_out or self.returncode in (DEADLINE_EXIT, 128 + signal.SIGPROF, -signal.SIGPROF)


def run_programs(root: Path, row: TaskRow, runner: Path | None, limits: Limits, programs: list[dict],
                 lines: dict[str, list[list[int]]], isolation: str = "namespace", seed: int = 0,
                 hooked: bool = True, traits: Traits = Traits()) -> Replay:
    """Run the programs' steps (never their answers) on the code in `root` (mounted read-only), under the grader's
    audit hook on `lines` ({file: [[first, last], ...]}, repository paths), or with no hook at all (`hooked`
    False), `random` seeded with `seed`, the process configured as `traits` says. Its CPU time is bounded by its
    wall clock (the steps' deadlines together), not by `limits.cpu_s`: one process replays every program, and gold's
    replay of a task with many programs (cachetools `_TimedCache.pop`, 748) took 118 s of a 120 s cap on one machine
    and was killed on a slower one, every observation lost."""
    steps = sum(len(p["steps"]) for p in programs)
    wall_s = min(limits.wall_s, REPLAY_START_S + steps * STEP_DEADLINE_S)
    limits = replace(limits, cpu_s=max(limits.cpu_s, math.ceil(wall_s)))
    sb = Sandbox(root, runner=runner, limits=limits, isolation=isolation, writable=False,  # type: ignore[arg-type]
                 traits=traits)
    with temporary_directory("fd-replay.") as out:
        sb.outdir = out
        (Path(out) / "programs.json").write_text(json.dumps([{"steps": p["steps"]} for p in programs]))
        guard = {f"{sb.workspace}/{rel}": spans for rel, spans in lines.items()}
        result = sb.run([sb.python, f"{sb.helpers}/fd_calls.py", f"{sb.out}/programs.json", f"{sb.out}/{RESULTS}"],
                        env={"PYTHONPATH": sb.pythonpath(row.import_root), "FD_SEED": str(seed),
                             **({"FD_GUARD": json.dumps(guard)} if hooked else {}), "FD_PACKAGE": sb.workspace,
                             "FD_MODULES": json.dumps(sorted({m for m, _, _ in targets_of(row)})),
                             "FD_STDLIB": json.dumps(sorted(PURE_MODULES))},
                        wall_s=wall_s)
        observations: list[list | None] = [None] * len(programs)
        # every observation is at most MAX_OBSERVATION characters or a digest: a longer file is not the driver's
        text = read_output(Path(out) / RESULTS, RESULTS_BYTES_PER_STEP * steps + 64 * len(programs)
                           + STATE_BYTES + 4096) or ""
        sb.outdir = None
    state, spent = None, {}
    for line in text.splitlines():
        try:
            index, obs = json.loads(line)
        except (ValueError, TypeError):
            continue
        if isinstance(index, int) and 0 <= index < len(programs) and observations[index] is None \
                and isinstance(obs, list):
            observations[index] = obs
        elif index == "state" and state is None and isinstance(obs, dict):
            state = obs
        elif index == "spent" and isinstance(obs, list) and len(obs) == 2 and isinstance(obs[1], list):
            spent.setdefault(obs[0], obs[1])
    return Replay(observations, result.returncode, result.timed_out, result.output[-2000:], state, spent)


# ------------------------------------------------------------------------------------------- build time

def record_programs(row: TaskRow, tasks_dir: Path, runner: Path | None, limits: Limits,
                    heldout: bool = False, callers: bool = False) -> list[dict]:
    """Programs of the F2P tests' uses of the deleted feature, recorded on the gold code; with `heldout`, of the
    task's held-out test files instead (`row.heldout_tests`, written into this gold copy only, under
    `HELDOUT_DIR`); with `callers`, their calls of the package's public functions are steps too."""
    from feature_deletion.grading import run_pytest

    if heldout and not row.heldout_tests:
        return []
    with temporary_directory("fd-record.") as tmp:
        gold = materialize(row, tasks_dir, Path(tmp) / "repo", state="gold", git=False)
        tests = row.f2p
        if heldout:
            (gold / HELDOUT_DIR).mkdir()
            for name, text in row.heldout_tests.items():
                (gold / HELDOUT_DIR / Path(name).name).write_text(text)
            tests = [f"{HELDOUT_DIR}/{Path(name).name}" for name in sorted(row.heldout_tests)]
        out = Path(tmp) / "out"
        out.mkdir()
        sb = Sandbox(gold, runner=runner, limits=limits, outdir=out)
        src = [f"{sb.workspace}/{s}" for s in row.src_paths]
        run_pytest(sb, row.import_root, tests, record={"targets": targets_of(row), "src": src, "callers": callers})
        path = out / "calls.json"
        try:
            programs = json.loads(path.read_text()) if path.is_file() else []
        except ValueError:
            programs = []
    return [p for p in programs if isinstance(p, dict) and p.get("steps")]


def _text_mutations(s, rng: random.Random, pool: list) -> list:
    x, q = ("x", "q") if isinstance(s, str) else (b"x", b"q")
    out = [s + (s[:1] or x), s[1:], s[:-1], s[::-1], s.swapcase(), s * 2, s[: len(s) // 2] + q + s[len(s) // 2:]]
    out += [p for p in pool if type(p) is type(s) and p != s][:3]
    if isinstance(s, str):
        # Word boundaries no test puts there: a separator inserted, one already there doubled or put first or last
        # (inflection's `camelize("a__b")`, `titleize("x-men")`), one made of a separator the other arguments use.
        marks = sorted({c for p in [s, *pool[:40]] if isinstance(p, str) for c in p if not c.isalnum()} | SEPARATORS)
        k = rng.randrange(len(s) + 1)
        out.append(s[:k] + rng.choice(marks) + s[k:])
        present = [c for c in s if not c.isalnum()]
        if present:
            c = rng.choice(present)
            out += [s.replace(c, c * 2, 1), c + s, s + c]
    return [m for m in out if m != s]


def mutate(enc, rng: random.Random, pool: dict[str, list], depth: int = 0):
    """A changed copy of one encoded value, mostly of the same type; an argument itself (`depth` 0) is sometimes
    given another type instead (`retyped`). None when it has no plain-data part to change."""
    if not isinstance(enc, list) or len(enc) < 2 or depth > 6:
        return None
    tag, v = enc[0], enc[1]
    if depth == 0 and rng.random() < RETYPE_SHARE and (options := retyped(enc)):
        return rng.choice(options)
    if tag == "int":
        options = [v + 1, v - 1, 2 * v + 1, -v, 0, v + 7] + [p for p in pool.get("int", []) if p != v][:3]
        options = [o for o in options if o != v]
        return ["int", rng.choice(options)]
    if tag == "bool":
        return ["bool", not v]
    if tag == "float":
        x = float(v)
        if x != x:
            return None
        if x in (float("inf"), float("-inf")):  # "never" (a ttl of math.inf): a time that comes
            return ["float", repr(rng.choice([0.5, 1.0, 2.0, 10.0]) * (1 if x > 0 else -1))]
        return ["float", repr(rng.choice([x * 1.5 + 0.25, -x - 1.0, x / 3, x + 10.0]))]
    if tag == "str":
        if INT_TEXT.fullmatch(v):  # a number written as text (inflection's `ordinal("21")`): changed as that number
            n = int(v)
            options = [n + 1, n - 1, n + 2, n + 7, n + 10, n - 10, n + 100, 2 * n + 1]
            return ["str", str(rng.choice(options))]
        options = _text_mutations(v, rng, pool.get("str", []))
        return ["str", rng.choice(options)] if options else None
    if tag in ("bytes", "bytearray"):
        options = _text_mutations(bytes.fromhex(v), rng, [])
        return [tag, rng.choice(options).hex()] if options else None
    if tag in ("list", "tuple", "set", "frozenset"):
        return [tag, _mutate_items(v, rng, pool, depth, ordered=tag in ("list", "tuple"))]
    if tag == "deque":
        return ["deque", [_mutate_items(v[0], rng, pool, depth, ordered=True), v[1]]]
    if tag in ("dict", "OrderedDict", "Counter"):
        return [tag, _mutate_pairs(v, rng, pool, depth)] if v else None
    if tag == "range":
        start, stop, step = v
        return ["range", rng.choice([[start, stop + step, step], [start, stop - step, step], [start + step, stop, step],
                                     [start, stop + 3 * step, step]])]
    if tag == "timedelta":
        return ["timedelta", [v[0] + rng.choice([-2, 1, 30]), (v[1] + rng.choice([1, 59, 3600])) % 86400, v[2]]]
    if tag in ("datetime", "date"):
        text = v[0] if tag == "datetime" else v
        kind = datetime.datetime if tag == "datetime" else datetime.date
        shifted = (kind.fromisoformat(text) + datetime.timedelta(days=rng.choice([-400, -3, 1, 40]))).isoformat()
        return ["datetime", [shifted, v[1]]] if tag == "datetime" else ["date", shifted]
    if tag in ("Decimal", "Fraction"):
        return ["Decimal", str(float(v) * 2 + 1)] if tag == "Decimal" else ["Fraction", [v[0] * 2 + v[1], v[1]]]
    if tag == "stream":
        items = v["items"]
        if not v["end"] or not items or any(i is None for i in items):
            return None
        if rng.random() < 0.25:  # the same items as a list: code that must call iter() on what it gets
            return ["list", copy.deepcopy(items)]
        return ["stream", {"items": _mutate_items(items, rng, pool, depth, ordered=True), "end": True}]
    if tag == "callback":
        clock = _clock(v, rng, pool)
        if clock is not None:
            return clock
        arities = {len(key[0]) for key, _ in v["calls"] if not key[1]}
        if len(arities) != 1 or next(iter(arities)) not in SUBSTITUTES:
            return None
        module, qual = rng.choice(SUBSTITUTES[next(iter(arities))])
        return ["ref", module, qual]
    return None


def retyped(enc: list) -> list[list]:
    """The same plain value as other types (an int as a float, as text, in a list; text as a list of its characters
    or as bytes; a list as a tuple; a number as a bool) and None: a type no test passes, where code special-cased to
    the tests' types (toolz `isiterable` answering False for ints and True for anything else) answers unlike gold."""
    tag, v = enc[0], enc[1]
    out: list[list] = [["NoneType", None]]
    if tag == "int":
        out += [["float", repr(float(v))], ["str", str(v)], ["list", [enc]], ["bool", bool(v)]]
    elif tag == "bool":
        out += [["int", int(v)], ["str", str(v)]]
    elif tag == "float":
        x = float(v)
        out += [["str", v]] + ([["int", int(x)]] if x == x and abs(x) < 1 << 53 and x.is_integer() else [])
    elif tag == "str":
        out += [["list", [["str", c] for c in v[:MAX_RETYPED_ITEMS]]], ["bytes", v.encode("utf-8").hex()],
                ["int", len(v)]]
    elif tag in ("list", "tuple", "set", "frozenset"):
        out += [["tuple" if tag == "list" else "list", copy.deepcopy(v)], ["int", len(v)]]
        if all(isinstance(i, list) and i[:1] == ["str"] for i in v):
            out.append(["str", "".join(i[1] for i in v)])
    elif tag in ("dict", "OrderedDict", "Counter"):
        out += [["list", [["tuple", copy.deepcopy(pair)] for pair in v]], ["list", [copy.deepcopy(k) for k, _ in v]]]
    elif tag == "bytes":
        out += [["str", bytes.fromhex(v).decode("latin-1")]]
    else:
        return []
    return out


def _clock(callback: dict, rng: random.Random, pool: dict[str, list]) -> list | None:
    """A test's clock (a callback called without arguments that answered numbers: cachetools' `Timer`) on another
    schedule, or None for any other callback: time that moves by a step at every call, or that jumps from some call
    on, by 1, by a number the tests pass (a ttl) or half of it, or by much more: the inputs that expire entries."""
    calls = callback["calls"]
    numbers = [answer for key, answer in calls]
    if not calls or any(key != [[], []] for key, _ in calls) \
            or any(not isinstance(a, list) or a[0] not in ("int", "float") for a in numbers):
        return None
    values = [float(a[1]) if a[0] == "float" else a[1] for a in numbers]
    if any(x != x or x in (float("inf"), float("-inf")) for x in values):
        return None
    spans = [p for p in pool.get("int", []) if isinstance(p, int) and 0 < p < 1 << 40][:4]
    delta = rng.choice([1, 1000] + spans + [p / 2 for p in spans])
    if rng.random() < 0.5:
        times = [values[0] + i * delta for i in range(len(values) + CLOCK_EXTRA)]
    else:
        k = rng.randrange(len(values))
        times = values[:k] + [x + delta for x in values[k:]]
    as_int = all(a[0] == "int" for a in numbers) and all(float(t).is_integer() for t in times)
    answers = [["int", int(t)] if as_int else ["float", repr(float(t))] for t in times]
    return ["callback", {**callback, "calls": [[[[], []], a] for a in answers]}]


def _mutate_items(items: list, rng: random.Random, pool: dict, depth: int, ordered: bool) -> list:
    items = copy.deepcopy(items)
    ops = ["element", "drop", "duplicate"] + (["reverse", "shuffle"] if ordered and len(items) > 1 else [])
    op = rng.choice(ops) if items else "add"
    if op == "element":
        i = rng.randrange(len(items))
        changed = mutate(items[i], rng, pool, depth + 1)
        if changed is not None:
            items[i] = changed
            return items
        op = "drop"
    if op == "drop":
        del items[rng.randrange(len(items))]
    elif op == "duplicate":
        items.insert(rng.randrange(len(items) + 1), copy.deepcopy(rng.choice(items)))
    elif op == "reverse":
        items.reverse()
    elif op == "shuffle":
        rng.shuffle(items)
    else:
        seed = next((p for tag in ("int", "str") for p in pool.get(tag, [])[:1]), None)
        if seed is not None:
            items.append(["int" if isinstance(seed, int) else "str", seed])
    return items


def _mutate_pairs(pairs: list, rng: random.Random, pool: dict, depth: int) -> list:
    pairs = copy.deepcopy(pairs)
    i = rng.randrange(len(pairs))
    op = rng.choice(["value", "key", "drop"])
    if op in ("value", "key"):
        changed = mutate(pairs[i][1 if op == "value" else 0], rng, pool, depth + 1)
        if changed is not None:
            pairs[i][1 if op == "value" else 0] = changed
            return pairs
    del pairs[i]
    return pairs


def _pool(programs: list[dict]) -> dict[str, list]:
    """Plain values of the recorded arguments, by tag: material for changed arguments."""
    pool: dict[str, list] = {}

    def walk(enc, depth=0):
        if isinstance(enc, list) and len(enc) >= 2 and isinstance(enc[0], str) and depth < 8:
            if enc[0] in ("int", "str") and enc[1] not in pool.setdefault(enc[0], []):
                pool[enc[0]].append(enc[1])
            elif enc[0] in ("list", "tuple", "set", "frozenset"):
                for item in enc[1]:
                    walk(item, depth + 1)

    for p in programs:
        for step in p["steps"]:
            for a in step.get("args", []):
                walk(a)
    return pool


def variants(programs: list[dict], seed: str, literals: dict[str, list] | None = None,
             limit: int = MAX_VARIANTS) -> list[tuple[dict, int, int]]:
    """Held-out programs: (program, index of the program it came from, step whose argument changed). Programs take
    turns; each variant keeps the steps up to its change and `VARIANT_TAIL` after it, then up to `PROBES` calls
    without arguments that the tests make on objects of the class a `new` step of it made (`_probes`: `repr`, `len`,
    `popitem`, an attribute, as the tests use them). A change is one argument changed (`mutate`) or the arguments
    reshaped (`_reshape`: one left out, so that a default answers; all but the first left out). `literals`
    ({tag: values}) come first among the values a changed argument may take."""
    rng = random.Random(hashlib.sha256(seed.encode()).digest())
    pool = _pool(programs)
    for tag, values in (literals or {}).items():
        pool[tag] = values + [v for v in pool.get(tag, []) if v not in values]
    probes = _probes(programs)
    sites = [[(si, key) for si, step in enumerate(p["steps"])
              for key in [("args", i) for i in range(len(step.get("args", [])))] +
              [("kwargs", i) for i in range(len(step.get("kwargs", [])))] +
              ([("shape", 0)] if step.get("args") or step.get("kwargs") else [])] for p in programs]
    order = [pi for pi, s in enumerate(sites) if s]
    rng.shuffle(order)
    seen: set[str] = set()
    made: list[tuple[dict, int, int]] = []
    for attempt in range(limit * 4):
        if len(made) >= limit or not order:
            break
        pi = order[attempt % len(order)]
        si, (where, ai) = rng.choice(sites[pi])
        # Half of them end sooner: the probes then ask about the state right after the change.
        tail = VARIANT_TAIL if rng.random() < 0.5 else rng.randrange(VARIANT_TAIL)
        program = {"steps": copy.deepcopy(programs[pi]["steps"][: si + 1 + tail])}
        step = program["steps"][si]
        if where == "shape":
            if not _reshape(step, rng):
                continue
        else:
            value = step[where][ai] if where == "args" else step[where][ai][1]
            changed = mutate(value, rng, pool)
            if changed is None:
                continue
            if where == "args":
                step["args"][ai] = changed
            else:
                step["kwargs"][ai][1] = changed
        key = json.dumps(program["steps"], sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        news = [(j, json.dumps(s["cls"])) for j, s in enumerate(program["steps"]) if s["op"] == "new"]
        asked = [(j, probe) for j, cls in news for probe in probes.get(cls, [])]
        for j, (op, name) in rng.sample(asked, min(PROBES, len(asked))):
            obj = ["slot", j, []]
            program["steps"].append({"op": "getattr", "obj": obj, "name": name} if op == "getattr" else
                                    {"op": "method", "obj": obj, "name": name, "args": [], "kwargs": []})
        made.append((program, pi, si))
    return made


def defines(row: TaskRow, names: frozenset[str]) -> bool:
    """Whether the deleted definitions define one of the methods `names`: how their objects are pickled or copied
    (COPYING) or hashed (HASHING), which no recorded test program reaches (a test that pickles calls `pickle`, one
    that hashes calls `hash` or builds a dict, not the package)."""
    import ast

    from feature_deletion.mutation import definition

    for target in row.deletion.targets:
        try:
            fn = definition(ast.parse(row.gold_files.get(target.file, "")), target.qualname)
        except SyntaxError:
            continue
        if fn is not None and any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in names
                                  for n in ast.walk(fn)):
            return True
    return False


def _shift(value, after: int):
    """`value` (a step or part of one) with its references to steps past `after` moved one step on."""
    if isinstance(value, dict):
        return {k: _shift(v, after) for k, v in value.items()}
    if isinstance(value, list):
        if len(value) == 3 and value[0] in ("slot", "given") and isinstance(value[1], int) and value[1] > after:
            return [value[0], value[1] + 1, value[2]]
        return [_shift(v, after) for v in value]
    return value


def _arguments(step: dict) -> list[tuple[int | str, object]]:
    """(position or keyword, encoded value) of each argument a step hands."""
    return [*enumerate(step.get("args", [])), *[(k, v) for k, v in step.get("kwargs", [])]]


def _hand(step: dict, key: int | str, value) -> None:
    """Hand `step` `value` as its argument `key` (a position or a keyword), in place."""
    if isinstance(key, int):
        step["args"][key] = value
    else:
        step["kwargs"] = [[k, value if k == key else v] for k, v in step["kwargs"]]


def _reads(j: int, n: int) -> list[dict]:
    """`n` steps that take the next item of what step `j` answered."""
    return [{"op": "next", "obj": ["slot", j, []]} for _ in range(n)]


def grown(programs: list[dict], limit: int = GROWN) -> list[tuple[dict, int, int]]:
    """Held-out programs (as `variants` makes them) that change a list a step was handed, right after the step and
    before the later steps on what it answered or on the object it was called on: one more of its last item
    (`append`), or none (`clear`); where the step was handed no list, a number or string of its is handed as a
    one-item list first. Code that reads the list when asked (a lazy `sliced`) answers unlike code that read it all
    at the call (red team 5, L5), and code that kept the caller's list unlike code that kept a copy (red team 7, A7:
    a `Cache` storing a copy of each value)."""
    options = []  # (rank, order, program, step, key, list): lists handed first, then a method's value boxed
    for p in programs:
        steps = p["steps"]
        for j, step in enumerate(steps):
            on = {step["obj"][1]} if isinstance(step.get("obj"), list) and step["obj"][0] == "slot" else set()
            if not any(({j} | on) & _slots(t) for t in steps[j + 1: j + 1 + VARIANT_TAIL]):
                continue
            for key, arg in _arguments(step):
                if isinstance(arg, list) and arg[0] == "list":
                    options.append((0, len(options), steps, j, key, arg))
                elif isinstance(arg, list) and arg[0] in ("int", "str"):
                    options.append((1 if step["op"] == "method" else 2, len(options), steps, j, key, ["list", [arg]]))
    made: list[tuple[dict, int, int]] = []
    for steps, j, key, arg in _each_once_first([o[2:] for o in sorted(options, key=lambda o: o[:2])]):
        first = copy.deepcopy(steps[: j + 1])
        _hand(first[j], key, arg)
        change = ("append", [arg[1][-1]]) if arg[1] and len(made) % 2 == 0 else ("clear", [])
        grow = {"op": "method", "obj": ["given", j, key], "name": change[0], "args": change[1], "kwargs": []}
        made.append(({"steps": first + [grow] + [_shift(t, j) for t in steps[j + 1: j + 1 + VARIANT_TAIL]]}, -1, j + 1))
        if len(made) >= limit:
            break
    return made


def _forms_of(arg: list) -> list[tuple[str, list]]:
    """(form, encoding): the same input in the other everyday forms users hand over: a list or tuple as an iterator
    of its items (a stream read to its end), as the other of the two, as text where its items are characters, and at
    a larger size (`FORM_MORE` of its items again); an integer as its text and an integer's text as the integer; text
    with a non-ASCII letter first."""
    tag, value = arg[0], arg[1]
    out = []
    if tag in ("list", "tuple") and 0 < len(value) <= MAX_STREAMED_ITEMS:
        out += [("stream", ["stream", {"items": value, "end": True}]), ("sibling", ["tuple" if tag == "list" else "list",
                                                                                  value]),
                ("size", [tag, value + (value * FORM_MORE)[:FORM_MORE]])]
        if all(isinstance(i, list) and i[0] == "str" and len(i[1]) == 1 for i in value):
            out.append(("text", ["str", "".join(i[1] for i in value)]))
    elif tag == "int" and type(value) is int:
        out.append(("sibling", ["str", str(value)]))
    elif tag == "str" and INT_TEXT.fullmatch(value):
        out.append(("sibling", ["int", int(value)]))
    if tag == "str" and value[:1].isascii() and value[:1].isalpha():
        out.append(("letters", ["str", NON_ASCII + value]))
    return out


def _more_args(step: dict, pool: dict[str, list]) -> list | None:
    """The step's positional arguments with `FORM_MORE` more of the kind of its last one (a number or text: values
    of the call's own mappings and of the recorded arguments that it does not hold yet, each mapping holding them too;
    a list or tuple: its earlier ones again), or None. Tests hand a `*args` parameter one or two values, and code
    wrong past that was paid: toolz `dissoc` ignoring the last of 3+ keys (red team 13, X13n)."""
    args = step.get("args", [])
    if step["op"] not in ("call", "method", "new") or len(args) < 2 or not isinstance(args[-1], list) \
            or len(args[-1]) != 2 or args[-1][0] not in ("int", "str", "list", "tuple"):
        return None
    tag = args[-1][0]
    have = [a for a in args if isinstance(a, list) and a[:1] == [tag]]
    if tag in ("list", "tuple"):
        extra = [copy.deepcopy(have[i % len(have)]) for i in range(FORM_MORE)]
        return [*copy.deepcopy(args), *extra]
    keys = [k[1] for a in args if isinstance(a, list) and a[0] == "dict" for k, _ in a[1]
            if isinstance(k, list) and k[0] == tag]
    fresh = [v for v in dict.fromkeys([*keys, *pool.get(tag, [])]) if [tag, v] not in have][:FORM_MORE]
    if len(fresh) < FORM_MORE:
        return None
    extra = [[tag, v] for v in fresh]
    out = copy.deepcopy(args)
    for i, a in enumerate(out):
        if isinstance(a, list) and a[0] == "dict" and a[1]:
            out[i] = ["dict", a[1] + [[e, copy.deepcopy(a[1][0][1])] for e in extra if e not in [k for k, _ in a[1]]]]
    return out + extra


def _deleted(step: dict, targets: list[list[str]]) -> bool:
    """Whether a step calls a deleted definition (`targets_of`) by name, a method named as one, or makes an object
    of a class whose `__init__` or `__new__` was deleted."""
    ref = step.get("fn") or step.get("cls")
    if isinstance(ref, list) and ref[:1] == ["ref"] and any(
            ref[1] == t[0] and t[1] in (ref[2], f"{ref[2]}.__init__", f"{ref[2]}.__new__") for t in targets):
        return True
    return step["op"] == "method" and any(step.get("name") == t[1].rpartition(".")[2] for t in targets)


def _everyday(enc: list) -> list[list]:
    """The value as each other everyday type (None, bool, int, float, str, bytes, list, tuple, set, dict):
    `retyped`'s first, then a number as the one item of a container (and as its text), a sized value (a stream's
    items too) by its size, its items as text (where they are numbers or text), as a list, tuple, set and a dict by
    position; a value of no such type (a function, an object) as a small value of each."""
    tag, v = enc[0], enc[1]
    out = {t[0]: t for t in reversed(retyped(enc))}
    if tag == "stream" and isinstance(v, dict) and isinstance(v.get("items"), list):
        tag, v = "list", v["items"]
    if tag in ("int", "bool", "float"):
        one = ["int", int(v)] if tag == "bool" else enc
        text = str(one[1])
        more = [["float", repr(float(one[1]))], ["str", text], ["list", [one]], ["tuple", [one]], ["set", [one]],
                ["dict", [[one, one]]]]
    elif tag in ("str", "list", "tuple", "set", "frozenset", "dict", "OrderedDict", "Counter"):
        items = [["str", c] for c in v[:MAX_RETYPED_ITEMS]] if tag == "str" else \
            [k for k, _ in v] if tag in ("dict", "OrderedDict", "Counter") else v
        plain = all(isinstance(i, list) and i[:1] in (["int"], ["str"]) for i in items)
        text = "".join(str(i[1]) for i in items) if plain else str(len(items))
        more = [["bool", bool(items)], ["int", len(items)], ["float", repr(float(len(items)))], ["str", text],
                ["list", copy.deepcopy(items)], ["tuple", copy.deepcopy(items)]]
        if plain:
            # a set of text iterates in the process's hash order, so gold's runs disagree and the check is dropped:
            # text is handed as a set of its items' positions (red team 13, X13s: `frequencies` never got a set)
            numbers = all(i[0] == "int" for i in items)
            more += [["set", copy.deepcopy(items) if numbers else [["int", i] for i in range(len(items))]],
                     ["dict", [[["int", i], copy.deepcopy(x)] for i, x in enumerate(items)]]]
    else:  # a function, an object, ...: a small value of each type
        text = "a"
        more = [["bool", True], ["int", 1], ["float", "1.5"], ["str", text], ["list", []], ["tuple", []], ["set", []],
                ["dict", []]]
    more += [["NoneType", None], ["bytes", text.encode("utf-8").hex()]]
    for value in more:
        out.setdefault(value[0], value)
    return [value for t, value in out.items() if t != tag]


def types(programs: list[dict], targets: list[list[str]], limit: int = TYPES) -> list[dict]:
    """Programs that hand a call of a deleted definition one of its recorded inputs as another everyday type
    (`_everyday`: None, a number as a float, text or a bool, text as bytes or a list of its characters, a list as a
    tuple, a set or a dict, ...): each type once for each function first, then for each argument. Code that refused
    every type no check handed a deleted function (the stub's `NotImplementedError` where gold answers) was paid on
    47 of 51 tasks (red team 13, X13s); gold's answer is the check, a raised exception too (the stub's differs). The
    program ends at the step, then reads `FORM_READS` items where its program read what the step answered or that
    is an iterator (a generator refuses at its first item)."""
    found = _each_call_argument(programs, targets,
                                lambda arg, _: [(v[0], v) for v in _everyday(arg) if v[0] != arg[0]], rest=False)
    return [{"steps": _handed(*option)} for option in found[:limit]]


def _tag(enc) -> str:
    """An encoding's type name, whatever it holds."""
    return enc[0] if isinstance(enc, list) and enc and isinstance(enc[0], str) else type(enc).__name__


def _plain_items(enc) -> bool:
    """Whether an encoding holds only plain data: nothing that a program's step refers to or the driver feeds."""
    text = json.dumps(enc)
    return not any(f'"{tag}"' in text for tag in ("slot", "given", "callback", "stream", "ref", "grown", "sub"))


def _draw(key: str) -> random.Random:
    """A generator fixed by `key`: a program's drawn sizes and names are the same wherever it is made again."""
    return random.Random(hashlib.sha256(key.encode()).digest())


def _each_call_argument(programs: list[dict], targets: list[list[str]], found, rest: bool = True,
                        named: bool = False) -> list[tuple]:
    """(steps, step, key, value, read) for each call of a deleted definition, each argument, and each (kind, value)
    that `found(argument, the step's JSON)` gives for it: each function's first of each kind of value, then each
    argument's, then (with `rest`) the others; arguments that are functions the tests name (`ref`) only with `named`;
    `read`: whether the program reads what the step answered. Where no
    call of a deleted definition gives one (a deleted class that only the package's own code makes: cachetools'
    `TTLCache._Link`, red teams 20-21), each call the programs make, which reach it."""
    options, reaching = [], []
    for p in programs:
        steps, expect = p["steps"], p.get("expect") or []
        for j, step in enumerate(steps):
            if j in _slots(steps[j + 1:], "given"):
                continue
            read = j in _slots(steps[j + 1: j + 1 + VARIANT_TAIL]) or j < len(expect) and _an_iterator(expect[j])
            for key, arg in _arguments(step):
                if isinstance(arg, list) and (len(arg) == 2 or named and arg[:1] == ["ref"]):
                    (options if _deleted(step, targets) else reaching).extend(
                        (of, (steps, j, key, value, read)) for of, value in found(arg, json.dumps(steps[j])))
    options = options or reaching
    by_function, by_argument, firsts, seconds, others = set(), set(), [], [], []
    for of, option in options:
        callee = _callee(option[0][option[1]])
        (firsts if (callee, of) not in by_function else seconds if (callee, option[2], of) not in by_argument
         else others).append(option)
        by_function.add((callee, of))
        by_argument.add((callee, option[2], of))
    return firsts + seconds + (others if rest else [])


def _handed(steps: list[dict], j: int, key: int | str, value, read: bool) -> list[dict]:
    """The steps up to step `j`, which is handed `value` as its argument `key` (an option of `_each_call_argument`),
    then `FORM_READS` items of what it answered where the program read that."""
    program = copy.deepcopy(steps[: j + 1])
    _hand(program[j], key, value)
    return program + _reads(j, FORM_READS if read else 0)


GROWN_HOWS = {"list": ("copies", "drawn", "fresh", "sorted", "natural", "inner"),
              "tuple": ("copies", "drawn", "fresh", "sorted", "natural", "inner"),
              "str": ("copies", "drawn", "fresh", "natural"), "bytes": ("copies", "drawn", "fresh", "natural"),
              "stream": ("copies", "drawn", "fresh", "natural"), "set": ("fresh", "natural"),
              "frozenset": ("fresh", "natural")}
GROWN_HOWS.update(dict.fromkeys(("dict", "OrderedDict", "Counter", "defaultdict"), ("fresh", "natural", "inner")))
# The kinds of container (`fd_calls._subclassed`) a large input is also handed as, one at each size: a queue, a
# read-only mapping, a view, a user's class (red team 23, C23: only plain builtins were ever large)
GROWN_KINDS = {"list": ("deque", "abc", "plain", "user", "keeps", "slots"), "tuple": ("abc", "plain", "keeps"),
               "dict": ("proxy", "values", "abc", "items", "user", "plain"), "set": ("keys", "abc", "plain"),
               "frozenset": ("keys", "abc", "plain"), "str": ("user", "keeps", "plain"),
               "bytes": ("bytearray", "plain", "keeps")}


def sizes(programs: list[dict], targets: list[list[str]], limit: int = SIZES) -> list[dict]:
    """Programs that hand a call of a deleted definition one of its recorded inputs (text, bytes, a list, tuple,
    set, frozenset, mapping or range) at a size no recorded step can hold (a recorded step holds at most a few
    hundred items: `fd_calls.MAX_STEP_BYTES`): one size drawn from each of `SIZE_PARTS` for each way the driver grows
    it (`fd_calls._grown`, `GROWN_HOWS`): its items as copies, drawn one by one from them, or new (numbers moved,
    text lengthened) and those sorted; as real data of its kind is large (`fd_calls._natural`: different ids,
    names or records, an index mapping, prose); a set or mapping with new keys; a stream's items, as an iterator; a
    list of numbers also as a set; a number as long text and as a long tuple of numbers (a long key of a cache).
    Code that refused every input past 1,000 items was paid on 60 of 62 tasks (red team 20, Z20), and then any long
    input that is not a repetition of a shorter one (red team 21, P21), any large dict or set (D21), and the shapes
    real data has, which the other ways never make (red team 22, N22: `list(range(n))`, a vocabulary, `{key: i}`, a
    paragraph); code that recurses per item breaks there. Marked `quick`: the builder keeps only those whose step
    gold answers within `QUICK_S`, so that no deadline decides a grading."""
    def found(arg, key):
        return [(kind(value), value) for value in grown(arg, key)]

    def grown(arg, key):
        tag, value = arg
        rng = _draw(f"{key}/{json.dumps(arg)}")
        drawn = [log_uniform(low, high, rng.random) for low, high in SIZE_PARTS]

        def seed(size):  # even at the first size: `fd_calls._natural` makes the commonest shapes there
            return rng.randrange(1 << 31) * 2 + (size != drawn[0])
        if tag == "range":
            return [["range", [value[0], value[0] + size, 1]] for size in drawn] if len(value) == 3 \
                and value[2] == 1 else []
        if tag in ("int", "float"):  # a number as large text and a large tuple of numbers: a long key of a cache
            return [["grown", [how, grown, size, seed(size)]] for size in drawn
                    for grown in (["str", str(value)], ["tuple", [arg]]) for how in ("fresh", "natural")]
        if tag == "stream":  # its items grown, handed as an iterator
            if not isinstance(value, dict) or not isinstance(value.get("items"), list) or not value["items"] \
                    or not value.get("end") or not _plain_items(value["items"]):
                return []
            return [["grown", [how, arg, size, seed(size)]] for size in drawn
                    for how in GROWN_HOWS[tag]]
        pairs = value[1] if tag == "defaultdict" else value
        if tag not in GROWN_HOWS or not pairs or not _plain_items(pairs):
            return []
        if tag not in ("list", "tuple", "str", "bytes") and not any(  # keys that `_fresh` can make new
                k[0] in ("int", "float", "str", "tuple") for k in (pairs if tag in ("set", "frozenset")
                                                                   else [k for k, _ in pairs])):
            return []
        out = [["grown", [how, arg, size, seed(size)]] for size in drawn for how in GROWN_HOWS[tag]]
        if tag in GROWN_KINDS:  # naturally large as another kind of container, a different one at each size
            kinds = GROWN_KINDS[tag] + (("array",) if tag == "list" and all(i[0] == "int" for i in value) else ())
            first = rng.randrange(len(kinds))
            out += [["sub", [kinds[(first + k) % len(kinds)], rng.choice(USER_CLASS_NAMES), rng.choice(USER_MODULES),
                             ["grown", ["natural", arg, size, seed(size)]]]] for k, size in enumerate(drawn)]
        if tag in ("list", "tuple") and all(i[0] == "int" for i in value):
            # as a large set too: a set of numbers iterates in one order in every process, unlike one of text
            out += [["grown", [how, ["set", value], size, seed(size)]] for size in drawn
                    for how in ("fresh", "natural")]
        return out

    def kind(value):  # each type, kind of item and way once per function first (the smaller size): none crowded out
        if value[0] == "range":
            return "range"
        if value[0] == "sub":
            return "sub", value[1][3][1][1][0]
        enc = value[1][1]
        items = enc[1]["items"] if enc[0] == "stream" else enc[1][1] if enc[0] == "defaultdict" else enc[1]
        mapping = enc[0] in ("dict", "OrderedDict", "Counter", "defaultdict")
        tags = {_tag(i[0] if mapping and isinstance(i, list) else i) for i in items} \
            if isinstance(items, list) else set()
        return enc[0], value[1][0], tuple(sorted(tags))

    return [{"steps": _handed(*option), "quick": True}
            for option in _each_call_argument(programs, targets, found)[:limit]]


SUBCLASS_HOWS = {"str": ("enum", "plain", "keeps", "slots", "user"), "int": ("enum", "plain", "keeps", "slots"),
                 "float": ("plain", "keeps", "slots"), "list": ("plain", "keeps", "slots", "user", "abc", "array"),
                 "tuple": ("plain", "keeps", "namedtuple", "abc"), "dict": ("plain", "keeps", "user", "abc", "proxy",
                                                                            "items"),
                 "set": ("plain", "keeps", "abc", "keys"), "frozenset": ("plain", "keeps", "abc", "keys"),
                 "bytes": ("plain", "keeps")}


def _subclass_of(enc, rng: random.Random, how: str) -> list | None:
    """An encoded value as an instance of a user's subclass of its type made `how` (`fd_calls._subclassed`,
    `SUBCLASS_HOWS`), or None where its type has no such kind (a bool, an enum of floats)."""
    if not isinstance(enc, list) or len(enc) != 2 or how not in SUBCLASS_HOWS.get(enc[0], ()):
        return None
    if how == "array" and not (enc[1] and (all(i[:1] == ["int"] and abs(i[1]) < 1 << 63 for i in enc[1])
                                           or all(i[:1] == ["float"] for i in enc[1]))):
        return None  # an array holds numbers of one kind
    return ["sub", [how, rng.choice(USER_CLASS_NAMES), rng.choice(USER_MODULES), enc]]


def subclasses(programs: list[dict], targets: list[list[str]], limit: int = SUBCLASSES) -> list[dict]:
    """Programs that hand a call of a deleted definition a recorded value as an instance of a class a user's code
    defines on its type (`SUBCLASS_HOWS`): an `enum.StrEnum` or `IntEnum` member, a subclass with an empty body,
    with `__slots__`, or whose operators answer its own type (markupsafe's `Markup`, a `Money(int)`), a namedtuple,
    a `collections.UserString`/`UserList`/`UserDict`, a user's `collections.abc` Mapping, Sequence or Set; a
    container of no builtin type: a dict as a `MappingProxyType`, an `OrderedDict`, `defaultdict` and `Counter`, and
    its items view, a list as a `deque` and an `array`, a set as a keys view;
    the items of a recorded list or tuple each as one, and those items as one subclassed text (`frequencies` of a
    `Markup`); names and modules drawn per program (`USER_CLASS_NAMES`, `USER_MODULES`). Code that refused every
    subclass of text and numbers was paid on 61 of 62 tasks (red team 20, Y20), then every subclassed container
    and every subclass whose `+` keeps its type (red team 21, C21 and S21), then every container of no builtin or
    `collections.User*` type (red team 22, A22b)."""
    def found(arg, key):
        rng = _draw(f"{key}/{json.dumps(arg)}")
        out = [_subclass_of(arg, rng, how) for how in SUBCLASS_HOWS.get(arg[0], ())]
        if arg[0] == "dict" and _plain_items(arg):
            out += [["OrderedDict", arg[1]], ["Counter", arg[1]], ["defaultdict", [["ref", "builtins", "int"], arg[1]]]]
        if arg[0] == "list" and _plain_items(arg):
            out.append(["deque", [arg[1], None]])
        if arg[0] in ("list", "tuple") and _plain_items(arg) and any(i[0] in ("str", "int", "float") for i in arg[1]):
            out.append([arg[0], [_subclass_of(i, rng, "plain") or i for i in arg[1]]])
            if all(isinstance(i, list) and i[0] in ("str", "int") for i in arg[1]):  # its items as text, as `types`
                out.append(_subclass_of(["str", "".join(str(i[1]) for i in arg[1])], rng, "keeps"))
        return [((o[0], o[1][0]) if o[0] == "sub" else o[0], o) for o in out if o is not None]

    return [{"steps": _handed(*option)} for option in _each_call_argument(programs, targets, found)[:limit]]


# What users' text holds that no bundled test's does (red team 24): a letter of another script first (W24: gold with a
# guard refusing any character past U+00FF was paid on 59 of 62 tasks), the typographic marks keyboards and word
# processors write for ASCII ones, and a tab or a Windows line end (K24: a TSV row, a line read from a file)
SCRIPTS = ("ж", "λ", "東", "ğ", "ש", "ا", "ह", "😀")
# and (red team 28, L28) the Latin-1 letters and signs of German, Spanish, Nordic and French text and of prices: the
# checks added only "é", and a guard refusing any of ä ö ü ß ñ å ø æ was paid on 41 of 43 tasks swept
LATIN = ("ä", "ö", "ü", "ß", "ñ", "å", "ø", "æ", "Ä", "Ø", "£", "°", "«", "¿", "¡")
MARKS = (("'", "’"), ('"', "“"), (" - ", " – "), ("-", "‐"), ("...", "…"))
# and (red team 25) letters of more than one code point: decomposed as macOS file names and many PDFs write them (M25:
# a guard refusing any combining mark, joiner or variation selector was paid on 61 of 62 tasks), Indic conjuncts,
# Thai and Arabic vowel signs, emoji with a variation selector, a skin tone or joiners; and the spaces of web pages,
# word processors and typography beside the ASCII one (U25: no-break, narrow no-break, thin, ideographic, a form
# feed, a vertical tab, a line separator, NEL; paid on 61 of 62 too)
JOINED = ("e\u0301", "n\u0303", "न्द", "क्ष", "ก\u0e34", "ب\u064e", "❤\ufe0f", "👍\U0001f3fd", "👩\u200d💻")
SPACES = ("\u00a0", "\u202f", "\u2009", "\u3000", "\x0c", "\x0b", "\u2028", "\x85")
# and (red team 26, P26) the ASCII symbols of URLs, markup, templates, money and paths, which no bundled test's text
# held: each of these holds every ASCII punctuation mark
SYMBOLS = ('<a href="/s?q=a%20b&n={n}#top">$5</a> C:\\Users\\ann | [~/*.py] ^ `x` (ok!) @me; a+b, it\'s_1-2.',
           '{{ user.name }} <b>50%</b> = $12.50 & more | C:\\tmp\\[a].txt ~ `git` ^(1+2)*3! @ann; key="val", '
           'it\'s #1_a-b?/',
           'price: $5 = 50% off {SALE} <b>now</b> \\o/ [x|y] ~ ^_^ `ok` (a+b)*2! me@x.org & co; "a, b" it\'s #1-2?')
# and (red team 30) what text read from terminals, files and the OS holds: C0 control characters (an ANSI colour's
# ESC, NUL padding, a bell, a backspace, the ASCII separators, DEL; C30) and a lone surrogate, as `os.fsdecode`,
# `os.listdir` and `sys.argv` make of undecodable bytes (S30), neither in any bundled test's text
CONTROLS = ("\x1b[1m", "\x00", "\x07", "\x08", "\x1c", "\x1f", "\x7f", "\x0e")
SURROGATES = ("\udcff", "\udc80", "\udce9", "\ud800")
SCRIPT_FORMS = 32  # programs that hand a call of a deleted definition its text so changed (`scripts`)


def _leaves_changed(enc, change, depth: int = 0):
    """An encoded value with each leaf in it (3 levels down: items, a mapping's keys and values) made `change(leaf)`
    where that gives one, or None where no leaf changes."""
    if not isinstance(enc, list) or len(enc) < 2 or depth > 3:  # a function the tests name is ["ref", module, name]
        return None
    tag, v = enc[:2]
    if tag in ("list", "tuple", "set", "frozenset") and isinstance(v, list):
        items = [_leaves_changed(i, change, depth + 1) for i in v]
        return [tag, [n if n is not None else i for n, i in zip(items, v)]] if any(n is not None for n in items) \
            else None
    if tag in ("dict", "OrderedDict") and isinstance(v, list):
        pairs = [[_leaves_changed(k, change, depth + 1), _leaves_changed(x, change, depth + 1)] for k, x in v]
        if all(k is None and x is None for k, x in pairs):
            return None
        return [tag, [[nk if nk is not None else k, nx if nx is not None else x] for (nk, nx), (k, x) in zip(pairs, v)]]
    return change(enc)


def _texts_changed(enc, change):
    """An encoded value with each text in it made `change(text)` (`_leaves_changed`), or None where none changes."""
    def leaf(enc):
        new = change(enc[1]) if enc[0] == "str" and isinstance(enc[1], str) else None
        return ["str", new] if new is not None and new != enc[1] else None
    return _leaves_changed(enc, leaf)


def _strx(text: str) -> list:
    """Text holding a lone surrogate, encoded as the driver encodes it (`fd_calls.encode`: no UTF-8 of its own)."""
    return ["strx", text.encode("utf-8", "surrogatepass").hex()]


def _marked(text: str) -> str:
    """Text with its ASCII marks written as typographic ones, or, where it has none, a possessive `’s` added."""
    for ascii_mark, mark in MARKS:
        text_ = text.replace(ascii_mark, mark)
        if text_ != text:
            return text_
    return text + "’s" if text[-1:].isalpha() else text


def _blanked(text: str) -> str:
    """Text with its line ends written as Windows writes them, else its first space as a tab, else a tab added."""
    if "\n" in text:
        return text.replace("\n", "\r\n")
    return text.replace(" ", "\t", 1) if " " in text else text + "\t" if text else text


def _spaced(text: str, space: str) -> str:
    """Text with its first space written as `space`, or, where it has none, `space` after it (a cell copied from a
    web page)."""
    return text.replace(" ", space, 1) if " " in text else text + space if text else text


def _inside(text: str, letter: str) -> str:
    """Text with `letter` after its first letter, as in a word (café, Zürich), or after it where it has none: red team
    29, L29: with Latin-1 letters only first, a guard on one after a letter was paid on 19 of 22 tasks."""
    at = next((i + 1 for i, c in enumerate(text) if c.isalpha()), len(text))
    return text[:at] + letter + text[at:] if text else text


def scripts(programs: list[dict], targets: list[list[str]], limit: int = SCRIPT_FORMS) -> list[dict]:
    """Programs that hand a call of a deleted definition an argument whose every text (its items, keys and values too)
    is as users' text also is: a letter of another script first (`SCRIPTS`, drawn per argument), with typographic
    marks (`_marked`), with a tab or Windows line ends (`_blanked`), with a letter of several code points first
    (`JOINED`), with another space (`SPACES`, `_spaced`), after text of URLs, markup and paths (`SYMBOLS`) and with a
    Latin-1 letter or sign first (`LATIN`), a Latin-1 letter, a control character (`CONTROLS`) and a lone surrogate
    (`SURROGATES`) after its first letter (`_inside`), each drawn per argument. The held-out forms added only
    "é" (`NON_ASCII`), no bundled test holds a tab, a combining mark or a space past ASCII, and a guard refusing any
    character past U+00FF was paid on 59 of 62 tasks, one refusing a tab or carriage return on 61 (red team 24, W24
    and K24), one refusing a combining mark or another space on 61 (red team 25, M25 and U25). Each function's first
    of each change first."""
    def found(arg, key):
        rng = _draw(f"{key}/{json.dumps(arg)}")
        letter, joined, space = rng.choice(SCRIPTS), rng.choice(JOINED), rng.choice(SPACES)
        symbols = rng.choice(SYMBOLS)
        latin = rng.choice(LATIN)  # drawn last: the earlier draws, and the programs made of them, stay as they were
        inner = rng.choice([c for c in LATIN if c.isalpha()])
        control, surrogate = rng.choice(CONTROLS), rng.choice(SURROGATES)
        changed = {"script": _texts_changed(arg, lambda t: letter + t if t else t),
                   "mark": _texts_changed(arg, _marked), "blank": _texts_changed(arg, _blanked),
                   "joined": _texts_changed(arg, lambda t: joined + t if t else t),
                   "space": _texts_changed(arg, lambda t: _spaced(t, space)),
                   "symbols": _texts_changed(arg, lambda t: f"{symbols} {t}" if t else t),
                   "latin": _texts_changed(arg, lambda t: latin + t if t else t),
                   "latin inside": _texts_changed(arg, lambda t: _inside(t, inner)),
                   "control": _texts_changed(arg, lambda t: _inside(t, control)),
                   "surrogate": _leaves_changed(arg, lambda leaf: _strx(_inside(leaf[1], surrogate))
                                                if leaf[0] == "str" and isinstance(leaf[1], str) and leaf[1] else None)}
        return [(how, value) for how, value in changed.items() if value is not None]

    return [{"steps": _handed(*option)} for option in _each_call_argument(programs, targets, found)[:limit]]


# What users hand as a callable that no bundled test does (red team 25): every test's callable is replayed as a plain
# function, whatever it was, and a guard refusing a bound method (F25: `d.get`, `seen.__contains__`, `pattern.search`,
# `obj.method`) or a callable `functools` makes (O25: a `partial`, an `lru_cache`d function) was paid on all 18 tasks
# whose deleted code takes one
CALLABLE_HOWS = ("method", "builtin", "wrapper", "partial", "cached", "object", "getter")  # `fd_calls._callable_as`
CALLABLE_FORMS = 24  # programs that hand a call of a deleted definition its callables so made (`callables`)
REF_HOWS = ("method", "wrapper", "partial", "object", "getter")  # those a function the tests name is handed as
# `operator` callables handed in place of a function the tests name, one drawn per function: no calls were recorded
# to choose one by, and gold's answers to it are the check (red team 28, O28 on toolz `_has_varargs`, whose argument
# is a named function: a guard refusing an `itemgetter` was paid)
REF_GETTERS = (["itemgetter", ["int", 0]], ["attrgetter", "__class__"], ["methodcaller", "__len__", []])
HASHABLE = frozenset({"str", "int", "float", "bool", "NoneType", "bytes", "bigint", "Decimal", "Fraction", "date",
                      "datetime", "timedelta", "enum", "ref"})


def _hashable(enc) -> bool:
    """Whether an encoded value is one a mapping can be keyed by."""
    if _tag(enc) in ("tuple", "frozenset"):
        return isinstance(enc[1], list) and all(_hashable(i) for i in enc[1])
    return _tag(enc) in HASHABLE


# What `operator` callables a key function or predicate is written as (red team 28, O28: a guard refusing an
# `itemgetter`, `attrgetter` or `methodcaller` was paid on all 7 tasks played; one test of 66 tasks handed one)
TEXT_METHODS = ("lower", "upper", "strip", "title", "casefold", "capitalize", "swapcase", "isalpha", "isdigit",
                "isupper", "islower", "isspace", "isalnum", "__len__")
COMPARISONS = ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__")


def _encoded(value) -> list | None:
    """The encoding of a bool, an int of 64 bits, a finite float or text; None for anything else."""
    if type(value) is bool:
        return ["bool", value]
    if type(value) is int:
        return ["int", value] if abs(value) < 1 << 63 else None
    if type(value) is float:
        return ["float", repr(value)] if math.isfinite(value) else None
    return ["str", value] if type(value) is str else None


def _getters(args: list, answers: list):
    """(getter, what it answers each of `args`: encoded, None where it raises) of the `operator` callables a callback
    taking `args` (encoded, one tag) could be: an item of a mapping, sequence or record (`itemgetter`, the mapping's
    `get`); a number itself (`attrgetter("real")`), plus or times a number, compared with one of them; a method of
    text. The number the callback's first answer and argument imply first."""
    tag = _tag(args[0])
    if tag in ("dict", "OrderedDict"):
        held = [{json.dumps(k): v for k, v in a[1]} for a in args]
        for key, _ in args[0][1]:
            k = json.dumps(key)
            if _hashable(key):
                if all(k in h for h in held):
                    yield ["itemgetter", key], [h[k] for h in held]
                yield ["methodcaller", "get", [key]], [h.get(k, ["NoneType", None]) for h in held]
    elif tag in ("list", "tuple", "namedtuple"):
        rows = [a[1] if tag != "namedtuple" else a[1][1] for a in args]
        for i in [*range(min(len(r) for r in rows)), -1][:MAX_RETYPED_ITEMS] if all(rows) else []:
            yield ["itemgetter", ["int", i]], [r[i] for r in rows]
    elif tag in ("int", "float"):
        xs = [_number(a) for a in args]
        if None in xs:
            return
        yield ["attrgetter", "real"], [_encoded(x) for x in xs]
        first = _number(answers[0]) if _tag(answers[0]) in ("int", "float") else None
        for name, c in (("__add__", first - xs[0] if first is not None else 1),
                        ("__mul__", first // xs[0] if first is not None and xs[0] and not first % xs[0] else 2)):
            if _encoded(c) is not None:
                yield ["methodcaller", name, [_encoded(c)]], [_encoded(getattr(x, name)(c)) for x in xs]
        for name in COMPARISONS:
            for c in sorted(set(xs))[:MAX_RETYPED_ITEMS]:
                yield ["methodcaller", name, [_encoded(c)]], [_encoded(getattr(x, name)(c)) for x in xs]
    elif tag == "str" and all(type(a[1]) is str for a in args):
        for name in TEXT_METHODS:
            yield ["methodcaller", name, []], [_encoded(getattr(a[1], name)()) for a in args]


def getter_of(callback: dict) -> list | None:
    """The `operator` callable (`_getters`) handed in place of a recorded callback of one positional argument of one
    kind: one that answers every recorded call as the callback did where one does, else the first that answers with
    the same kinds of value (a predicate's bools, a key's ints), else the first; gold's answers to it are the check
    (`callables`)."""
    calls = callback.get("calls") or []
    if not calls or callback.get("reenter") or callback.get("otherwise") \
            or any(len(key[0]) != 1 or key[1] for key, _ in calls) or len({_tag(key[0][0]) for key, _ in calls}) > 1:
        return None
    args, answers = [key[0][0] for key, _ in calls], [answer for _, answer in calls]
    options = [(getter, got) for getter, got in _getters(args, answers) if None not in got]  # None: it raises
    for getter, got in options:
        if all(json.dumps(g) == json.dumps(a) for g, a in zip(got, answers)):
            return getter
    kinds = [_tag(a) for a in answers]
    same = [getter for getter, got in options if [_tag(g) for g in got] == kinds]
    return (same or [getter for getter, _ in options] or [None])[0]


def _callable_hows(callback: dict) -> list[str]:
    """The ways (`CALLABLE_HOWS`) a recorded callback is handed with the answers it gave: a builtin method (a mapping's
    `__getitem__`) where every call had one hashable argument, a memoized function where the answers are a function
    of hashable arguments too, any way where it was called (an `operator` callable where `getter_of` also finds one:
    `_as_callable`, which asks only for that way)."""
    calls = callback.get("calls") or []
    if not calls:
        return []
    hashable = all(all(_hashable(a) for a in key[0]) and all(_hashable(v) for _, v in key[1]) for key, _ in calls)
    answers: dict[str, set[str]] = {}
    for key, answer in calls:
        answers.setdefault(json.dumps(key, sort_keys=True), set()).add(json.dumps(answer))
    one = hashable and all(len(key[0]) == 1 and not key[1] for key, _ in calls)
    same = hashable and all(len(a) == 1 for a in answers.values())
    ok = {"builtin": one, "cached": same}
    return [how for how in CALLABLE_HOWS if ok.get(how, True)]


def _as_callable(leaf, how: str, where: list[str]) -> list | None:
    """A callback or a function the tests name (`ref`: `len`, `inc`, a class; `reduce`: a partial, an `itemgetter`; the
    driver hands anything not callable as it is) handed the `how` way, or None where it has no such way
    (`_callable_hows`, `REF_HOWS`)."""
    if leaf[0] == "callback" and isinstance(leaf[1], dict) and not leaf[1].get("as") \
            and how in _callable_hows(leaf[1]):
        getter = [getter_of(leaf[1])] if how == "getter" else []
        return None if getter == [None] else ["callback", {**leaf[1], "as": [how, *where, *getter]}]
    if leaf[0] not in ("ref", "reduce") or how not in REF_HOWS:
        return None
    getter = [_draw(json.dumps(leaf)).choice(REF_GETTERS)] if how == "getter" else []
    return ["callable", [how, *where, leaf, *getter]]


def callables(programs: list[dict], targets: list[list[str]], limit: int = CALLABLE_FORMS) -> list[dict]:
    """Programs that hand a call of a deleted definition an argument whose every callable (its items, keys and values
    too, a stream's items: a test's callback, a function the tests name) is a callable of another kind with the same
    answers
    (`fd_calls._callable_as`): a user object's method, a builtin method bound to a mapping, a method-wrapper, a
    `functools.partial`, an `lru_cache`d function, a callable object, its class and module drawn per argument
    (`USER_CLASS_NAMES`, `USER_MODULES`). Each function's first of each kind, for callbacks and named functions
    alike, first."""
    def found(arg, key):
        rng = _draw(f"{key}/{json.dumps(arg)}")
        where = [rng.choice(USER_CLASS_NAMES), rng.choice(USER_MODULES)]
        out = []
        for how in CALLABLE_HOWS:
            def change(leaf, how=how):
                return _as_callable(leaf, how, where)
            if arg[0] == "stream" and isinstance(arg[1], dict) and isinstance(arg[1].get("items"), list):
                items = [_leaves_changed(i, change) for i in arg[1]["items"]]
                value = ["stream", {**arg[1], "items": [n if n is not None else i for n, i in
                                                       zip(items, arg[1]["items"])]}] if any(items) else None
            else:
                value = _leaves_changed(arg, change)
            if value is not None:
                out.append(((how, "named" if '["callable", ' in json.dumps(value) else "callback"), value))
        return out

    return [{"steps": _handed(*option)} for option in _each_call_argument(programs, targets, found, named=True)[:limit]]


# What users' data holds that no bundled test's does (red team 24): the standard library's numbers and times (V24:
# money as `Decimal`, ratios as `Fraction`, records and cache keys as dates; gold with a guard refusing them was paid
# on 60 of 62 tasks), ints past 64 bits (B24: 128-bit ids, hashes, the index of a combination of 100 things) and
# documents nested past the three levels any bundled test's reach (D24: JSON from an API, trees; paid on 61 of 62)
NUMBER_CHANGES = ("Decimal", "Fraction", "big", "date", "datetime", "aware", "time", "tiny", "huge", "inf",
                  "negative zero")
# zones an aware datetime or time is in (red team 26, Z26: every datetime handed was naive, and no time was handed)
ZONES = ((0, "UTC"), (3600, "CET"), (-18000, "EST"), (19800, "IST"), (32400, "JST"))
BIG_PAST = ((10 ** 20, 1), (10 ** 40, 1), (10 ** 20, -1))  # past 2**64, past 2**128, and negated: last digits kept
DAY_ONE = datetime.datetime(2024, 1, 1)  # a number n handed as a date is n days after it, as a time n minutes
NUMBER_FORMS = 44  # programs that hand a call of a deleted definition its numbers so changed (`numbers`)
NESTED_FORMS = 12  # programs that hand a call of a deleted definition an argument nested deeper (`nested`)
NESTED_LEVELS = (4, 10)  # containers a nested argument gains, drawn per argument


def _number(leaf: list) -> int | float | None:
    """The number an encoded leaf is (an int, a float), None for any other (a bool, text, inf, nan)."""
    tag, v = leaf[:2]
    if tag == "int" and type(v) is int:
        return v
    if tag == "bigint":
        return int(v)
    return float(v) if tag == "float" and math.isfinite(float(v)) else None


def _as_number(change: str, n: int | float, rng: random.Random) -> list | None:
    """`n` encoded as the `change` (`NUMBER_CHANGES`) kind of number, or None where it has no such form."""
    try:
        if change == "Decimal":
            return ["Decimal", str(n) if type(n) is int else repr(n)]
        if change == "Fraction":
            f = fractions.Fraction(repr(n)) if type(n) is float else fractions.Fraction(n)
            return ["Fraction", [f.numerator, f.denominator]]
        if change == "big" and type(n) is int:
            past, sign = rng.choice(BIG_PAST)
            return ["bigint", str(sign * (n + past if n >= 0 else n - past))]
        if change == "date":  # an int is a day, a float a duration in seconds
            if type(n) is int:
                return ["date", (DAY_ONE + datetime.timedelta(days=n)).date().isoformat()]
            d = datetime.timedelta(seconds=n)
            return ["timedelta", [d.days, d.seconds, d.microseconds]]
        if change in ("datetime", "aware", "time"):  # an aware time of day and datetime are in a zone drawn
            moved = DAY_ONE + (datetime.timedelta(minutes=n) if type(n) is int else datetime.timedelta(seconds=n))
            offset, name = rng.choice(ZONES) if change != "datetime" else (None, None)
            zone = None if offset is None else [*divmod(offset, 86400), name]
            return ["time", [moved.time().isoformat(), zone]] if change == "time" \
                else ["datetime", [moved.isoformat(), zone]]
        # floats as measurements and physics write them, which `repr` writes with an exponent, and the infinities
        # (red team 28, E28b: no float handed was below 1e-4 or past 1e16, and a guard on either was paid on 9 of 9)
        if change in ("tiny", "huge"):
            return ["float", repr(float(n or 1) * (1e-7 if change == "tiny" else 1e17))]
        if change == "inf":
            return ["float", "inf" if n >= 0 else "-inf"]
        if change == "negative zero":  # `round(-0.04, 1)`, `-x` of 0.0, a sensor's reading (red team 30, Z30: one
            return ["float", "-0.0"]  # argument of 180,255 held one, and a guard on it was paid)
    except (OverflowError, ValueError):
        pass
    return None


def _size_of(enc) -> int:
    """A small number for a value that holds none: its length where it has one, else 1."""
    return len(enc[1]) if isinstance(enc, list) and len(enc) == 2 and isinstance(enc[1], (str, list)) else 1


def numbers(programs: list[dict], targets: list[list[str]], limit: int = NUMBER_FORMS) -> list[dict]:
    """Programs that hand a call of a deleted definition an argument whose every number (its items, keys and values
    too) is as users' numbers also are (`NUMBER_CHANGES`): a `Decimal` and a `Fraction` of the same value, an int
    moved past 2**64 or 2**128 or negated (its last digits kept: `ordinal` answers by them), an int as that many
    days after `DAY_ONE` and a float as that many seconds (`date`, `timedelta`), a `datetime`, naive and in a zone
    (`ZONES`), an aware time of day; an argument that
    holds no number (text, an object) handed as each of those kinds, of its size. The recorded inputs held builtin
    numbers below 2**53 only, and a guard refusing any value of the `decimal`, `fractions` or `datetime` modules
    was paid on 60 of 62 tasks (red team 24, V24), one refusing ints of 2**64 or more on every task tried (B24),
    one refusing aware datetimes and times 1.000 on every task swept (red team 26, Z26: no datetime handed had a
    zone, and no time of day was handed); a float 1e-7 and 1e17 times it (written with an exponent) and an infinity
    of its sign (red team 28, E28b); a negative zero (red team 30, Z30).
    Each function's first of each kind, changed in place and handed whole, first."""
    def found(arg, key):
        rng = _draw(f"{key}/{json.dumps(arg)}")
        changed = {change: _leaves_changed(arg, lambda leaf, c=change: None if (n := _number(leaf)) is None
                                           else _as_number(c, n, rng)) for change in NUMBER_CHANGES}
        how = "its numbers"
        if all(value is None for value in changed.values()):  # it holds no number: it as each kind, of its size
            changed, how = {change: _as_number(change, _size_of(arg), rng) for change in NUMBER_CHANGES}, "it"
        return [((change, how), value) for change, value in changed.items() if value is not None]

    return [{"steps": _handed(*option)} for option in _each_call_argument(programs, targets, found)[:limit]]


# What users' code hands that no bundled test's does (red team 26, R26): objects of its own classes, records and ids
OBJECT_HOWS = ("record", "enum", "uuid", "path", "sentinel", "mutable", "plain")  # `fd_calls._user_object`
OBJECT_FORMS = 16  # programs that hand a call of a deleted definition its scalars so held (`objects`)
SCALARS = frozenset({"str", "int", "float", "bool", "NoneType", "bigint", "bytes"})


def objects(programs: list[dict], targets: list[list[str]], limit: int = OBJECT_FORMS) -> list[dict]:
    """Programs that hand a call of a deleted definition an argument of plain data whose every scalar (its items,
    keys and values too, or itself) is held in an object of no builtin type as users' code hands them
    (`fd_calls._user_object`): a frozen dataclass record, a member of a plain `Enum`, a `uuid.UUID`, a
    `pathlib.PurePosixPath` of text, a bare `object()` sentinel in its place, a dataclass record that is not frozen
    and an object of a plain class; the class's name and module drawn per argument (`USER_CLASS_NAMES`,
    `USER_MODULES`). No check handed an object of a user's own class, and a guard refusing one was paid on 58 of 62
    tasks (red team 26, R26); then none handed a mutable one (red team 30, U30: a guard paid on 15 of 15; M30, code
    setting an attribute of its own on the caller's objects, on 16 of 16). Each function's first of each kind first."""
    def found(arg, key):
        if not _plain_items(arg):
            return []
        rng = _draw(f"{key}/{json.dumps(arg)}")
        where = [rng.choice(USER_CLASS_NAMES), rng.choice(USER_MODULES)]
        out = []
        for how in OBJECT_HOWS:
            value = _leaves_changed(arg, lambda leaf, how=how: ["obj", [how, *where, leaf]] if leaf[0] in SCALARS
                                    and (how != "path" or leaf[0] == "str") else None)
            if value is not None:
                out.append((how, value))
        return out

    return [{"steps": _handed(*option)} for option in _each_call_argument(programs, targets, found)[:limit]]


# What users hand where code takes an iterable, and that no bundled test's arguments held (red team 27): the iterators
# builtins and the standard library make (every stream was replayed as a generator or a list's iterator, I27), a
# range (G27), a frozenset (F27), a list of records (R27), bytes items (B27), a NaN (N27)
ITERATOR_HOWS = ("map", "filter", "reversed", "tuple", "values", "chain", "islice", "enumerate", "zip", "keys", "text",
                 "lines", "csv", "items", "set", "bytesiter", "generator")  # `fd_calls._iterable_as`
MUTABLE = frozenset({"list", "dict", "set"})  # containers a caller's code can hold many times in one argument
ITERABLE_FORMS = 48  # programs that hand a call of a deleted definition its input so made (`iterables`)
COLUMNS = ("jan", "feb", "eu", "us", "red", "blue", "north", "2024-q1")  # a second column's values, a grouping's


def _items_of(enc) -> list | None:
    """The encoded items an argument's iterator would give (text: its characters; a number: itself), or None."""
    tag, v = enc[0], enc[1]
    if tag == "stream":
        return v["items"] if isinstance(v, dict) and v.get("end") and isinstance(v.get("items"), list) \
            and None not in v["items"] and _plain_items(v["items"]) else None
    if tag in ("list", "tuple", "set", "frozenset") and isinstance(v, list) and _plain_items(v):
        return v
    if tag in ("dict", "OrderedDict", "Counter") and isinstance(v, list) and _plain_items(v):
        return [k for k, _ in v]
    if tag == "str" and isinstance(v, str):
        return [["str", c] for c in v[:MAX_RETYPED_ITEMS]]
    if tag in ("int", "float", "bool"):
        return [enc]
    return None


def _made_iterables(items: list) -> list[tuple[str, list]]:
    """(how, encoding) of `items` (encoded) as each input `iterables` hands that they have a form as."""
    text = bool(items) and all(i[0] == "str" for i in items)
    unique = len({json.dumps(i) for i in items}) == len(items)
    # the kinds only some items have; every other kind any items have
    fits = {"keys": unique and all(i[0] in ("int", "str", "float", "bool", "NoneType") for i in items),
            "text": all(i[0] == "str" and len(i[1]) == 1 for i in items), "lines": text, "csv": text,
            "set": unique and bool(items) and all(i[0] in ("int", "float") for i in items),  # text: hash order
            "bytesiter": bool(items) and all(i[0] == "int" and 0 <= i[1] < 256 for i in items)}
    hows = [how for how in ITERATOR_HOWS if fits.get(how, True)]
    out = [(how, ["iter", [how, ["list", copy.deepcopy(items)]]]) for how in hows]
    ints = [i[1] for i in items if i[0] == "int"]
    if len(ints) == len(items):
        step = ints[1] - ints[0] if len(ints) > 1 else 1
        if step and all(b - a == step for a, b in zip(ints, ints[1:])):  # in step, as `range` makes them
            out.append(("range", ["range", [ints[0], ints[-1] + step, step]] if ints else ["range", [0, 0, 1]]))
        out.append(("frozenset", ["frozenset", copy.deepcopy(items)]))  # numbers only: text iterates in hash order
    if items:  # each item a record of an id and it, as rows of a table are (two at least); and those as a generator
        records = ["list", [["dict", [[["str", "id"], ["int", n]], [["str", "value"], copy.deepcopy(i)]]]
                            for n, i in enumerate(items if len(items) > 1 else items * 2)]]
        out += [("records", records), ("record rows", ["iter", ["generator", copy.deepcopy(records)]])]
    return out


def iterables(programs: list[dict], targets: list[list[str]], limit: int = ITERABLE_FORMS) -> list[dict]:
    """Programs that hand a call of a deleted definition an argument's items (text: its characters; a mapping: its
    keys) as another iterable users hand (`ITERATOR_HOWS`, `fd_calls._iterable_as`): a `map`, a `filter`, a
    `reversed`, a tuple's, a dict's values' or keys' iterator, `itertools.chain` and `islice`, `enumerate`, `zip`, a
    text's iterator, a file's lines, a `csv.reader`; ints in step as a `range`; numbers as a `frozenset`; a list of
    records of an id and each item (two at least); and the argument with its text and numbers as bytes of their text
    (a lone one held in a list), and with its numbers (or itself, where it holds none) as NaN. Every stream was
    replayed as a generator or a list's iterator, and no check handed a range but on 4 tasks, a frozenset, a record
    list but on 1, bytes in a container or a NaN: a guard refusing each was paid on 55 to 60 of 62 tasks swept, and
    on each of 7 played (red team 27: I27, G27, F27, R27, B27, N27). Then (red team 28) a dict's items', a set's and
    a bytes object's iterators (I28), and a mapping keyed by (key, n) pairs (K28: no dict handed had tuple keys; a
    guard refusing them was paid on 7 of 7 played), and a generator of the items, of the records too (R28: on 5 of 7
    tasks played no check handed a generator of rows, and code that damaged each row it read was paid). Then (red
    team 29) a mapping keyed by (column, key) pairs, a column drawn from `COLUMNS` (K29: a guard on tuple keys not
    ending in an int paid on 12 of 13), and a list of lists with each inner list as a tuple's iterator and as a
    generator (I29: no check handed an iterator inside a container; a guard refusing one paid on 39 of 39). Then
    (red team 30, A30) a list of one container held many times and a mapping of one value (`dict.fromkeys`).
    Gold's answer is the check, a raised exception too. Each function's first of each kind first."""
    def found(arg, key):
        items = _items_of(arg)
        out = [] if items is None else _made_iterables(items)
        if arg[0] in ("dict", "OrderedDict") and arg[1]:  # keyed by pairs, as a grouping by two columns is
            out.append(("pair keys", [arg[0], [[["tuple", [k, ["int", n]]], v] for n, (k, v) in enumerate(arg[1])]]))
            column = _draw(f"{key}/{json.dumps(arg)}").choice(COLUMNS)  # K29: not only (key, int)
            out.append(("column keys", [arg[0], [[["tuple", [["str", column], k]], v] for k, v in arg[1]]]))
        if arg[0] in ("list", "tuple") and arg[1] and all(_tag(i) in ("list", "tuple") for i in arg[1]) \
                and _plain_items(arg):
            for how in ("tuple", "generator"):  # I29: iterators inside a container (`transpose([rows, ...])`)
                out.append((f"inner {how}", [arg[0], [["iter", [how, ["list", copy.deepcopy(i[1])]]]
                                                      for i in arg[1]]]))
        if not _plain_items(arg):
            return out
        # A30: one container held many times (`[row] * n`, `[[0] * 3] * 2`, `dict.fromkeys(keys, [])`): every decoded
        # argument was built afresh, item by item, and a guard on a container met twice was paid
        if arg[0] in ("list", "tuple") and arg[1] and _tag(arg[1][0]) in MUTABLE:
            out.append(("same rows", ["same", [arg[0], arg[1][0], max(2, len(arg[1]))]]))
        if arg[0] == "dict" and len(arg[1]) > 1 and _tag(arg[1][0][1]) in MUTABLE:
            out.append(("same values", ["same", ["fromkeys", ["list", [k for k, _ in arg[1]]], arg[1][0][1]]]))

        def as_bytes(leaf):
            return ["bytes", str(leaf[1]).encode("utf-8", "surrogatepass").hex()] \
                if leaf[0] in ("str", "int", "float") else None
        scalar = arg[0] in ("str", "int", "float")
        text = ["list", [as_bytes(arg)]] if scalar else _leaves_changed(arg, as_bytes)
        nan = _leaves_changed(arg, lambda leaf: ["float", "nan"] if _number(leaf) is not None else None)
        return out + [(how, value) for how, value in (("bytes", text), ("nan", nan or ["float", "nan"]))
                      if value is not None]

    return [{"steps": _handed(*option)} for option in _each_call_argument(programs, targets, found)[:limit]]


RAISING_FORMS = 32  # programs that hand a call of a deleted definition a generator that raises (`raising`)
PLACES = (None, 0, 1)  # where it raises: after its items, before the first, after the first; in turns by kind
# what a user's generator raises, [type, its module (None: a builtin), drawn per program]: a row without a key, a
# short row, a value of the wrong type, a file's or request's error, a division by a zero count, a file's bytes
# decoded line by line, PEP 479's error of a generator calling `next` on an ended iterator, a check (red team 30,
# X30: the first six only, and code taking the next four for the end was paid), an exception class of the user's own
RAISED = (["KeyError", None], ["IndexError", None], ["TypeError", None], ["AttributeError", None],
          ["OSError", None], ["ValueError", None], ["ZeroDivisionError", None], ["UnicodeDecodeError", None],
          ["RuntimeError", None], ["AssertionError", None], ["RowError", "app.errors"],
          ["ParseError", "myproject.parsing"])


def raising(programs: list[dict], targets: list[list[str]], limit: int = RAISING_FORMS) -> list[dict]:
    """Programs that hand a call of a deleted definition that gold answered (no exception) an argument's items (a
    container's, a stream's) as a generator that raises a `ValueError` after them (`fd_calls._raising`), as a user's
    generator does on a bad row. Every stream a check handed ended, so code that takes any exception from `next()`
    for the end (`except Exception` where gold has `except StopIteration`) answered from the items before the error
    and was paid on 54 of 62 tasks (red team 28, X28). Only calls gold answered: on one that raised for its own
    reason (a `TypeError` on the recorded items) the generator's error is never reached. Gold's answer is the check:
    the error, or what the package makes of it. And (red team 29) each kind of error of `RAISED`, each at one of
    `PLACES` in turns (X29: code taking a `LookupError` for the end was paid on 19 of 22, the error being always a
    `ValueError` after the items; F29: code taking an error at the first item for empty input on 15 of 22). And (red
    team 30, E30) a callback that raises each kind at its first or second call: a test's callback raised only where
    the test's did, and code answering None where a key function raised a `LookupError` was paid."""
    answered = {id(p["steps"]): p.get("expect") or [] for p in programs}

    def found(arg, key):
        turn = _draw(f"{key}/{json.dumps(arg)}").randrange(len(PLACES))
        if arg[0] == "callback" and isinstance(arg[1], dict) and arg[1].get("calls") and not arg[1].get("raises"):
            return [(f"callback raising {kind[0]}", ["callback", {**arg[1], "raises": [*kind, (i + turn) % 2]}])
                    for i, kind in enumerate(RAISED)]  # E30: its first call or its second
        items = _items_of(arg) if arg[0] in ("stream", "list", "tuple", "set", "frozenset", "dict") else None
        if items is None:
            return []
        return [(f"raising {kind[0]}", ["iter", ["raising", ["list", copy.deepcopy(items)],
                                                 [*kind, PLACES[(i + turn) % len(PLACES)]]]])
                for i, kind in enumerate(RAISED)]

    options = [o for o in _each_call_argument(programs, targets, found)
               if o[1] < len(expect := answered.get(id(o[0]), [])) and expect[o[1]][:1] == ["ok"]]
    return [{"steps": _handed(*option)} for option in options[:limit]]


# What users' records and columns hold between their values (none of it nested in any bundled test's arguments on
# most tasks: a None item on 7 of 66, a float on 3, a bool on 19): a missing value (`None`, JSON's null), a flag, a
# negative number, a fraction, an empty text
GAPS = ("None", "bool", "negative", "float", "empty", "equal")  # "equal": the float of the int before it (JSON's 1.0)
GAP_FORMS = 16  # programs that hand a container of a deleted definition's call its items so changed (`gaps`)


def _gap(kind: str, leaf: list) -> list | None:
    """An encoded item made the `kind` (`GAPS`) of value, or None where it has no such form or is one already."""
    tag, v = leaf
    n = _number(leaf)
    if kind == "None":
        return ["NoneType", None] if tag != "NoneType" else None
    if kind == "bool":
        return ["bool", bool(n if n is not None else v)] if tag != "bool" else None
    if kind == "negative" and n is not None:
        return ["int", -abs(n) - 1] if type(n) is int and abs(n) < 1 << 52 else ["float", repr(-abs(float(n)) - 0.5)]
    if kind == "float" and type(n) is int and abs(n) < 1 << 52:
        return ["float", repr(n + 0.5)]
    if kind == "empty" and tag in ("str", "bytes") and v:
        return [tag, ""]
    return None


def gaps(programs: list[dict], targets: list[list[str]], limit: int = GAP_FORMS) -> list[dict]:
    """Programs that hand a call of a deleted definition a container argument (a list, tuple, set or mapping, 3
    levels down) with every other item (a mapping's values) made each kind of value a column or record also holds
    (`GAPS`: None, a bool, a negative number, an int as a float, empty text, the float equal to the int before it),
    or its first item where it has one: a guard refusing any such item nested in an argument would be paid wherever
    the tests hand none (None nested on 7 of 66 tasks' checks, a float on 3; an int and an equal float on none, red
    team 30, Q30: a guard paid on 16 of 16). Each function's first of each kind first."""
    def found(arg, key):
        if arg[0] not in ("list", "tuple", "set", "frozenset", "dict", "OrderedDict") or not _plain_items(arg):
            return []
        out = []
        for kind in GAPS:
            for keep in (lambda i: i % 2 == 0, lambda i: i == 1):  # every other item, else the first
                seen, before = [0], [None]

                def leaf(enc, kind=kind, keep=keep):
                    seen[0] += 1
                    if kind == "equal":  # an int and a float equal to it in one container (red team 30, Q30)
                        n, before[0] = before[0], _number(enc)
                        return ["float", repr(float(n))] if keep(seen[0]) and type(n) is int and abs(n) < 1 << 52 \
                            else None
                    return _gap(kind, enc) if keep(seen[0]) else None
                value = _leaves_changed(arg, leaf)
                if value is not None:
                    out.append((kind, value))
                    break
        return out

    return [{"steps": _handed(*option)} for option in _each_call_argument(programs, targets, found)[:limit]]


def _wrapped(enc, levels: int, tag: str = "tuple") -> list:
    """`enc` as the one item of a `tag` container, `levels` times over."""
    for _ in range(levels):
        enc = [tag, [enc]]
    return enc


def _document(enc, levels: int) -> list:
    """`enc` nested `levels` containers deeper as documents nest: a list's, tuple's or mapping's last item (value)
    made a copy of its first three items whose last is the next level, a set's last item a frozenset so made; any
    other value (an empty one too) held as the one item of a list."""
    tag, v = enc
    if levels <= 0:
        return copy.deepcopy(enc)
    if tag in ("list", "tuple", "set", "frozenset", "dict", "OrderedDict") and isinstance(v, list) and v:
        items = copy.deepcopy(v)
        inner = _document(["frozenset" if tag in ("set", "frozenset") else tag, v[:3]], levels - 1)
        if tag in ("dict", "OrderedDict"):
            items[-1][1] = inner
        else:
            items[-1] = inner
        return [tag, items]
    return _wrapped(enc, levels, "list")


def _tree(enc, levels: int) -> list:
    """`enc` nested `levels` containers deeper as trees of tuples nest: each item of a list, tuple or set (each
    value of a mapping), or any other value, held in one-item tuples, which stay hashable."""
    tag, v = enc
    if tag in ("list", "tuple", "set", "frozenset") and isinstance(v, list) and v:
        return [tag, [_wrapped(i, levels) for i in v]]
    if tag in ("dict", "OrderedDict") and isinstance(v, list) and v:
        return [tag, [[k, _wrapped(x, levels)] for k, x in v]]
    return _wrapped(enc, levels)


def nested(programs: list[dict], targets: list[list[str]], limit: int = NESTED_FORMS) -> list[dict]:
    """Programs that hand a call of a deleted definition an argument of plain data nested more containers deep
    (drawn per argument from `NESTED_LEVELS`): as a document (`_document`: a record whose last value is a record
    like it, a list of lists) and as a tree of tuples (`_tree`). No recorded argument nested past three containers,
    and a guard refusing data four deep was paid on 61 of 62 tasks (red team 24, D24). And a list or record that
    holds itself (`fd_calls` "cyclic": red team 30, Y30). Each function's first of each way first."""
    def found(arg, key):
        if not _plain_items(arg):
            return []
        levels = _draw(f"{key}/{json.dumps(arg)}").randint(*NESTED_LEVELS)
        out = [("document", _document(arg, levels)), ("tree", _tree(arg, levels))]
        # Y30: one that holds itself (a node linked back to its parent, `a.append(a)`): the recorder cannot encode one,
        # so no recorded argument was, and a guard refusing one was paid on 16 of 16
        if arg[0] == "list" or arg[0] == "dict" and all(_tag(k) == "str" for k, _ in arg[1]):
            out.append(("cycle", ["cyclic", arg]))
        return out

    return [{"steps": _handed(*option)} for option in _each_call_argument(programs, targets, found)[:limit]]


def _class_made(step: dict) -> list | None:
    """The class (`["ref", module, name]`) a `new` step makes an object of, or None for any other step."""
    ref = step.get("cls")
    return ref if step["op"] == "new" and isinstance(ref, list) and ref[:1] == ["ref"] and len(ref) == 3 else None


def _has_deleted_code(ref: list, targets: list[list[str]]) -> bool:
    """Whether a class (`["ref", module, name]`) is deleted or holds a deleted definition."""
    return any(t[0] == ref[1] and (t[1] == ref[2] or t[1].startswith(ref[2] + ".")) for t in targets)


def subclassed_objects(programs: list[dict], targets: list[list[str]], limit: int = OBJECT_SUBCLASSES) -> list[dict]:
    """Recorded programs whose objects of a class with deleted code are made as a user's subclass of it instead (an
    empty body, named and placed as `subclasses` draws: `fd_calls._subclassed` "class"), every later step kept:
    users derive their own caches, mappings and containers from a package's classes, and the tests make the class
    itself only. Each class once first, the programs with the most steps first."""
    options = []
    for p in programs:
        for j, step in enumerate(p["steps"]):
            ref = _class_made(step)
            if ref is not None and _has_deleted_code(ref, targets):
                options.append((-len(p["steps"]), len(options), json.dumps(ref), p["steps"], j))
    made, seen = [], set()
    for _, _, cls, steps, j in sorted(options):
        rng = _draw(f"{cls}/{json.dumps(steps)}")
        program = copy.deepcopy(steps)
        program[j]["cls"] = ["sub", ["class", rng.choice(USER_CLASS_NAMES), rng.choice(USER_MODULES), steps[j]["cls"]]]
        made.append((cls in seen, len(made), {"steps": program}))
        seen.add(cls)
    return [program for _, _, program in sorted(made, key=lambda m: m[:2])][:limit]


FILL_CONTAINERS = frozenset({"list", "tuple", "set", "frozenset", "dict", "OrderedDict", "Counter"})
# What the container protocols name that is no store: lookups and removals (`__getitem__` of a stored None, a `pop`
# or `discard` that found nothing also answer None)
NOT_STORES = frozenset(name for kind in (collections.abc.MutableMapping, collections.abc.MutableSet,
                                         collections.abc.MutableSequence) for name in dir(kind)) \
    - {"__setitem__", "update", "setdefault", "add", "append", "extend", "insert", "__iadd__", "__ior__"}


def _stores(p: dict, j: int) -> dict[str, list]:
    """{method: [its recorded arguments, ...]} of the calls a program made on the object step `j` made that stored
    data: handed only plain data by position, answered None (`__setitem__`, `add`, `append`, `update`)."""
    expect, found = p.get("expect") or [], {}
    for k, step in enumerate(p["steps"][j + 1:], j + 1):
        args = step.get("args") or []
        if step["op"] == "method" and step.get("obj") == ["slot", j, []] and step["name"] not in NOT_STORES \
                and 1 <= len(args) <= 2 \
                and not step.get("kwargs") and _plain_items(args) and k < len(expect) \
                and expect[k][:2] == ["ok", ["NoneType", None]]:
            found.setdefault(step["name"], []).append(args)
    return found


def _store_rank(args: list) -> int:
    """How surely a call answering None stores what it was handed: (key, value) 0, a container 1 (`update`), one
    item 2 (`add`, but also a lookup or a deletion that found nothing)."""
    return 0 if len(args) == 2 else 1 if args[0][0] in FILL_CONTAINERS else 2


def _made_for_more(step: dict, size: int | None) -> dict:
    """A `new` step for an object filled with new items: each callback it was handed that takes arguments answers
    those it has never seen (fd_calls' `_Table`) with the largest number it answered (a cache's `ttu`: the latest
    expiry, so that the items are kept; a `getsizeof`), or else its commonest answer; and with `size`, each number
    that a size can be (0 up to `size`: a cache's `maxsize`) raised by `size`, so that the object holds `size` more
    items."""
    def up(enc):
        if isinstance(enc, list) and enc[:1] == ["int"] and size is not None and 0 <= enc[1] < size:
            return ["int", enc[1] + size]
        if isinstance(enc, list) and enc[:1] == ["callback"] and isinstance(enc[1], dict) and enc[1].get("calls") \
                and all(key != [[], []] for key, _ in enc[1]["calls"]):
            answers = [answer for _, answer in enc[1]["calls"]]
            if all(isinstance(a, list) and a[:1] in (["int"], ["float"]) for a in answers):
                otherwise = max(answers, key=lambda a: float(a[1]))  # an expiry: the latest; a size: the largest
            else:
                otherwise = json.loads(Counter(json.dumps(a) for a in answers).most_common(1)[0][0])
            return ["callback", {**enc[1], "otherwise": otherwise}]
        return enc
    return {**copy.deepcopy(step), "args": [up(a) for a in step.get("args", [])],
            "kwargs": [[k, up(v)] for k, v in step.get("kwargs", [])]}


def filled(programs: list[dict], targets: list[list[str]], limit: int = FILLS) -> list[dict]:
    """Recorded programs whose object of a class with deleted code (or on which a deleted method of its base class is
    called) is filled, right after it is made, to a size no recorded step makes (one drawn from each of `SIZE_PARTS`),
    before the program's own steps run on it: a call on it that stored data (`_stores`) made again with new data like
    that it was handed (`fd_calls._natural`), one item or (key, value) at a time as a user's loop makes it (the driver's
    `fill`), or once with its container grown; the object made with the numbers a size can be raised by the size, so
    that it holds them all, by half of it (a large cache full and evicting at every store), and as recorded (a small one
    evicting). Caches exist to hold thousands of entries, and a program's own steps store a few dozen; `sizes` grows
    arguments, not the object a method runs on: a deleted method that refused a cache of more than 1,000 entries was
    paid on 11 of 13 cachetools tasks (red team 23, S23). Each class and store once first, the programs with the most
    calls of deleted definitions after it first. Marked `quick`."""
    options = []
    for p in programs:
        steps = p["steps"]
        if any(step["op"] == "fill" for step in steps):
            continue
        for j, step in enumerate(steps):
            ref = _class_made(step)
            if ref is None:
                continue
            on_it = [t for t in steps[j + 1:] if t.get("obj") == ["slot", j, []] and _deleted(t, targets)]
            if not on_it and not _has_deleted_code(ref, targets):
                continue  # neither of a class with deleted code nor a deleted method (a base class's) called on it
            reaching = sum(_deleted(t, targets) for t in steps[j + 1:])
            options += [(_store_rank(calls[0]), -min(reaching, 3), len(steps), len(options), steps, j, name, calls)
                        for name, calls in _stores(p, j).items()]
    made = []
    ranked = [(*o[4:], o[0]) for o in sorted(options, key=lambda o: o[:4])]  # (steps, step, store, calls, rank)
    for steps, j, name, calls, rank in _each_once_first(ranked):
        rng = _draw(f"{json.dumps(steps[j])}/{name}/{json.dumps(calls)}")
        drawn = [log_uniform(low, high, rng.random) for low, high in SIZE_PARTS]
        seeds = [rng.randrange(1 << 31) * 2 + (k > 0) for k in range(len(drawn))]  # even first: the commonest shapes
        calls = [a for a in calls if len(a) == len(calls[0])]
        if rank == 0:  # (key, value): a mapping of new keys, stored one by one
            data = ["dict", calls]
        elif rank == 1:  # a container: handed once, grown
            data = calls[0][0]
        else:  # an item: a column of new ones, stored one by one
            data = ["list", [a[0] for a in calls]]
        once = rank == 1
        # each size held, a cache of the first size full and evicting at every store, and one as recorded
        for size, seed, room in [(drawn[0], seeds[0], drawn[0]), (drawn[1], seeds[1], drawn[1]),
                                 (2 * drawn[0], seeds[1], drawn[0]), (drawn[0], seeds[1], None)]:
            fill = {"op": "method" if once else "fill", "obj": ["slot", j, []], "name": name,
                    "args": [["grown", ["natural", data, size, seed]]], "kwargs": []}
            if not once:
                fill["pairs"] = len(calls[0]) == 2
            new = _made_for_more(steps[j], room)
            later = [_shift(t, j) for t in copy.deepcopy(steps[j + 1:])]
            made.append({"steps": copy.deepcopy(steps[:j]) + [new, fill] + later, "quick": True})
        if len(made) >= limit:
            break
    return made[:limit]


def _holds_container(enc, depth: int = 0) -> bool:
    """Whether an encoded value is or holds (3 levels down, as the driver's `spoil` looks) a mutable container."""
    if not isinstance(enc, list) or len(enc) != 2 or depth > 3:
        return False
    tag, v = enc
    if tag in MUTABLE:
        return True
    return tag == "tuple" and isinstance(v, list) and any(_holds_container(i, depth + 1) for i in v)


def _emptied(arg):
    """An encoded argument's empty value of its type (a stream's too), or None for one that has none."""
    if not isinstance(arg, list) or len(arg) != 2:
        return None
    if arg[0] in ("list", "tuple", "set", "frozenset", "dict", "OrderedDict", "Counter"):
        return [arg[0], []] if arg[1] else None
    if arg[0] == "str":
        return ["str", ""] if arg[1] else None
    if arg[0] == "stream" and isinstance(arg[1], dict):
        return ["stream", {"items": [], "end": True}] if arg[1].get("items") else None
    return None


def aliases(programs: list[dict], targets: list[list[str]], limit: int = ALIASES) -> list[dict]:
    """Programs that add an item to each container a call of a deleted definition answered (the driver's `spoil`,
    as a caller that keeps the answer and adds to it does), then make the call again. A fresh answer is unchanged;
    one the code keeps and hands out again (a module-level `{}` for every empty input, equal to gold's at every step:
    red team 14, M14) answers with the caller's item, and the state drift check sees the package's name change.
    Where a shared answer hides, first: steps that answered an empty container, then each call with its sized
    arguments empty, then the other answers that hold a container (known from a program's `expect`), then those not
    yet answered; each callee once first. A program whose `spoil` found nothing is no check (`_candidates` drops
    it)."""
    options = []
    for p in programs:
        steps, expect = p["steps"], p.get("expect") or []
        for j, step in enumerate(steps):
            if step["op"] not in ("call", "method", "callh") or not _deleted(step, targets):
                continue
            known = j < len(expect) and isinstance(expect[j], list) and expect[j][:1] == ["ok"]
            if known and _holds_container(expect[j][1]):
                options.append((0 if expect[j][1][1] == [] else 2, len(options), steps, j, None, step))
            elif j >= len(expect):
                options.append((3, len(options), steps, j, None, step))
            else:
                continue  # what it answered holds no container
            empty = copy.deepcopy(step)
            for key, arg in _arguments(step):
                value = _emptied(arg)
                if value is not None:
                    _hand(empty, key, value)
            if empty != step:
                options.append((1, len(options), steps, j, "empty", empty))
    made, seen = [], set()
    for steps, j, _, step in _each_once_first([o[2:] for o in sorted(options, key=lambda o: o[:2])]):
        program = copy.deepcopy(steps[:j]) + [copy.deepcopy(step), {"op": "spoil", "obj": ["slot", j, []]},
                                               copy.deepcopy(step)]
        key = json.dumps(program, sort_keys=True)
        if key not in seen:
            seen.add(key)
            made.append({"steps": program})
        if len(made) >= limit:
            break
    return made


def reentries(programs: list[dict], targets: list[list[str]], limit: int = REENTRIES) -> list[dict]:
    """Programs in which a callback handed to a deleted definition, at its first call, calls a deleted definition
    itself (the driver's `reenter`) before it answers from its table: the same function where a program calls it on
    data alone, those handed the most arguments first (a nested grouping with its `reducefunc`), then the others in
    turn. A callback's table never calls the package, so no other check holds a call made while another runs: code
    that keeps a marker of its own running (restored on every exit, so the state drift check sees nothing) and
    answers a nested call otherwise was paid (red team 14, R14: `map_reduce` leaving a nested grouping unreduced).
    Each callee once first; a program in which no callback was called is no check (`_candidates` drops it)."""
    inner = {}  # callee: the steps that call it on data and callbacks alone, those handed the most arguments first
    for p in programs:
        for step in p["steps"]:
            if step["op"] == "call" and _deleted(step, targets) and not _slots(step) and not _slots(step, "given") \
                    and "reenter" not in json.dumps(step):
                inner.setdefault(_callee(step), []).append(step)
    for steps in inner.values():
        steps.sort(key=lambda t: (-len(_arguments(t)), -json.dumps(t).count('["callback", '), len(json.dumps(t))))
    if not inner:
        return []
    options = []
    for p in programs:
        steps = p["steps"]
        for j, step in enumerate(steps):
            if step["op"] not in ("call", "method", "callh") or not _deleted(step, targets):
                continue
            for key, arg in _arguments(step):
                if isinstance(arg, list) and len(arg) == 2 and arg[0] == "callback" and isinstance(arg[1], dict) \
                        and "reenter" not in arg[1]:
                    options.append((steps, j, key, arg))
    made, used = [], Counter()
    callees = sorted(inner)
    for n, (steps, j, key, arg) in enumerate(_each_once_first(options)[:limit]):
        callee = _callee(steps[j]) if _callee(steps[j]) in inner else callees[n % len(callees)]
        call = inner[callee][used[callee] % len(inner[callee])]
        used[callee] += 1
        program = copy.deepcopy(steps[: j + 1 + VARIANT_TAIL])
        _hand(program[j], key, ["callback", {**arg[1], "reenter": copy.deepcopy(call)}])
        made.append({"steps": program})
    return made


def _other_forms(programs: list[dict], row: TaskRow) -> list[dict]:
    """The programs that hand a deleted definition's recorded inputs otherwise (`forms`, `types`) or use its answers
    as callers also do (`aliases`, `reentries`): checks, but no held-out ones (kind "form")."""
    targets = targets_of(row)
    return forms(programs, targets=targets) + types(programs, targets) + aliases(programs, targets) \
        + reentries(programs, targets) + sizes(programs, targets) + subclasses(programs, targets) \
        + subclassed_objects(programs, targets) + filled(programs, targets) + scripts(programs, targets) \
        + numbers(programs, targets) + nested(programs, targets) + gaps(programs, targets) \
        + callables(programs, targets) + objects(programs, targets) + iterables(programs, targets) \
        + raising(programs, targets)


def _asks_nothing(program: dict, expect: list) -> bool:
    """Whether a program made to change an answer (`aliases`) or call back in (`reentries`) did neither on gold: a
    `spoil` step that found no container, or callbacks to reenter that were never called."""
    if any(step["op"] == "spoil" and k < len(expect) and expect[k][:2] == ["ok", ["int", 0]]
           for k, step in enumerate(program["steps"])):
        return True
    return '"reenter": ' in json.dumps(program["steps"]) and not any(
        isinstance(e, list) and any(isinstance(x, list) and x[:1] == ["reentered"] for x in e[2:]) for e in expect)


def _an_iterator(observation) -> bool:
    return isinstance(observation, list) and observation[:1] == ["ok"] and isinstance(observation[1], list) \
        and observation[1][:1] == ["handle"] and observation[1][2:3] == ["iterator"]


def forms(programs: list[dict], limit: int = FORMS, targets: list[list[str]] = ()) -> list[dict]:
    """Programs that hand a step one of its recorded inputs in another everyday form (`_forms_of`) or more positional
    arguments (`_more_args`), cut `VARIANT_TAIL` steps after it. The tests hand each parameter a few forms, and code
    wrong on every other was paid in full: toolz `partition`, `countby` and `merge_sorted` wrong for iterators (red
    team 12, S12); inflection `ordinal` wrong for every int (its tests pass numbers as text), `pluralize` for any word
    with a non-ASCII letter, more-itertools `strip` for tuples, `transpose` past 3 rows (red team 13, X13). Where an
    answer is a visible one (a stream of a recorded list), a form is a check but no held-out one, so all of them are
    kind "form". Each call, argument and form once first, the calls of the deleted `targets` first and, of each, a
    step whose answer the program reads; an iterator no step reads (known from a program's `expect`) is read
    `FORM_READS` items: its items are the answer (red team 13, X13t: `distinct_permutations` checked only for
    answering an iterator). Never a list a later step changes (`grown`'s `given`)."""
    pool = _pool(programs)
    options = []
    for p in programs:
        steps, expect = p["steps"], p.get("expect") or []
        for j, step in enumerate(steps):
            if j in _slots(steps[j + 1:], "given"):
                continue
            read = j in _slots(steps[j + 1: j + 1 + VARIANT_TAIL])
            unread = not read and j < len(expect) and _an_iterator(expect[j])
            rank = (not _deleted(step, list(targets)), not read)
            found = [((key, form), value) for key, arg in _arguments(step) if isinstance(arg, list) and len(arg) == 2 for form, value in _forms_of(arg)]
            more = _more_args(step, pool)
            found += [(("*", "more"), more)] if more is not None else []
            options += [(rank, len(options) + i, steps, j, key, value, unread) for i, (key, value) in enumerate(found)]
    made = []
    ranked = [o[2:] for o in sorted(options, key=lambda o: o[:2])]
    for steps, j, (key, form), value, unread in _each_once_first(ranked)[:limit]:
        program = copy.deepcopy(steps[: j + 1 + VARIANT_TAIL])
        if key == "*":
            program[j]["args"] = value
        else:
            _hand(program[j], key, value)
        reads = [t for t in program[j + 1:] if t["op"] == "next" and t.get("obj") == ["slot", j, []]]
        if form == "size" and reads and reads[-1] is program[-1]:
            # what a larger input adds comes last (`powerset`'s full set): read on, as the program read
            program += [dict(reads[0]) for _ in range(FORM_NEXT - len(reads))]
        elif unread:
            program += _reads(j, FORM_READS)
        made.append({"steps": program})
    return made


def edges(programs: list[dict], limit: int = GROWN) -> list[tuple[dict, int, int]]:
    """Held-out programs that hand a step, in place of one of its numbers (or numbers written as text), a bool
    (`True`, an int to Python) or the number moved past 10**12 (same last digits, written as it was): input classes
    recorded programs rarely hold, where a wrong answer can be planted that no other check asks (red team 8, E8:
    `ordinal` answering "th" for `True` and past 10**12). Each call and argument once first, the program cut after
    the step."""
    options = []
    for p in programs:
        for j, step in enumerate(p["steps"]):
            for i, arg in enumerate(step.get("args", [])):
                if isinstance(arg, list) and (arg[0] in ("int", "bigint") or arg[0] == "str"
                                              and re.fullmatch(r"-?[0-9]{1,18}", arg[1]) is not None):
                    options.append((p["steps"], j, i, arg))
    made: list[tuple[dict, int, int]] = []
    for steps, j, i, arg in _each_once_first(options):
        n = int(arg[1])
        far = n + 10 ** 12 if n >= 0 else n - 10 ** 12
        moved = ["str", str(far)] if arg[0] == "str" else ["int", far] if abs(far) < 1 << 53 else ["bigint", str(far)]
        for value in (["bool", True], moved):
            program = {"steps": copy.deepcopy(steps[: j + 1])}
            program["steps"][j]["args"][i] = value
            made.append((program, -1, j))
        if len(made) >= limit:
            break
    return made


def _each_once_first(options: list[tuple]) -> list[tuple]:
    """`options` ((steps, step, key, value)), the first of each call and argument (`_callee`, key) before the others,
    each part in its order: a budget of held-out programs spreads over the calls before it repeats one."""
    seen: set[tuple[str, object]] = set()
    firsts, again = [], []
    for option in options:
        kind = (_callee(option[0][option[1]]), option[2])
        (again if kind in seen else firsts).append(option)
        seen.add(kind)
    return firsts + again


def hashes(programs: list[dict], limit: int = ROUND_TRIPS) -> list[tuple[dict, int, int]]:
    """Held-out programs that ask `hash` of what a step answered, where the deleted code defines hashing: a hash
    that no longer agrees with equality (a key equal to a plain tuple hashed otherwise, red team 7, H7) passes every
    test that compares keys among themselves."""
    made: list[tuple[dict, int, int]] = []
    for p in programs:
        for j, step in enumerate(p["steps"]):
            if step["op"] in ("call", "new", "method", "callh") and len(made) < limit:
                ask = {"op": "call", "fn": ["ref", "builtins", "hash"], "args": [["slot", j, []]], "kwargs": []}
                made.append(({"steps": copy.deepcopy(p["steps"][: j + 1]) + [ask]}, -1, j + 1))
    return made


def _slots(value, tag: str = "slot") -> set[int]:
    """The steps an encoded step (or value) refers to by `[tag, step, path]`: its results (`slot`) or the arguments
    they were handed (`given`)."""
    if not isinstance(value, (list, dict)):
        return set()
    items = value.values() if isinstance(value, dict) else value
    found = {value[1]} if isinstance(value, list) and len(value) == 3 and value[0] == tag \
        and isinstance(value[1], int) else set()
    return found.union(*(_slots(v, tag) for v in items))


def round_trips(programs: list[dict], limit: int = ROUND_TRIPS) -> list[tuple[dict, int, int]]:
    """Held-out programs (as `variants` makes them) that copy an object a recorded program made (`copy.deepcopy`,
    which runs what pickling runs: `__reduce_ex__`, `__reduce__`, `__getstate__`, `__setstate__`) and then ask the
    copy what the program asked the original (its later steps on it, up to `VARIANT_TAIL`) and the probes of its
    class: an implementation without its pickling methods, or whose copy lost state, answers unlike gold."""
    probes = _probes(programs)
    made: list[tuple[dict, int, int]] = []
    for pi, p in enumerate(programs):
        steps = p["steps"]
        objects = [j for j, s in enumerate(steps) if s["op"] == "new" or any(
            t.get("obj", [None, None])[:2] == ["slot", j] for t in steps[j + 1:])]
        for j in dict.fromkeys(objects):
            prefix = copy.deepcopy(steps[: j + 1 + VARIANT_TAIL])
            site = len(prefix)
            later = [{**copy.deepcopy(t), "obj": ["slot", site, t["obj"][2]]} for t in steps[j + 1:]
                     if t.get("obj", [None, None])[:2] == ["slot", j] and _slots({**t, "obj": None}) <= set(range(site))]
            cls = json.dumps(steps[j]["cls"]) if steps[j]["op"] == "new" else None
            asked = [{"op": "getattr", "obj": ["slot", site, []], "name": name} if op == "getattr" else
                     {"op": "method", "obj": ["slot", site, []], "name": name, "args": [], "kwargs": []}
                     for op, name in probes.get(cls, [])[:PROBES]]
            program = {"steps": prefix + [{"op": "call", "fn": ["ref", "copy", "deepcopy"],
                                           "args": [["slot", j, []]], "kwargs": []}] + later[:VARIANT_TAIL] + asked}
            made.append((program, pi, site))
    return made[:limit]


def _reshape(step: dict, rng: random.Random) -> bool:
    """Leave arguments of `step` out (in place): one keyword (its default answers), the last positional one, or all
    positional ones but the first (`juxt(f, g)` -> `juxt(f)`). False when the step has none to leave out."""
    options = [("kwarg", i) for i in range(len(step.get("kwargs", [])))]
    if step.get("args"):
        options.append(("last", 0))
    if len(step.get("args", [])) > 2:
        options.append(("first", 0))
    if not options:
        return False
    what, i = rng.choice(options)
    if what == "kwarg":
        del step["kwargs"][i]
    elif what == "last":
        step["args"].pop()
    else:
        del step["args"][1:]
    return True


def _probes(programs: list[dict]) -> dict[str, list[tuple[str, str]]]:
    """{class (JSON of a `new` step's `cls`): [(op, name)]}: the calls without arguments (methods, attributes) the
    recorded programs make on objects that a `new` step of that class made, in the order first seen."""
    out: dict[str, list[tuple[str, str]]] = {}
    for p in programs:
        made = {j: json.dumps(s["cls"]) for j, s in enumerate(p["steps"]) if s["op"] == "new"}
        for s in p["steps"]:
            obj = s.get("obj")
            if s["op"] not in ("method", "getattr") or not isinstance(obj, list) or len(obj) != 3 or obj[2] \
                    or obj[1] not in made or s.get("args") or s.get("kwargs"):
                continue
            probe = (s["op"], s["name"])
            if probe not in out.setdefault(made[obj[1]], []):
                out[made[obj[1]]].append(probe)
    return out


def _settled(first: list | None, second: list | None) -> int:
    """Steps both gold runs (two processes, `random` seeded 0 in each, as the grader seeds it) agree on, up to the
    first that went past what was recorded or timed out. A step whose answer follows the draws of `random` is kept:
    the grader replays the same draws, so a rebuild must draw as gold does and use what it drew (red team 3, R: steps
    two seeds agreed on were those where the draw does not matter, and a FIFO `RRCache.popitem` answered them all);
    one whose answer follows the process (hash order, clocks) is not."""
    if first is None or second is None:
        return 0
    n = 0
    for a, b in zip(first, second):
        if a != b or a[0] in ("artifact", "timeout"):
            break
        n += 1
    return n


def _question(step: dict) -> str | None:
    """What a call of a function with plain-data arguments asks, whose answer a table of them could give; None for
    a step whose answer depends on the state an earlier step left (a method, an iterator, a callback's answers)."""
    values = json.dumps([step.get("args", []), step.get("kwargs", [])])
    if step["op"] != "call" or any(f'["{tag}", ' in values for tag in ("slot", "stream", "callback")):
        return None
    return json.dumps([step["fn"], step.get("args", []), step.get("kwargs", [])], sort_keys=True)


def gold_lines(row: TaskRow) -> dict[str, list[list[int]]]:
    """The lines of the gold code that the agent has to write: the guard watches them at build time as it
    watches the agent's at grading, so that a task whose gold code trips the guard is not kept."""
    from feature_deletion.scope import agent_lines

    return agent_lines(row, {k: v.encode() for k, v in row.gold_files.items()})


@dataclass
class Candidate:
    """A program the checks may keep: its steps up to the last both gold runs agree on, with gold's answers."""

    kind: str  # "visible" (recorded), "heldout" (a variant) or "form" (a recorded input in another form, `forms`)
    steps: list[dict]
    expect: list[list]
    discriminating: list[bool]
    heldout: list[bool]
    last: int  # the last step that makes it a check (held-out for a variant, discriminating otherwise); -1: none

    def check(self, cut: int) -> CheckProgram:
        return CheckProgram(steps=self.steps[: cut + 1], expect=self.expect[: cut + 1],
                            discriminating=self.discriminating[: cut + 1], heldout=self.heldout[: cut + 1])


def _candidates(row: TaskRow, runner: Path | None, limits: Limits, gold_root: Path, broken_root: Path,
                lines: dict[str, list[list[int]]], recorded: list[dict],
                made: list[tuple[dict, int, int]], other_forms: list[dict] = ()) -> list[Candidate] | str:
    """The programs (recorded, then `made`, then `other_forms`) replayed twice on gold and once on the untouched code,
    as candidates; or why none can be."""
    programs = recorded + [v for v, _, _ in made] + list(other_forms)
    first = run_programs(gold_root, row, runner, limits, programs, lines)
    if first.returncode == GUARD_EXIT:
        return "gold_trips_guard"
    broken = run_programs(broken_root, row, runner, limits, programs, {})
    if all(o is None for o in first.observations):
        return "gold_replay_failed"
    # Another process: a step whose answer depends on it is no check.
    again = run_programs(gold_root, row, runner, limits, programs, lines)
    out: list[Candidate] = []
    expect_of: dict[int, list] = {}
    # A changed step that happens to ask what some recorded step asks is no held-out check: the answer is visible.
    asked = {_question(step) for p in recorded for step in p["steps"]} - {None}
    for index, program in enumerate(programs):
        g, b = first.observations[index], broken.observations[index]
        n = _settled(g, again.observations[index])
        if n == 0 or program.get("quick") and not _quick(index, first, again):
            continue
        expect = g[:n]
        if _asks_nothing(program, expect):
            continue
        disc = [b is None or j >= len(b) or b[j] != expect[j] for j in range(n)]
        if index < len(recorded):
            expect_of[index] = expect
            heldout = [False] * n
            kind = "visible"
        elif index >= len(recorded) + len(made):
            heldout = [False] * n
            kind = "form"
        else:
            _, parent, site = made[index - len(recorded)]
            base = expect_of.get(parent, [])
            # The answer, not the echo of the changed arguments, must differ from the visible one.
            heldout = [j >= site and disc[j] and (j >= len(base) or answer_of(expect[j]) != answer_of(base[j]))
                       and _question(program["steps"][j]) not in asked for j in range(n)]
            kind = "heldout"
        last = max((j for j in range(n) if (heldout[j] if kind == "heldout" else disc[j])), default=-1)
        out.append(Candidate(kind, program["steps"][:n], expect, disc, heldout, last))
    return out


def _quick(index: int, *runs: Replay) -> bool:
    """Whether gold answered every step of program `index` within `QUICK_S` in the faster of `runs`: a step timed in
    one run that other work on the machine slowed must not decide what a build keeps (two builds of one seed kept and
    dropped a 25,292-item `push` as the machine's load went: the builds must be the same to the byte)."""
    return min(max(run.spent.get(index) or [QUICK_S + 1]) for run in runs) <= QUICK_S


# Why checks built from the deleted definitions' own calls may fail where calls of the package's public functions,
# which reach the deleted code, make enough checks.
RETRY_WITH_CALLERS = frozenset({"no_programs", "no_discriminating_checks", "too_few_heldout_checks",
                                "heldout_one_answer", "heldout_forgeable"})


def build_checks(row: TaskRow, tasks_dir: Path, runner: Path | None, limits: Limits,
                 mutants: bool = True) -> tuple[Checks | None, str]:
    """The task's checks, or None and why the task cannot be graded soundly. With `mutants`, the kept programs are
    chosen to tell gold's mutants from gold (feature_deletion.mutation), and a task whose checks pay too many of
    them leaves the set (`mutants_survive`). Where the tests' uses of the deleted definitions and the package's
    classes make no sound checks (`RETRY_WITH_CALLERS`), their calls of the package's public functions are
    recorded too and the checks built again: code the tests reach only through those (a helper `re.sub` hands a
    match to) is then checked through them."""
    checks, why = _build_checks(row, tasks_dir, runner, limits, mutants, callers=False)
    if checks is None and why in RETRY_WITH_CALLERS:
        again, status = _build_checks(row, tasks_dir, runner, limits, mutants, callers=True)
        if again is not None:
            return again, status + "; with the package's public functions"
    return checks, why


def _build_checks(row: TaskRow, tasks_dir: Path, runner: Path | None, limits: Limits, mutants: bool,
                  callers: bool) -> tuple[Checks | None, str]:
    from feature_deletion import mutation

    recorded = record_programs(row, tasks_dir, runner, limits, callers=callers)
    if not recorded:
        return None, "no_programs"
    # The held-out test files' programs are held-out programs as they are (no parent: every step counts as held-out
    # where the untouched code answers unlike gold and no recorded program asks its question).
    made = variants(recorded, row.id) + [(p, -1, 0) for p in record_programs(row, tasks_dir, runner, limits, True,
                                                                             callers)]
    if defines(row, COPYING):
        made += round_trips(recorded)
    made += grown(recorded) + edges(recorded) + (hashes(recorded) if defines(row, HASHING) else [])
    other_forms = _other_forms(recorded, row)
    with temporary_directory("fd-checks.") as tmp:
        gold_root = source_copy(row, tasks_dir, Path(tmp) / "gold", state="gold")
        broken_root = source_copy(row, tasks_dir, Path(tmp) / "broken")
        lines = gold_lines(row)
        candidates = _candidates(row, runner, limits, gold_root, broken_root, lines, recorded, made, other_forms)
        if isinstance(candidates, str):
            return None, candidates
        adequacy = None
        if mutants:
            tried = {json.dumps(v["steps"], sort_keys=True) for v, _, _ in made}

            def hunt(round_: int) -> list[Candidate]:
                # More held-out programs, for mutants no candidate tells from gold: arguments changed to (or
                # around) the constants of the gold code, one constant at a time; and a second change in a
                # held-out program (its parent and first changed step stay those of the recorded program). Each
                # round draws new ones.
                more = []
                tag_of = f"/{round_}" if round_ else ""
                hunted = [m for tag, values in mutation.literals(row, _pool(recorded).get("str", []))
                          for m in variants(recorded, f"{row.id}/hunt{tag_of}/{tag}/{values[0]!r}", {tag: values},
                                            HUNT_VARIANTS)]
                hunted += [(v, made[i][1], min(si, made[i][2]))
                           for v, i, si in variants([v for v, _, _ in made], f"{row.id}/hunt2{tag_of}",
                                                    limit=MAX_VARIANTS)]
                for m in hunted:
                    key = json.dumps(m[0]["steps"], sort_keys=True)
                    if key not in tried:
                        tried.add(key)
                        more.append(m)
                found = _candidates(row, runner, limits, gold_root, broken_root, lines, recorded, more)
                return [] if isinstance(found, str) else [c for c in found if c.kind == "heldout"]

            adequacy = mutation.adequacy(row, runner, limits, gold_root, Path(tmp), candidates, hunt)
            candidates = adequacy.candidates
        picks = _choose(candidates, adequacy)
        answered = answer(row, runner, limits, gold_root, broken_root, lines,
                          [candidates[i].check(cut) for i, cut in picks])
        if isinstance(answered, str):
            return None, answered
        kept, checks = answered
        picks = [picks[k] for k in kept]
    return _judged(checks, adequacy, picks, candidates)


def _judged(checks: Checks, adequacy=None, picks=(), candidates=()) -> tuple[Checks | None, str]:
    """The checks with their status, or None and why they cannot grade soundly."""
    from feature_deletion import mutation

    chosen = checks.programs
    if not any(d for p in chosen for d in p.discriminating):
        return None, "no_discriminating_checks"
    why = unsound(checks)
    if why:
        return None, why
    status = (f"{len(chosen)} programs, {checks.steps} steps: {checks.discriminating} discriminating, "
              f"{checks.heldout} held-out")
    if adequacy is not None:
        killed = adequacy.killed_by(picks)
        before = adequacy.killed_by(_choose(candidates[: adequacy.first], None))
        status += f"; {adequacy.summary(killed)}; {len(before)} killed by the programs chosen without mutants"
        if adequacy.mutants and len(killed) < mutation.MIN_SCORE * len(adequacy.mutants):
            return None, "mutants_survive"
    return checks, status


def answer_again(row: TaskRow, tasks_dir: Path, runner: Path | None, limits: Limits) -> tuple[Checks | None, str]:
    """The task's kept programs answered again on gold (`answer`), nothing recorded or chosen anew, with the programs
    made from them that later builds make too (`grown`, `edges`, `hashes`, `forms`): for checks built before the
    driver observed what it observes now. A program whose answers change leaves; so does the task, where
    what is left cannot grade soundly."""
    assert row.checks is not None
    programs = list(row.checks.programs)
    with temporary_directory("fd-answer.") as tmp:
        gold_root = source_copy(row, tasks_dir, Path(tmp) / "gold", state="gold")
        broken_root = source_copy(row, tasks_dir, Path(tmp) / "broken")
        lines = gold_lines(row)
        # The programs later builds make that the kept ones may lack: grown lists, edges, hashes, other forms
        plain = [{"steps": p.steps, "expect": p.expect} for p in programs]
        have = {json.dumps(p.steps, sort_keys=True) for p in programs}
        extra = [m for m in grown(plain) + edges(plain) + (hashes(plain) if defines(row, HASHING) else [])
                 if json.dumps(m[0]["steps"], sort_keys=True) not in have]
        other_forms = [m for m in _other_forms(plain, row) if json.dumps(m["steps"], sort_keys=True) not in have]
        found = _candidates(row, runner, limits, gold_root, broken_root, lines, [], extra, other_forms) \
            if extra or other_forms else []
        programs += [c.check(c.last) for c in (found if isinstance(found, list) else []) if c.last >= 0]
        answered = answer(row, runner, limits, gold_root, broken_root, lines, programs)
    if isinstance(answered, str):
        return None, answered
    kept, every = answered
    # The kept programs, then each added one that leaves the checks sound: an added program's held-out answers may
    # tip the balance (ten far numbers that all take "th" in `ordinal`), and is then left out
    before = len(row.checks.programs)
    base = [p for k, p in zip(kept, every.programs) if k < before]
    added = [p for k, p in zip(kept, every.programs) if k >= before]
    checks, why = _judged(Checks(programs=base, state=every.state))
    if checks is None:  # the kept ones alone are unsound: all of them together, or none
        checks, why = _judged(every)
        added = []
    for p in added:
        more, status = _judged(Checks(programs=[*checks.programs, p], state=every.state))
        checks, why = (more, status) if more is not None else (checks, why)
    if checks is None:
        return None, why
    added_n, left = len(checks.programs) - len(base), before - len(base)
    earlier = [part for part in row.checks_status.split("; ")[1:] if not part.startswith("answered again")]
    mutants = "; ".join(earlier)
    return checks, why + f"; answered again ({added_n} programs added, {left} left out)" \
        + (f"; {mutants}" if mutants else "")


def answer(row: TaskRow, runner: Path | None, limits: Limits, gold_root: Path, broken_root: Path,
           lines: dict[str, list[list[int]]], programs: list[CheckProgram]) -> tuple[list[int], Checks] | str:
    """The chosen programs answered as the grader runs them (in this order, one process, `random` seeded 0), on gold in
    ANSWER_RUNS processes (each with its own hash seed; two of them configured as a grading's two replays may be,
    `draw_traits`, so that an answer gold gives under one configuration only is no check) and on the untouched code:
    (indices kept, the checks with gold's observations of every step, the discriminating marks of this run and the
    package's state), or why there are none. A program is kept where every process observes every step alike and its
    answers are those it was chosen for; one that answers otherwise depends on state another leaves behind (humanize's
    `activate` sets a locale for every later call) and is left out, until that settles. Where gold draws from `random`'s
    shared stream, a step says where the stream stands after it (`["rng", digest]`), so that a rebuild that does not
    draw there, or draws otherwise, is not gold (red team 4 R4: a FIFO `rr_cache`)."""
    kept = list(range(len(programs)))
    for _ in range(3):
        plain = [{"steps": programs[k].steps} for k in kept]
        runs = [run_programs(gold_root, row, runner, limits, plain, lines, traits=traits)
                for traits in (*draw_traits(), *[Traits()] * (ANSWER_RUNS - 2))]
        if any(r.returncode == GUARD_EXIT for r in runs):
            return "gold_trips_guard"
        same = []
        for i, k in enumerate(kept):
            first, want = runs[0].observations[i], programs[k].expect
            if first is not None and all(r.observations[i] == first for r in runs[1:]) and len(first) == len(want) \
                    and all(answer_of(a) == answer_of(b) for a, b in zip(first, want)):
                same.append(k)
        if same == kept:
            break
        kept = same
    else:
        return [], Checks(programs=[])
    broken = run_programs(broken_root, row, runner, limits, plain, {})
    answered = []
    for i, k in enumerate(kept):
        expect, b = runs[0].observations[i], broken.observations[i]
        disc = [b is None or j >= len(b) or b[j] != e for j, e in enumerate(expect)]
        answered.append(CheckProgram(steps=programs[k].steps, expect=expect, discriminating=disc,
                                     heldout=[h and d for h, d in zip(programs[k].heldout, disc)]))
    state = kept_state([r.state for r in runs]) if all(r.state for r in runs) else None
    if state is not None and builds_objects(row):
        state["objects"] = {name: v for name, v in state.get("objects", {}).items() if not name.endswith(f".{NAMES}")}
    return kept, Checks(programs=answered, state=state)


def builds_objects(row: TaskRow) -> bool:
    """Whether the rebuild makes its objects' representation itself (a class, or how its objects are made, copied or
    restored, among the deleted definitions): then an object's attribute names are its own, and only which readings
    of it are equal is compared (`fd_calls.own_names`, `own_state`). Elsewhere gold's class makes every object the
    rebuild works on, and the objects must hold gold's names at every reading."""
    return any(t.kind == "class" or t.qualname.rsplit(".", 1)[-1] in CONSTRUCTION for t in row.deletion.targets)


def kept_state(states: list[dict]) -> dict:
    """What the checks keep of gold's state as the driver read it in each of its processes: a name where every
    process read the same, and every name any process saw drift (what any gold process changed, a rebuild may)."""
    first, others = states[0], states[1:]
    state = {section: {name: kept for name, value in names.items()
                       if (kept := _agreed(name, value, [(o.get(section) or {}).get(name) for o in others])) is not None}
             for section, names in first.items() if isinstance(names, dict) and section != DRIFT}
    state[DRIFT] = {name: "changed" for s in states for name in (s.get(DRIFT) or {})}
    return state


def _agreed(name: str, first, others: list):
    """What the checks keep of one name of gold's state read in ANSWER_RUNS processes: its digest where every process
    read the same; for a program's readings of its objects (`STATES`), which readings are equal, where every process
    found the same (the digests themselves hold ids and string hashes of their process)."""
    if name.endswith(f".{STATES}"):
        kept = state_classes(first)
        return kept if kept and all(state_classes(o) == kept for o in others) else None
    return first if all(o == first for o in others) else None


def state_classes(readings: list) -> list[list]:
    """[reading, class] of the readings (`fd_calls.own_state`: [[label, digest], ...]) equal to another, a class
    numbered by where it first appears: what gold's object returns to, a rebuild's must (`states_kept`)."""
    first: dict[str, int] = {}
    classes = [[label, first.setdefault(digest, len(first))] for label, digest in readings]
    sizes = Counter(c for _, c in classes)
    return [[label, c] for label, c in classes if sizes[c] > 1]


def states_kept(classes: list, readings) -> bool:
    """Whether a replay's readings of its objects are equal wherever gold's are (`state_classes`): compared one way,
    a rebuild's object may return to a state where gold's does not. A reading missing or malformed fails."""
    try:
        got = {label: digest for label, digest in readings if isinstance(label, str) and isinstance(digest, str)}
    except (TypeError, ValueError):
        return False
    digests: dict[int, str] = {}
    return all(label in got and digests.setdefault(c, got[label]) == got[label] for label, c in classes)


def _choose(candidates: list[Candidate], adequacy) -> list[tuple[int, int]]:
    """(candidate, step it is cut after) of the programs kept: first those that kill the most mutants (greedy set
    cover, held-out first, each cut after the steps where it kills them), then held-out ones as
    `_held_out_selection` takes them and the shortest visible ones, within the MAX_KEPT budgets, and every "form"
    program. Forms are not cut to the smallest few: each family (`_other_forms`) hands its own kind of input, and a
    build that kept the 32 smallest of all families' programs kept one or two families and none of the others (the
    bundled rows hold every family, `answer_again` having added them: a fresh build must not be weaker)."""
    picked = adequacy.order if adequacy is not None else []
    cut = {i: max(candidates[i].last, *adequacy.kills[i].values()) for i in picked}
    checks = {i: c.check(cut.get(i, c.last)) for i, c in enumerate(candidates) if i in cut or c.last >= 0}
    budget, kept, chosen = [MAX_KEPT_STEPS, MAX_KEPT_BYTES], Counter(), []
    for i in picked:
        kind = candidates[i].kind
        if kind == "form" or (kept[kind] < MAX_KEPT[kind] and _fit([checks[i]], 1, budget)):
            chosen.append(i)
            kept[kind] += 1

    def rest(kind: str) -> list[int]:
        return sorted((i for i in checks if candidates[i].kind == kind and i not in cut),
                      key=lambda i: len(checks[i].model_dump_json()))

    for kind, select in (("heldout", _held_out_selection), ("visible", _fit)):
        order = rest(kind)
        taken = {id(p) for p in select([checks[i] for i in order], MAX_KEPT[kind] - kept[kind], budget)}
        chosen += [i for i in order if id(checks[i]) in taken]
    chosen += rest("form")
    return [(i, cut.get(i, candidates[i].last)) for i in chosen]


def _fit(programs: list[CheckProgram], limit: int, budget: list[int]) -> list[CheckProgram]:
    """Of the first `limit` programs, those that fit what is left of `budget` ([steps, bytes]), which they use up."""
    taken = []
    for p in programs[:limit]:
        n = len(p.model_dump_json())
        if len(p.steps) <= budget[0] and n <= budget[1]:
            taken.append(p)
            budget[0], budget[1] = budget[0] - len(p.steps), budget[1] - n
    return taken


def answer_of(observation: list) -> str:
    """What a forger decides about a step: its return value or raised exception (`["ok", value]`, `["raises",
    type]`), without what the driver echoes itself (arguments mutated in place, how far streams were read), which
    differs wherever the arguments do even when the answer is always the same (toolz `isiterable` on lists)."""
    return json.dumps(observation[:2])


def question_of(steps: list[dict], j: int) -> str:
    """The question step `j` asks: a call of a function with plain-data arguments is asked by its function and
    arguments alone (`_question`), any other step by every step up to it (the state it is asked in). Held-out steps
    are counted as questions, so that one input replayed in ten programs counts once."""
    return _question(steps[j]) or json.dumps(steps[: j + 1], sort_keys=True)


def held_out_questions(programs: list[CheckProgram]) -> dict[str, tuple[str, str]]:
    """{question: (callee, answer)} of the held-out steps of `programs`, each question once (the first asked)."""
    out: dict[str, tuple[str, str]] = {}
    for p in programs:
        for j, (step, want, held) in enumerate(zip(p.steps, p.expect, p.heldout)):
            if held:
                out.setdefault(question_of(p.steps, j), (_callee(step), answer_of(want)))
    return out


def _held_out_answers(program: CheckProgram) -> Counter:
    return Counter(answer for _, answer in held_out_questions([program]).values())


def _one_answer(programs: list[CheckProgram]) -> str | None:
    """The answer that covers more than half of the held-out questions of `programs`, if one does."""
    counts = Counter(answer for _, answer in held_out_questions(programs).values())
    answer, n = counts.most_common(1)[0] if counts else (None, 0)
    return answer if 2 * n > counts.total() else None


def _held_out_selection(programs: list[CheckProgram], limit: int = MAX_KEPT["heldout"],
                        budget: list[int] | None = None) -> list[CheckProgram]:
    """The held-out programs a task keeps (at most `limit`, within what is left of `budget`, [steps, bytes], which
    they use up): the smallest first. Where those leave one answer covering more than half of the held-out steps
    (numbers mostly take "th" in inflection's `ordinal`, iterators mostly end), they are taken in turns by their most
    common held-out answer instead, and the programs that answer mostly that one answer are then left out, last
    taken first, until none does: every check kept is still a check, and a forger that answers the common answer
    wherever the visible tests say nothing fails the held-out checks it leaves."""
    budget = budget if budget is not None else [MAX_KEPT_STEPS, MAX_KEPT_BYTES]
    by_size = sorted(programs, key=lambda p: len(p.model_dump_json()))
    chosen = _fit(by_size, limit, list(budget))
    if _one_answer(chosen) is not None:
        groups: dict[str, list[CheckProgram]] = {}
        for p in by_size:
            groups.setdefault(_held_out_answers(p).most_common(1)[0][0], []).append(p)
        turns = [p for taken in itertools.zip_longest(*groups.values()) for p in taken if p is not None]
        chosen = _fit(turns, limit, list(budget))
        while (mode := _one_answer(chosen)) is not None:
            # The program answering the most `mode` beyond its other held-out answers; the last taken among equals.
            excess = [(c[mode] - (c.total() - c[mode]), i) for i, p in enumerate(chosen)
                      for c in [_held_out_answers(p)]]
            del chosen[max(excess)[1]]
    budget[0] -= sum(len(p.steps) for p in chosen)
    budget[1] -= sum(len(p.model_dump_json()) for p in chosen)
    return chosen


def _callee(step: dict) -> str:
    """What a step calls, as far as a forger that writes one answer per function or method can tell."""
    return json.dumps([step["op"], step.get("fn") or step.get("cls") or step.get("name")])


def mode_forger(checks: Checks) -> Replay:
    """The observations of the strongest table forger the checks must stop: gold's answer on every step that is not
    held-out (more than any table of the visible answers knows) and, on every held-out step, the answer (return value
    or raised exception, `answer_of`) most common among the held-out questions of the same function or method, with
    gold's echo of the arguments (the driver writes that, not the forger)."""
    answers: dict[str, Counter] = {}
    for callee, answer in held_out_questions(checks.programs).values():
        answers.setdefault(callee, Counter())[answer] += 1
    mode = {k: json.loads(v.most_common(1)[0][0]) for k, v in answers.items()}

    def forged(step: dict, want: list) -> list:
        guess = mode[_callee(step)]
        return guess + want[2:] if guess[0] == want[0] == "ok" else guess

    return Replay([[forged(s, e) if h else e for s, e, h in zip(p.steps, p.expect, p.heldout)]
                   for p in checks.programs], 0, False, "", checks.state)


def unsound(checks: Checks) -> str | None:
    """Why `checks` cannot tell a forger from an implementation, or None, judged on the held-out *questions* (each
    input once, `question_of`) and their *answers* (return value or exception, `answer_of`): too few of them, or
    fewer than two answers (`too_few_heldout_checks`); one answer for more than half of them, so that answering it
    wherever the visible tests say nothing is nearly right (`heldout_one_answer`); or the mode forger
    (`mode_forger`), judged by the grader's own `compare`, passing them (`heldout_forgeable`)."""
    answers = [answer for _, answer in held_out_questions(checks.programs).values()]
    if len(answers) < MIN_HELDOUT or len(set(answers)) < 2:
        return "too_few_heldout_checks"
    if 2 * Counter(answers).most_common(1)[0][1] > len(answers):
        return "heldout_one_answer"
    if compare(checks, mode_forger(checks)).fraction > 0:
        return "heldout_forgeable"
    return None


# ------------------------------------------------------------------------------------------- grading

@dataclass
class Verdict:
    """How the agent's code answered the task's checks, as the grader compared them."""

    steps: int = 0
    matched: int = 0
    discriminating: int = 0
    discriminating_matched: int = 0
    heldout: int = 0
    heldout_matched: int = 0
    broke: int = 0  # steps the untouched code answered like gold and the submission does not
    missing: int = 0  # programs whose observations never came back
    guard: bool = False  # the audit hook ended the replay
    unhooked: str = ""  # the replay with no hook missed a check the hooked one matched: the first it missed
    deadline: bool = False  # a step ran past its deadline and the replay was ended (Replay.deadline)
    replays: list[str] = field(default_factory=list)  # how each replay's process was configured (`Traits.describe`)
    state: str = ""  # the first name of the package's state that differs from gold's (Checks.state)
    first_mismatch: str = ""

    @property
    def fraction(self) -> float:
        """What the checks let the reward pay: 1.0 when every discriminating and every held-out step matched gold,
        else 0. A gate, not a share: a table of the visible answers matches every visible step and, with the most
        common answer as its fallback, many held-out ones, so any share of them pays a forger (issue 28: 0.96 on
        inflection's `ordinal`); partial credit is left to the F2P fraction of a submission that passes the gate."""
        if self.broke or self.missing or self.guard or self.deadline or self.state or self.unhooked \
                or not self.discriminating or not self.heldout:
            return 0.0
        return float(self.discriminating_matched == self.discriminating and self.heldout_matched == self.heldout)

    def metrics(self) -> dict[str, float]:
        return {"checks": float(self.steps), "checks_matched": float(self.matched),
                "heldout_checks": float(self.heldout), "heldout_matched": float(self.heldout_matched)}

    def to_dict(self) -> dict:
        return asdict(self)


def program_key(steps: list[dict]) -> str:
    """The driver's name for a program in the state it reads (its steps' JSON, hashed: `fd_calls.main`)."""
    return hashlib.sha256(json.dumps(steps, sort_keys=True).encode()).hexdigest()[:16]


CHAINED = ("cause", "context")  # fd_calls._chained's: the second exception a traceback shows


def _unchained(obs: list) -> list:
    return [x for x in obs if not (isinstance(x, list) and len(x) == 2 and x[0] in CHAINED)]


def step_matches(got, want) -> bool:
    """A replayed step's observation against gold's: equal, but for the second exception a traceback shows
    (`fd_calls._chained`), which is compared one way: where gold's traceback shows none the rebuild's must show none
    (red team 18, E18c: gold's `from None` dropped), where gold's shows one (cachetools' `__missing__` raising while
    `__getitem__` handles the `KeyError`) a rebuild may raise outside any `except` and show none, or show another."""
    if got == want:
        return True
    if not (isinstance(want, list) and want[:1] == ["raises"] and isinstance(got, list) and got[:1] == ["raises"]):
        return False
    return _unchained(want) != want and _unchained(got) == _unchained(want)


def compare(checks: Checks, replay: Replay) -> Verdict:
    verdict = Verdict(guard=replay.returncode == GUARD_EXIT, deadline=replay.deadline)
    # gold's readings of its objects (`fd_calls.own_state`) of the programs these checks hold: the state was read with
    # every program answered, some of which may have been left out since
    programs = {program_key(p.steps) for p in checks.programs}

    def same(name: str, want, got: dict) -> bool:
        if name.endswith((f".{STATES}", f".{NAMES}")) and name.split(".", 1)[0] not in programs:
            return True
        if name.endswith(f".{STATES}"):
            return states_kept(want, got.get(name))
        # the standard library's names a run does not have are not compared: the driver loads every allowed standard
        # module, but gold may load a submodule of one (or a module may set a name lazily) where a rebuild need not
        return got.get(name) == want or name.startswith(STDLIB_STATE) and name not in got

    for section, names in (checks.state or {}).items():
        if section == DRIFT:
            continue
        got = (replay.state or {}).get(section)
        got = got if isinstance(got, dict) else {}
        differs = next((name for name, want in sorted(names.items()) if not same(name, want, got)), None)
        if differs is not None and not verdict.state:
            verdict.state = f"{section}: {differs}"
    if checks.state is not None:
        # State kept where gold keeps none: a name whose reachable state the replay changed and gold's never did
        drifted = (replay.state or {}).get(DRIFT)
        kept = next((name for name in sorted(drifted) if name not in (checks.state.get(DRIFT) or {})), None) \
            if isinstance(drifted, dict) else "(not read)"
        if kept is not None and not verdict.state:
            verdict.state = f"{DRIFT}: {kept}"
    for program, got in zip(checks.programs, replay.observations):
        if got is None:
            verdict.missing += 1
        for j, want in enumerate(program.expect):
            ok = got is not None and j < len(got) and step_matches(got[j], want)
            verdict.steps += 1
            verdict.matched += ok
            if program.discriminating[j]:
                verdict.discriminating += 1
                verdict.discriminating_matched += ok
            elif not ok:
                verdict.broke += 1
            if program.heldout[j]:
                verdict.heldout += 1
                verdict.heldout_matched += ok
            if not ok and not verdict.first_mismatch:
                step = program.steps[j]
                what = ".".join(step.get("fn", [])[1:]) or step.get("name") or step["op"]
                verdict.first_mismatch = f"{what}: {json.dumps(step.get('args', []))[:160]}"
    return verdict


def check_behaviour(row: TaskRow, tasks_dir: Path, runner: Path | None, limits: Limits, isolation: str,
                    changes: dict[str, bytes | None], lines: dict[str, list[list[int]]]) -> Verdict:
    """Replay the task's checks on a fresh source-only copy with `changes`, compared here: under the grader's audit
    hook and, where the sandbox isolates the code (`isolation` "namespace"), a second time with no hook, as a user's
    process runs it. Every process that runs agent code under the hook can tell it from a user's: CPython calls a
    hook on every audited event, so an audited builtin (`id`) costs several times an unaudited one (red team 13,
    H13, timed with a clock the package reads), and a hook written in Python took a frame below the recursion limit
    (R13); code gold only where it finds a hook passes the tests and the hooked replay. The replay with no hook is
    where such code is itself; the hook's refusals are not needed there, since the namespace sandbox holds nothing
    but the package's sources and the programs' steps (never their answers), and nothing it writes but the
    observations is read. Under `isolation` "none" (an explicit opt-out) the code would run unguarded on the
    host: only the hooked replay runs.

    The two replays' processes differ in every trait of a user's process that `sandbox.Traits` draws (the hash seed
    0, optimization, no digit limit, no `site`, a raised recursion limit, the clocks of a machine up for seconds or for
    years), so that code broken under one side of a trait is replayed there; gold's answers hold under both
    (`answer`)."""
    assert row.checks is not None
    programs = [p.model_dump() for p in row.checks.programs]
    hooked_traits, plain_traits = draw_traits()
    if isolation != "namespace":
        hooked_traits = replace(hooked_traits, uptime_s=None)  # no time namespace without the others
    with temporary_directory("fd-verdict.") as tmp:
        root = source_copy(row, tasks_dir, Path(tmp) / "src", changes)
        with ThreadPoolExecutor(2) as pool:
            plain = pool.submit(run_programs, root, row, runner, limits, programs, {}, isolation, hooked=False,
                                traits=plain_traits) if isolation == "namespace" else None
            verdict = compare(row.checks, run_programs(root, row, runner, limits, programs, lines, isolation,
                                                       traits=hooked_traits))
            unhooked = compare(row.checks, plain.result()) if plain is not None else verdict
    verdict.replays = [f"hooked: {hooked_traits.describe()}"] + (
        [f"no hook: {plain_traits.describe()}"] if plain is not None else [])
    if verdict.fraction > 0 and unhooked.fraction == 0:
        verdict.unhooked = unhooked.first_mismatch or unhooked.state or next(
            (why for why, bad in (("a program gave no result", unhooked.missing),
                                  ("a step ran past its deadline", unhooked.deadline)) if bad), "it ended otherwise")
    return verdict
