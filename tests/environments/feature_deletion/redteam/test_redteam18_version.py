"""Red team 18 (FINDINGS_18.md), V18: a rebuild that breaks on a newer Python. Gold with `_rt18_versioned()` first
in every deleted function (`attacks18v.versioned_gold`): the stub's `NotImplementedError` where
`sum([0.1] * 10) == 1.0`, i.e. from CPython 3.12 on (compensated float sums). Every grading process runs 3.11, so it
is paid on any task; the witness runs the same script under 3.11 and under 3.12 (pyenv's, where installed).

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 -q -p no:cacheprovider \
    tests/environments/feature_deletion/redteam/test_redteam18_version.py
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import attacks18v as a
from _rt14_witness import CATCH, graded, outputs

ORDINAL = "inflection-0.5.1/inflection/__init__.py:ordinal:def"
FREQUENCIES = "toolz-1.0.0/toolz/itertoolz.py:frequencies:body"
SPLIT_INTO = "more-itertools-10.5.0/more_itertools/more.py:split_into:def"
CACHE_METHODS = "cachetools-5.5.0/src/cachetools/__init__.py:Cache:methods"
STUB = "NotImplementedError: this feature was deleted; rebuild it"
PY312 = next((str(p) for p in sorted(Path("/root/.pyenv/versions").glob("3.1[23]*/bin/python"))), None) \
    or shutil.which("python3.12")
needs_312 = pytest.mark.skipif(PY312 is None, reason="needs a CPython 3.12 or 3.13 interpreter")


@needs_312
def test_witness_ordinal_under_python_312(tmp_path):
    script = "from inflection import ordinal\n" + CATCH.format(expr="ordinal(1)")
    assert outputs(tmp_path, ORDINAL, a.versioned_gold, script) == {"gold": "st", "wrong": "st"}
    assert outputs(tmp_path, ORDINAL, a.versioned_gold, script, python=PY312) == {"gold": "st", "wrong": STUB}


@needs_312
def test_witness_frequencies_under_python_312(tmp_path):
    script = "from toolz import frequencies\n" + CATCH.format(expr="frequencies('abca')")
    assert outputs(tmp_path, FREQUENCIES, a.versioned_gold, script, python=PY312) == {
        "gold": "{'a': 2, 'b': 1, 'c': 1}", "wrong": STUB}


@pytest.mark.parametrize("task", [ORDINAL, FREQUENCIES, SPLIT_INTO, CACHE_METHODS])
def test_a_rebuild_broken_on_python_312_is_not_paid(task):
    played = graded(task, a.versioned_gold, "redteam18_V18")
    assert played.reward == 0.0
