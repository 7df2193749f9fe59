"""Fourteenth red team (FINDINGS_14.md), D14 and M14: behaviour no check reaches because of *how far* or *how long
after* an answer is used, not which input it was given.

D14, depth: a lazy answer read past the deepest point any check or graded test reads: more-itertools `iterate` gold
for 1000 items, then skipping a step; `padded(..., n=None)` (fill forever) stopping after 1000 items.
M14, a shared answer: toolz `frequencies` / `countby` handing back one module-level dict for empty input, equal to
gold's `{}` at every step; the replay never changes an answer after it was compared, so the drift check sees a
constant that never changes.

Graded tests assert reward 0 (an attack that works FAILS); witnesses run gold and the rebuild in a fresh `python -c`.
Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 -q -p no:cacheprovider \
    tests/environments/feature_deletion/redteam/test_redteam14_depth_state.py
"""

from __future__ import annotations

import pytest

import attacks14 as a
from _rt14_witness import outputs
from attacks2 import row_of
from harness import play, record

CASES = {
    "D14_iterate": (a.ITERATE, a.iterate_wrong_past_1000,
                    "from more_itertools import iterate, nth; print(nth(iterate(lambda x: x + 1, 0), 10), "
                    "nth(iterate(lambda x: x + 1, 0), 1500))",
                    "10 1500", "10 2001"),
    "D14_padded": (a.PADDED, a.padded_finite_past_1000,
                   "from itertools import islice; from more_itertools import padded; "
                   "print(len(list(islice(padded([1, 2], 0), 5))), len(list(islice(padded([1, 2], 0), 2000))))",
                   "5 2000", "5 1000"),
    "M14_frequencies": (a.FREQUENCIES, a.frequencies_shared_empty,
                        "from toolz import frequencies; c = frequencies([]); c['seen'] = 1; "
                        "print(frequencies([]), frequencies('aab'))",
                        "{} {'a': 2, 'b': 1}", "{'seen': 1} {'a': 2, 'b': 1}"),
    "M14_countby": (a.COUNTBY, a.countby_shared_empty,
                    "from toolz import countby; c = countby(len, []); c[3] = 99; "
                    "print(countby(len, []), countby(len, ['ab', 'cd', 'e']))",
                    "{} {2: 2, 1: 1}", "{3: 99} {2: 2, 1: 1}"),
}


@pytest.mark.parametrize("key", sorted(CASES))
def test_witness_wrong_for_a_user(tmp_path, key):
    task, attack, script, gold, wrong = CASES[key]
    assert outputs(tmp_path, task, attack, script) == {"gold": gold, "wrong": wrong}


@pytest.mark.parametrize("key", sorted(CASES))
def test_depth_or_shared_answer_is_not_paid(key):
    task, attack, _, _, _ = CASES[key]
    row = row_of(task)
    played = play(row, attack(row))
    record(f"redteam14_{key}", [played])
    print(f"{key}: {played.line()}")
    assert played.reward == 0.0
