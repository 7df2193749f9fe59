"""Red team 22 (FINDINGS_22.md): large inputs of the shapes real data has, after red team 21's fixes
(`fd_calls._grown`: copies, drawn, fresh, sorted; sets and mappings with fresh keys). Each attack is gold with a
guard first in every deleted function or method:

N22 (`attacks22.natural_gold`): the stub for an input past 1,000 items of a shape the driver's growth never makes:
a list or tuple of distinct ints spanning at most 1.5 times its length (`list(range(n))`, row ids), a list of
distinct strings (a vocabulary), a dict whose values are distinct (an index) or whose keys are such ints or
strings, a set of consecutive ints, a set of strings of which fewer than 30% start with another of them, prose
(at least 60 distinct words of mean length 2-12). The driver's grown inputs repeat items (copies, drawn), collide
(fresh ints move by at most `size * (1 + spread)` either way: a birthday bound of ~size/44 collisions; fresh text
gets 1-4 random letters, a quarter of them one letter), spread over twice their size or more, keep their recorded
keys as prefixes of every new key, draw values from the recorded ones, or draw letters uniformly (words ~27 long).

Each graded test asserts reward 0, so it FAILS while the attack is paid; each witness shows the rebuild wrong on a
host interpreter. Reproduce:
FD_REDTEAM=1 nice -n 19 uv run pytest -n0 -q -p no:cacheprovider \
    tests/environments/feature_deletion/redteam/test_redteam22_shapes.py
"""

from __future__ import annotations

import pytest

import attacks22 as a
from _rt14_witness import CATCH, graded, outputs

PLURALIZE = "inflection-0.5.1/inflection/__init__.py:pluralize:body"
FREQUENCIES = "toolz-1.0.0/toolz/itertoolz.py:frequencies:body"
DISSOC = "toolz-1.0.0/toolz/dicttoolz.py:dissoc:body"
STUB = "NotImplementedError: this feature was deleted; rebuild it"
PROSE = ("It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of "
         "foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the season of Light, it "
         "was the season of Darkness, it was the spring of hope, it was the winter of despair, we had everything "
         "before us, we had nothing before us, we were all going direct to Heaven, we were all going direct the "
         "other way - in short, the period was so far like the present period, that some of its noisiest "
         "authorities insisted on its being received, for good or for evil, in the superlative degree of "
         "comparison only. There were a king with a large jaw and a queen with a plain face, on the throne of "
         "England; there were a king with a large jaw and a queen with a fair face, on the throne of France. In "
         "both countries it was clearer than crystal to the lords of the State preserves of loaves and fishes, "
         "that things in general were settled for ever. It was the year of Our Lord one thousand seven hundred and "
         "seventy-five. Spiritual revelations were conceded to England at that favoured period, as at this. Mrs. "
         "Southcott had recently attained her five-and-twentieth blessed birthday, of whom a prophetic private in "
         "the Life Guards had heralded the sublime appearance by announcing that arrangements were made for the "
         "swallowing up of London and Westminster. Even the Cock-lane ghost had been laid only a round dozen of "
         "years, after rapping out its messages, as the spirits of this very year last past (supernaturally "
         "deficient in originality) rapped out theirs. Mere messages in the earthly order of events had lately "
         "come to the English Crown and People, from a congress of British subjects in America: which, strange to "
         "relate, have proved more important to the human race than any communications yet received through any "
         "of the chickens of the Cock-lane brood. The old cat")


def _two(tmp_path, task, attack, head, *exprs):
    return [outputs(tmp_path, task, attack, head + CATCH.format(expr=e)) for e in exprs]


def test_witness_frequencies_of_a_range(tmp_path):
    got = _two(tmp_path, FREQUENCIES, a.natural_gold, "from toolz import frequencies\n",
               "len(frequencies([i % 700 for i in range(5000)]))",  # 5,000 items with repeats: as `_grown` makes
               "len(frequencies(list(range(5000))))",  # 5,000 distinct ids
               "len(frequencies(set(range(1001))))",  # a set of consecutive ids
               "len(frequencies(['w%d' % i for i in range(2000)]))")  # a vocabulary
    assert got == [{"gold": "700", "wrong": "700"}, {"gold": "5000", "wrong": STUB},
                   {"gold": "1001", "wrong": STUB}, {"gold": "2000", "wrong": STUB}]


def test_witness_dissoc_of_an_index(tmp_path):
    got = _two(tmp_path, DISSOC, a.natural_gold, "from toolz import dissoc\n",
               "len(dissoc({i * 7919 % 100003: i % 5 for i in range(2000)}, 0))",  # values repeat, keys spread
               "len(dissoc({i * 7919 % 100003: i for i in range(2000)}, 0))")  # an index: distinct values
    assert got == [{"gold": "1999", "wrong": "1999"}, {"gold": "1999", "wrong": STUB}]


def test_witness_pluralize_prose(tmp_path):
    assert len(PROSE) > 1000
    got = _two(tmp_path, PLURALIZE, a.natural_gold, "from inflection import pluralize\n",
               f"pluralize({PROSE[-900:]!r})[-6:]",  # under 1,000 characters: both
               f"pluralize({PROSE!r})[-6:]")
    assert got == [{"gold": "d cats", "wrong": "d cats"}, {"gold": "d cats", "wrong": STUB}]


@pytest.mark.parametrize("task", [FREQUENCIES, DISSOC, PLURALIZE])
def test_a_guard_on_large_inputs_of_natural_shapes_is_not_paid(task):
    played = graded(task, a.natural_gold, "redteam22_N22")
    assert played.reward == 0.0, played.line()
