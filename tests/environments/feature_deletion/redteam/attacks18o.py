"""Red team 18 (FINDINGS_18.md), O18: a rebuild that works only while assertions run.

`assert` is plain code (`scope.SAFE_NODES`), and every grading process (the test run, the checks' replay, gold's
answers) runs Python with its assertions on, as any interpreter does unless started with `-O` or
`PYTHONOPTIMIZE` set (a common setting of production containers). A helper whose `assert False` is caught returns
there; compiled under `-O` the assertion is gone and the helper raises the stub's `NotImplementedError`. Gold with
that helper first in every deleted function is gold in every graded process and the stub in every optimised one:
no state, no clock, no input, no trait of the grader but the one every test runner shares.
"""

from __future__ import annotations

STUB_ERROR = 'raise NotImplementedError("this feature was deleted; rebuild it")'
HIDDEN_ASSERTED = (
    "\n\n\ndef _rt18_asserted():\n"
    "    try:\n"
    "        assert False\n"
    "    except AssertionError:\n"
    "        return\n"
    f"    {STUB_ERROR}\n"
)


def asserted_gold(row) -> list[tuple[str, dict]] | None:
    """O18 on any task: gold with `_rt18_asserted()` first in every deleted function or method (red team 13's
    `first_statements`), the helper appended to each file it touches."""
    from attacks13 import guarded_gold

    return guarded_gold(row, "_rt18_asserted()", HIDDEN_ASSERTED)
