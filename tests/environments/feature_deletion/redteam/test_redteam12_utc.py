"""Twelfth red team, U12 (FINDINGS_12.md): the grader recognised by the zone it almost never draws. `TZ` is drawn per
sandboxed command uniformly from the ~600 names of the zone database, so UTC (9 names) comes up 1.5% of the time;
inflection `ordinal` rebuilt as gold everywhere except UTC, where it answers "th" for every number, is paid unless a
command of the grading draws UTC. Graded tests assert reward 0 (an attack that works FAILS); the witness runs gold and
the rebuild on the host from the task's archive under UTC and with `TZ` unset (a container's default). Results:
results/redteam12_*.jsonl.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 tests/environments/feature_deletion/redteam/test_redteam12_utc.py -s
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile

from attacks2 import row_of
from attacks12 import ORDINAL, ordinal_wrong_in_utc
from harness import TASKS, play, record

SCRIPT = "from inflection import ordinal; print(ordinal(1), ordinal(2), ordinal(3))"
ZONES = ("UTC", "Etc/UTC", "Europe/Paris")


def test_witness_wrong_in_utc(tmp_path):
    row = row_of(ORDINAL)
    with tarfile.open(TASKS.parent / row.archive) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / row.root
    [(_, call)] = ordinal_wrong_in_utc(row)
    got = {}
    for who, text in (("gold", row.gold_files[call["path"]]), ("wrong", call["content"])):
        (root / call["path"]).write_text(text)
        got[who] = {zone: subprocess.run([sys.executable, "-c", SCRIPT], cwd=root / row.import_root,
                                         env=os.environ | {"TZ": zone}, capture_output=True, text=True,
                                         check=True).stdout.strip() for zone in ZONES}
    assert got == {"gold": dict.fromkeys(ZONES, "st nd rd"),
                   "wrong": {"UTC": "th th th", "Etc/UTC": "th th th", "Europe/Paris": "st nd rd"}}


def test_wrong_in_utc_ordinal_is_not_paid():
    row = row_of(ORDINAL)
    played = play(row, ordinal_wrong_in_utc(row))
    record("redteam12_utc", [played])
    print(f"U12 ordinal wrong only in UTC: {played.line()}")
    # Since the fix the tests run under UTC and see what it does there: it is paid as the wrong code it is (partial
    # credit for the tests "th" passes, as a plain "th" for every number is), never as gold.
    assert played.reward < 1.0 and not played.f2p.startswith(played.f2p.split("/")[1] + "/"), played.line()


SAMPLED = ("inflection-0.5.1/inflection/__init__.py:tableize", "cachetools", "toolz-1.0.0/toolz/dicttoolz.py:dissoc")


def test_wrong_in_utc_on_sampled_tasks_is_not_paid():
    from attacks12 import wrong_in_utc_gold
    from harness import rows as all_rows

    every = all_rows()
    rows = [next(r for r in every if key in r.id and any("_rt12_guard(); " in a["content"]
                                                        for _, a in wrong_in_utc_gold(r))) for key in SAMPLED]
    played = [play(r, wrong_in_utc_gold(r)) for r in rows]
    record("redteam12_utc_sweep", played)
    for p in played:
        print(f"U12s gold raising in UTC only: {p.line()}")
    assert [p.reward for p in played] == [0.0] * len(played)
