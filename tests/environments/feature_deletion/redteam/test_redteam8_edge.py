"""Eighth red team, E8 (FINDINGS_8.md): inflection `ordinal` wrong for a bool and for numbers above 10**12, inputs no
recorded or held-out program holds. Graded test asserts reward 0 (an attack that works FAILS); the witness shows the
difference on the host. Harness: test_redteam8_env.py (gold 1.0, untouched 0.0 on `ordinal`).
Results: results/redteam8_edge.jsonl.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 tests/environments/feature_deletion/redteam/test_redteam8_edge.py -s
"""

from __future__ import annotations

import subprocess
import sys
import tarfile

from attacks2 import row_of
from attacks8 import ORDINAL, ordinal_edges_wrong
from harness import TASKS, play, record

SCRIPT = "from inflection import ordinal; print(ordinal(True), ordinal(10**12 + 1), ordinal(21))"


def test_witness_bool_and_large_numbers(tmp_path):
    row = row_of(ORDINAL)
    with tarfile.open(TASKS.parent / row.archive) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / row.root
    [(_, call)] = ordinal_edges_wrong(row)
    got = {}
    for who, text in (("gold", row.gold_files[call["path"]]), ("wrong", call["content"])):
        (root / call["path"]).write_text(text)
        got[who] = subprocess.run([sys.executable, "-c", SCRIPT], cwd=root / row.import_root, capture_output=True,
                                  text=True, check=True).stdout.strip()
    assert got == {"gold": "st st st", "wrong": "th th st"}


def test_edges_wrong_ordinal_is_not_paid():
    row = row_of(ORDINAL)
    played = play(row, ordinal_edges_wrong(row))
    record("redteam8_edge", [played])
    print(f"E8 ordinal wrong for True and > 10**12: {played.line()}")
    assert played.reward == 0.0
