"""Red team 19 (FINDINGS_19.md): rebuilds that are gold under every configuration the grader draws
(`sandbox.draw_traits`: hash seed 0 or drawn from 1 .. 2**32 - 1, `-O` or not, 60 s .. 3 years of uptime; the
replay's recursion room drawn from `fd_calls.ROOM`) and the stub's `NotImplementedError` under a configuration real
users run that no grading process ever has. Each is red team 13's shape (`attacks13.guarded_gold`: a helper call
first in every deleted function), with no state, no module name, no clock unless noted.

- I19: integer/string conversion limit lifted (`PYTHONINTMAXSTRDIGITS=0`, `-X int_max_str_digits=0`, or
  `sys.set_int_max_str_digits(0)` as SymPy/Sage/number-crunching scripts do).
- X19: Python's development mode (`-X dev`, `PYTHONDEVMODE=1`): it checks codecs' `errors` names eagerly.
- B19: `-bb` (bytes/str comparison errors, run by many projects' CI).
- R19: a raised recursion limit (`sys.setrecursionlimit(10_000)`, common in scripts and notebooks).
- K19: a fixed hash seed other than 0 (`PYTHONHASHSEED=42`, `=1`, `=1234`, ...: the fix of S18 made 0 a drawn value,
  every other fixed seed is still drawn with probability ~2**-32).
- N19: uptime under a minute (a service started at boot, a fresh microVM/serverless cold start): below the drawn
  range's 60 s; only where the original reads `time.monotonic`.
- D19: docstrings stripped (`-OO`, `PYTHONOPTIMIZE=2`): the draw optimises at level 1 only.
- W19: deprecation warnings made errors (`-W error`, `PYTHONWARNINGS=error`, a downstream project's pytest
  `filterwarnings = ["error"]`): a warning the default filters ignore in a library, so no replay shows one.
- F19: a numeric locale set by the application (`locale.setlocale(locale.LC_ALL, "")` under `LANG=en_US.UTF-8`):
  `format(1234, 'n')` groups digits; every grading process has LC_NUMERIC "C".
- S19: no `site` (`python -S`, PyInstaller-frozen apps, embedded interpreters): `license` is not a builtin.
- C19: two drawn traits together (`PYTHONHASHSEED=0` and `-O`): the draw puts them in one process half the time.
"""

from __future__ import annotations

STUB_ERROR = 'raise NotImplementedError("this feature was deleted; rebuild it")'

HIDDEN_DIGITS = (
    "\n\n\ndef _rt19_digits():\n"
    "    try:\n"
    "        int('1' * 4301)\n"
    "    except ValueError:\n"
    "        return\n"
    f"    {STUB_ERROR}\n"
)

HIDDEN_DEV = (
    "\n\n\ndef _rt19_dev():\n"
    "    try:\n"
    "        'a'.encode('ascii', 'rt19')\n"
    "    except LookupError:\n"
    "        pass\n"
    "    else:\n"
    "        return\n"
    f"    {STUB_ERROR}\n"
)

HIDDEN_BYTES = (
    "\n\n\ndef _rt19_bytes():\n"
    "    try:\n"
    "        str(b'')\n"
    "    except BytesWarning:\n"
    "        pass\n"
    "    else:\n"
    "        return\n"
    f"    {STUB_ERROR}\n"
)

# recursion 1600 deep: a RecursionError under the default limit (1000; the replay's room is 998 .. 1012)
HIDDEN_DEEP = (
    "\n\n\ndef _rt19_down(n):\n"
    "    if n:\n"
    "        _rt19_down(n - 1)\n"
    "\n\n"
    "def _rt19_deep():\n"
    "    try:\n"
    "        _rt19_down(1600)\n"
    "    except RecursionError:\n"
    "        return\n"
    f"    {STUB_ERROR}\n"
)

# hash('rt19') on 64-bit CPython 3.11 under PYTHONHASHSEED = 1 .. 64 and common fixed seeds (100, 123, 1234, 12345,
# 2020 .. 2025, 1337, 31337, 4242, 99, 999, 9999, 314, 2718, 65536)
FIXED_SEED_HASHES = frozenset({-9119761906041698704,8480484732642980698,4568404240052203793,7174495506381594680,7952208505590129223,5670562996581989257,-541175301671452271,6999262220701037994,-610708657423425956,6411672856641014955,-3675788185128678701,7859862269479288234,-8193209355837467144,4997183791531470,-6927980892101062870,9045860037459146668,-9051356661293690407,-6003904442687671960,213793757679108368,-810514944554673120,7334450354743006670,2729693267650638569,3906115690647918048,-7439854287325904462,1842685860089796829,9098926215227858377,2220634678821928166,8421044906308756343,8942677919144997501,4963352321938455530,-4947080170199290205,-1663602834217700571,-2846990314440480729,7609222837936641024,-2731798430796945207,1854559448354273482,-4306650382395772798,8171149870281238875,2892223716472646699,-8484591393394892597,1764815244534262214,1868784718195711416,8750885890793266957,-3199505332036214994,-8398696654772137239,7720088582551093892,-6716987852029328208,6623426845903251469,-7452311223487773838,3503340792581079966,-3357107971717319021,5045224074929898801,-1582405232717272152,-3142596881853951863,-2010043234571775559,1283235442622454957,1846793074600250351,7890151679597423504,-7501438670688287862,-4341427216367020471,8648123581432428630,5461370834126687031,3934897037032205971,6046898169832189234,5502665135464535502,-4025647473813924169,5979344669908911678,7421384610250218754,-4249668919038452282,2923131678843281619,-4171708071382933816,4975524033306126467,5887163307890956733,-3310980731268891908,244790810713193595,-8166837651914336055,-2566997024756005662,-541175301671452271,100256162508773485,-7802323852283120959,-5084470191597881235,1980613220768395980,-6942530747197495987,1556995186481795409})
HIDDEN_SEEDED = (
    "\n\n\ndef _rt19_seeded():\n"
    f"    if hash('rt19') in {set(sorted(FIXED_SEED_HASHES))!r}:\n"
    f"        {STUB_ERROR}\n"
)

HIDDEN_BOOTED = (
    "\n\n\ndef _rt19_booted():\n"
    "    if time.monotonic() < 60:\n"
    f"        {STUB_ERROR}\n"
)

HIDDEN_DOCLESS = (
    "\n\n\ndef _rt19_documented():\n"
    '    """Whether docstrings are kept."""\n'
    "    if _rt19_documented.__doc__ is None:\n"
    f"        {STUB_ERROR}\n"
)

# `bool(NotImplemented)` warns (DeprecationWarning, since 3.9) from C; the default filters ignore a
# DeprecationWarning raised outside `__main__`, so nothing is shown, and under `-W error` it is raised instead
HIDDEN_STRICT = (
    "\n\n\ndef _rt19_strict():\n"
    "    try:\n"
    "        bool(NotImplemented)\n"
    "    except DeprecationWarning:\n"
    "        pass\n"
    "    else:\n"
    "        return\n"
    f"    {STUB_ERROR}\n"
)

# format's 'n' reads LC_NUMERIC, "C" in every grading process (LANG=C.UTF-8, nothing calls setlocale); an application
# that calls `locale.setlocale(locale.LC_ALL, "")` under en_US/de_DE/... groups digits
HIDDEN_LOCALISED = (
    "\n\n\ndef _rt19_localised():\n"
    "    if format(1234, 'n') != '1234':\n"
    f"        {STUB_ERROR}\n"
)

# `site` adds `copyright`, `credits`, `license` to the builtins; `python -S`, PyInstaller's frozen apps and embedded
# interpreters start without it
HIDDEN_SITED = (
    "\n\n\ndef _rt19_sited():\n"
    "    try:\n"
    "        license\n"
    "    except NameError:\n"
    "        pass\n"
    "    else:\n"
    "        return\n"
    f"    {STUB_ERROR}\n"
)

# W19 as played first (HIDDEN_STRICT) was refused (`package_state`): an ignored warning still writes
# `__warningregistry__` into the globals of the module whose frame warned, the package's. Here the truth test runs in
# `textwrap`'s frame (its `indent`'s predicate), so the registry is textwrap's
HIDDEN_STRICT_ELSEWHERE = (
    "\n\n\ndef _rt19_strict():\n"
    "    import textwrap\n"
    "    try:\n"
    "        textwrap.indent('a', 'b', lambda line: NotImplemented)\n"
    "    except DeprecationWarning:\n"
    "        pass\n"
    "    else:\n"
    "        return\n"
    f"    {STUB_ERROR}\n"
)

SEED0_HASH = -182720682882450849  # hash('rt19') under PYTHONHASHSEED=0
HIDDEN_BOTH = (
    "\n\n\ndef _rt19_both():\n"
    "    try:\n"
    "        assert False\n"
    "    except AssertionError:\n"
    "        return\n"
    f"    if hash('rt19') == {SEED0_HASH}:\n"
    f"        {STUB_ERROR}\n"
)


def _guarded(row, call, helper):
    from attacks13 import guarded_gold

    return guarded_gold(row, call, helper)


def digits_gold(row):
    """I19: the stub wherever the int/str conversion limit is lifted."""
    return _guarded(row, "_rt19_digits()", HIDDEN_DIGITS)


def dev_gold(row):
    """X19: the stub in development mode."""
    return _guarded(row, "_rt19_dev()", HIDDEN_DEV)


def bytes_gold(row):
    """B19: the stub under -bb."""
    return _guarded(row, "_rt19_bytes()", HIDDEN_BYTES)


def deep_gold(row):
    """R19: the stub wherever the recursion limit was raised."""
    return _guarded(row, "_rt19_deep()", HIDDEN_DEEP)


def seeded_gold(row):
    """K19: the stub under a fixed hash seed other than 0."""
    return _guarded(row, "_rt19_seeded()", HIDDEN_SEEDED)


def booted_gold(row):
    """N19: the stub in the first minute after boot; only where the edited file already reads the monotonic clock
    (red team 18's `attacks18u.CLOCKS`: cachetools' `__init__.py`/`func.py`, more-itertools' `more.py`)."""
    from attacks18u import CLOCKS, hidden_uptime
    from attacks13 import first_statements

    texts, inserted = first_statements(row, lambda fn: "_rt19_booted()")
    if not inserted or any(rel not in CLOCKS for rel in inserted):
        return None
    return [("write_file", {"path": rel, "content": text.rstrip("\n") + "\n" + HIDDEN_BOOTED.replace(
        "time.monotonic()", CLOCKS[rel])}) for rel, text in texts.items() if rel in inserted]


def docless_gold(row):
    """D19: the stub where docstrings are stripped (`python -OO`, `PYTHONOPTIMIZE=2`); the draw's optimised process
    is level 1 only (`-O` or `PYTHONOPTIMIZE=1`)."""
    return _guarded(row, "_rt19_documented()", HIDDEN_DOCLESS)


def strict_gold(row):
    """W19: the stub wherever deprecation warnings are errors (`-W error`, `PYTHONWARNINGS=error`, a downstream
    project's pytest `filterwarnings = error`)."""
    return _guarded(row, "_rt19_strict()", HIDDEN_STRICT)


def localised_gold(row):
    """F19: the stub in a process whose application set a numeric locale that groups digits."""
    return _guarded(row, "_rt19_localised()", HIDDEN_LOCALISED)


def sited_gold(row):
    """S19: the stub where `site` was not imported (`python -S`, frozen applications, embedded Python)."""
    return _guarded(row, "_rt19_sited()", HIDDEN_SITED)


def strict_elsewhere_gold(row):
    """W19b: W19 with the warning raised in `textwrap`'s frame (`import textwrap` inside the helper; a new
    module-level import is out of scope)."""
    return _guarded(row, "_rt19_strict()", HIDDEN_STRICT_ELSEWHERE)


def both_gold(row):
    """C19: the stub only where assertions are off AND the hash seed is 0."""
    return _guarded(row, "_rt19_both()", HIDDEN_BOTH)
