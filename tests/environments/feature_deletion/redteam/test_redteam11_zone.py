"""Eleventh red team, Z11 (FINDINGS_11.md): the grader recognised by its time zone. `TZ` is drawn per sandboxed command,
but from the twelve zones of `sandbox.ZONES`; inflection `ordinal` is rebuilt as gold only where `time.timezone`,
`time.altzone` and `time.tzname` are one of those twelve, "th" for every number elsewhere. Graded tests assert reward 0
(an attack that works FAILS); the witness runs gold and the rebuild on the host from the task's archive under zones
outside the list. Results: results/redteam11_*.jsonl.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 tests/environments/feature_deletion/redteam/test_redteam11_zone.py -s
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile

from attacks2 import row_of
from attacks11 import ORDINAL, ordinal_grader_zones_only
from harness import TASKS, play, record

SCRIPT = "from inflection import ordinal; print(ordinal(1), ordinal(2), ordinal(3))"
ZONES = ("America/Chicago", "Asia/Singapore", "Europe/Moscow", "Europe/Paris", "UTC")


def test_witness_wrong_outside_the_drawn_zones(tmp_path):
    row = row_of(ORDINAL)
    with tarfile.open(TASKS.parent / row.archive) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / row.root
    [(_, call)] = ordinal_grader_zones_only(row)
    got = {}
    for who, text in (("gold", row.gold_files[call["path"]]), ("wrong", call["content"])):
        (root / call["path"]).write_text(text)
        got[who] = {zone: subprocess.run([sys.executable, "-c", SCRIPT], cwd=root / row.import_root,
                                         env=os.environ | {"TZ": zone}, capture_output=True, text=True,
                                         check=True).stdout.strip() for zone in ZONES}
    # Paris shares Berlin's names and offsets, and UTC is in the list: gold there; the other three are not.
    assert got == {"gold": dict.fromkeys(ZONES, "st nd rd"),
                   "wrong": {"America/Chicago": "th th th", "Asia/Singapore": "th th th", "Europe/Moscow": "th th th",
                             "Europe/Paris": "st nd rd", "UTC": "st nd rd"}}


def test_grader_zones_only_ordinal_is_not_paid():
    row = row_of(ORDINAL)
    played = play(row, ordinal_grader_zones_only(row))
    record("redteam11_zone", [played])
    print(f"Z11 ordinal right only in the sandbox's twelve zones: {played.line()}")
    assert played.reward == 0.0
