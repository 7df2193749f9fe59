"""Thirteenth red team, X13 (FINDINGS_13.md): gaps in what the checks cover, other than S12's iterators. Each rebuild is
gold on every input class a kept check (or a graded test) holds and wrong on an everyday input class none holds:
an `int` for inflection's `ordinal`/`ordinalize` (checked only with numbers written as text and `True`), a non-ASCII
word for `pluralize`/`singularize`, a tuple for more-itertools `strip` (its own docstring's example), a string for
`distinct_permutations`, four rows for `transpose`, five items for `powerset`, three keys for toolz `dissoc`. Graded tests assert reward 0 (an attack
that works FAILS); each witness runs gold and the rebuild on the host from the task's archive, in a fresh `python -c`.
Results: results/redteam13_*.jsonl.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 tests/environments/feature_deletion/redteam/test_redteam13_coverage.py -s
"""

from __future__ import annotations

import subprocess
import sys
import tarfile

import pytest

import attacks13 as a
from attacks2 import row_of
from harness import TASKS, play, record

# (task, attack, script run with the package importable, gold's output, the rebuild's output)
CASES = {
    "ordinal_int": (a.ORDINAL, a.ordinal_wrong_for_ints,
                    "from inflection import ordinal; print([ordinal(n) for n in (1, 2, 3, '1')])",
                    "['st', 'nd', 'rd', 'st']", "['th', 'th', 'th', 'st']"),
    "ordinalize_int": (a.ORDINALIZE, a.ordinalize_wrong_for_ints,
                       "from inflection import ordinalize; print([ordinalize(n) for n in (1, 22, '1')])",
                       "['1st', '22nd', '1st']", "['1th', '22th', '1st']"),
    "pluralize_non_ascii": (a.PLURALIZE, a.pluralize_wrong_for_non_ascii,
                            "from inflection import pluralize; print([pluralize(w) for w in ('café', 'niño', 'book')])",
                            "['cafés', 'niños', 'books']", "['café', 'niño', 'books']"),
    "singularize_non_ascii": (a.SINGULARIZE, a.singularize_wrong_for_non_ascii,
                              "from inflection import singularize; "
                              "print([singularize(w) for w in ('cafés', 'niños', 'cafes')])",
                              "['café', 'niño', 'cafe']", "['cafés', 'niños', 'cafe']"),
    "strip_tuple": (a.STRIP, a.strip_wrong_for_tuples,
                    "from more_itertools import strip; p = lambda x: x in {None, False, ''}; "
                    "print(list(strip((None, False, None, 1, 2, None, 3, False, None), p)), "
                    "list(strip([None, 1, None], p)))",
                    "[1, 2, None, 3] [1]", "[None, False, None, 1, 2, None, 3] [1]"),
    "distinct_permutations_str": (a.DISTINCT_PERMUTATIONS, a.distinct_permutations_wrong_for_str,
                                  "from more_itertools import distinct_permutations as d; "
                                  "print(sorted(d('aab')), sorted(d(['a', 'a', 'b'])))",
                                  "[('a', 'a', 'b'), ('a', 'b', 'a'), ('b', 'a', 'a')] "
                                  "[('a', 'a', 'b'), ('a', 'b', 'a'), ('b', 'a', 'a')]",
                                  "[('a', 'b'), ('b', 'a')] [('a', 'a', 'b'), ('a', 'b', 'a'), ('b', 'a', 'a')]"),
    "transpose_4_rows": (a.TRANSPOSE, a.transpose_wrong_past_3_rows,
                         "from more_itertools import transpose; "
                         "print(list(transpose([(1, 2), (3, 4), (5, 6), (7, 8)])), list(transpose([(1, 2), (3, 4)])))",
                         "[(1, 3, 5, 7), (2, 4, 6, 8)] [(1, 3), (2, 4)]", "[(1, 3, 5), (2, 4, 6)] [(1, 3), (2, 4)]"),
    "powerset_5_items": (a.POWERSET, a.powerset_wrong_past_4_items,
                         "from more_itertools import powerset; "
                         "print(len(list(powerset(range(5)))), (0, 1, 2, 3, 4) in list(powerset(range(5))), "
                         "len(list(powerset([1, 2, 3]))))",
                         "32 True 8", "31 False 8"),
    "dissoc_3_keys": (a.DISSOC, a.dissoc_wrong_past_2_keys,
                      "from toolz import dissoc; "
                      "print(dissoc({'a': 1, 'b': 2, 'c': 3, 'd': 4}, 'a', 'b', 'c'), dissoc({'a': 1, 'b': 2}, 'a'))",
                      "{'d': 4} {'b': 2}", "{'c': 3, 'd': 4} {'b': 2}"),
}


def _outputs(tmp_path, key: str) -> dict[str, str]:
    task, attack, script, _, _ = CASES[key]
    row = row_of(task)
    with tarfile.open(TASKS.parent / row.archive) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / row.root
    [(_, call)] = attack(row)
    got = {}
    for who, text in (("gold", row.gold_files[call["path"]]), ("wrong", call["content"])):
        (root / call["path"]).write_text(text)
        got[who] = subprocess.run([sys.executable, "-c", script], cwd=root / row.import_root, capture_output=True,
                                  text=True, check=True, env={"PYTHONIOENCODING": "utf-8", "PATH": "/usr/bin:/bin"}
                                  ).stdout.strip()
    return got


@pytest.mark.parametrize("key", sorted(CASES))
def test_witness_wrong_for_an_everyday_input(tmp_path, key):
    _, _, _, gold, wrong = CASES[key]
    assert _outputs(tmp_path, key) == {"gold": gold, "wrong": wrong}


@pytest.mark.parametrize("key", sorted(CASES))
def test_wrong_on_an_unchecked_input_class_is_not_paid(key):
    task, attack, _, _, _ = CASES[key]
    row = row_of(task)
    played = play(row, attack(row))
    record(f"redteam13_{key}", [played])
    print(f"X13 {key}: {played.line()}")
    assert played.reward == 0.0
