"""Twelfth red team, S12 (FINDINGS_12.md): a gap in what the checks cover. toolz `partition` and `countby` take any
iterable, but neither the task's tests nor the replay's programs ever hand them an iterator; rebuilt as gold for
sequences and wrong for every iterator (partition by n + 1; the first item dropped), both are paid. Graded tests assert
reward 0 (an attack that works FAILS); the witness runs gold and the rebuild on the host from the task's archive.
Results: results/redteam12_*.jsonl.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 tests/environments/feature_deletion/redteam/test_redteam12_stream.py -s
"""

from __future__ import annotations

import subprocess
import sys
import tarfile

from attacks2 import row_of
from attacks12 import PARTITION, partition_wrong_for_iterators
from harness import TASKS, play, record

SCRIPT = ("from toolz import countby, partition; print(list(partition(2, [1, 2, 3, 4])), "
          "list(partition(2, iter([1, 2, 3, 4, 5, 6]))), countby(len, ['cat', 'mouse']), "
          "countby(len, iter(['cat', 'mouse', 'dog'])))")


def test_witness_wrong_for_a_users_iterator(tmp_path):
    from attacks12 import COUNTBY, countby_wrong_for_iterators

    row = row_of(PARTITION)
    assert row.archive == row_of(COUNTBY).archive
    with tarfile.open(TASKS.parent / row.archive) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / row.root
    [(_, partition)], [(_, countby)] = partition_wrong_for_iterators(row), countby_wrong_for_iterators(row_of(COUNTBY))
    got = {}
    for who, files in (("gold", {c["path"]: row_of(k).gold_files[c["path"]] for k, c in ((PARTITION, partition),
                                                                                         (COUNTBY, countby))}),
                       ("wrong", {partition["path"]: partition["content"], countby["path"]: countby["content"]})):
        for path, text in files.items():
            (root / path).write_text(text)
        got[who] = subprocess.run([sys.executable, "-c", SCRIPT], cwd=root / row.import_root, capture_output=True,
                                  text=True, check=True).stdout.strip()
    assert got == {"gold": "[(1, 2), (3, 4)] [(1, 2), (3, 4), (5, 6)] {3: 1, 5: 1} {3: 2, 5: 1}",
                   "wrong": "[(1, 2), (3, 4)] [(1, 2, 3), (4, 5, 6)] {3: 1, 5: 1} {5: 1, 3: 1}"}


def test_partition_wrong_for_iterators_is_not_paid():
    row = row_of(PARTITION)
    played = play(row, partition_wrong_for_iterators(row))
    record("redteam12_stream", [played])
    print(f"S12 partition wrong for every iterator: {played.line()}")
    assert played.reward == 0.0


def test_countby_wrong_for_iterators_is_not_paid():
    from attacks12 import COUNTBY, countby_wrong_for_iterators

    row = row_of(COUNTBY)
    played = play(row, countby_wrong_for_iterators(row))
    record("redteam12_stream_countby", [played])
    print(f"S12 countby wrong for every iterator: {played.line()}")
    assert played.reward == 0.0


def test_witness_merge_sorted_wrong_for_a_users_iterator(tmp_path):
    from attacks12 import MERGE_SORTED, merge_sorted_wrong_for_iterators

    row = row_of(MERGE_SORTED)
    with tarfile.open(TASKS.parent / row.archive) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / row.root
    [(_, call)] = merge_sorted_wrong_for_iterators(row)
    script = ("from toolz import merge_sorted; "
              "print(list(merge_sorted([1, 4], [2, 5])), list(merge_sorted(iter([1, 4]), [2, 5])))")
    got = {}
    for who, text in (("gold", row.gold_files[call["path"]]), ("wrong", call["content"])):
        (root / call["path"]).write_text(text)
        got[who] = subprocess.run([sys.executable, "-c", script], cwd=root / row.import_root, capture_output=True,
                                  text=True, check=True).stdout.strip()
    assert got == {"gold": "[1, 2, 4, 5] [1, 2, 4, 5]", "wrong": "[1, 2, 4, 5] [2, 4, 5]"}


def test_merge_sorted_wrong_for_iterators_is_not_paid():
    from attacks12 import MERGE_SORTED, merge_sorted_wrong_for_iterators

    row = row_of(MERGE_SORTED)
    played = play(row, merge_sorted_wrong_for_iterators(row))
    record("redteam12_stream_merge_sorted", [played])
    print(f"S12 merge_sorted wrong for every iterator: {played.line()}")
    assert played.reward == 0.0
