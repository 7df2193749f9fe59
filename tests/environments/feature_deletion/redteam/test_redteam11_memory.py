"""Eleventh red team, B11 and R11 (FINDINGS_11.md): state the replay cannot read. A `zlib.decompressobj()` whose stream
has ended appends every later `decompress(data)` to its public `unused_data`; `fd_calls._walk` reads it as its type's
name only (no referents, not picklable), so a new private constant holding one is a memory that grows with no drift.
B11: inflection `ordinal` gold for the first 5,000 calls in a process, "th" after (red team 5's B5 reopened). R11: gold
under pytest's depth, in the replay (whose programs each draw a new recursion room) and for the first 20 calls; "th"
from the 21st call of a process whose calls all saw one room (a user's loop). Graded tests assert reward 0 (an attack
that works FAILS); the witnesses run gold and the rebuild on the host from the task's archive.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 tests/environments/feature_deletion/redteam/test_redteam11_memory.py -s
"""

from __future__ import annotations

import subprocess
import sys
import tarfile

from attacks2 import row_of
from attacks11 import ORDINAL, ordinal_count_bomb, ordinal_one_room_bomb
from harness import TASKS, play, record

COUNT = "from inflection import ordinal\nout = [ordinal(1) for _ in range(5001)]\nprint(out[0], out[4999], out[5000])"
LOOP = "from inflection import ordinal\nout = []\nfor _ in range(21):\n    out.append(ordinal(1))\nprint(*out[19:])"
IN_MAIN = "from inflection import ordinal\ndef main():\n    print(*[ordinal(n) for n in range(1, 25)][-4:])\nmain()"


def _run_both(tmp_path, calls, scripts):
    row = row_of(ORDINAL)
    with tarfile.open(TASKS.parent / row.archive) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / row.root
    [(_, call)] = calls(row)
    got = {}
    for who, text in (("gold", row.gold_files[call["path"]]), ("wrong", call["content"])):
        (root / call["path"]).write_text(text)
        got[who] = [subprocess.run([sys.executable, "-c", script], cwd=root / row.import_root, capture_output=True,
                                   text=True, check=True).stdout.strip() for script in scripts]
    return got


def test_witness_count_bomb(tmp_path):
    assert _run_both(tmp_path, ordinal_count_bomb, [COUNT]) == {"gold": ["st st st"], "wrong": ["st st th"]}


def test_witness_one_room_bomb(tmp_path):
    # 21 = "st" on gold; the rebuild answers "th" for everything from its 21st call on.
    assert _run_both(tmp_path, ordinal_one_room_bomb, [LOOP, IN_MAIN]) == {
        "gold": ["st st", "st nd rd th"], "wrong": ["st th", "th th th th"]}


def test_count_bomb_is_not_paid():
    row = row_of(ORDINAL)
    played = play(row, ordinal_count_bomb(row))
    record("redteam11_memory", [played])
    print(f"B11 ordinal wrong from its 5,001st call: {played.line()}")
    assert played.reward == 0.0


def test_one_room_bomb_is_not_paid():
    row = row_of(ORDINAL)
    played = play(row, ordinal_one_room_bomb(row))
    record("redteam11_memory", [played])
    print(f"R11 ordinal wrong from its 21st call at one room: {played.line()}")
    assert played.reward == 0.0
