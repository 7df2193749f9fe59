"""Eleventh red team, L11s sweep (FINDINGS_11.md): L11 made task-agnostic. Gold, with the first simple statement of
every function the deletion removed prefixed by `_rt11_guard(); ` (`attacks11.locale_only_gold`, red team 9's
transform with this trait): the guard raises as the stub does unless `calendar.LocaleTextCalendar().locale` is
"C.UTF-8", the sandbox's fixed `LANG`. Where the first statement is compound, the guard goes on a line of its own
(`locale_only_gold_inline`). A fixed sample of bundled tasks (all with FD_REDTEAM_ALL=1). The witness shows on the host
that one sampled rebuild (`tableize`) raises under a user's locale where gold answers. Graded tests assert reward 0
(an attack that works FAILS). Results: results/redteam11_sweep.jsonl.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 tests/environments/feature_deletion/redteam/test_redteam11_sweep.py -s
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile

import pytest
from attacks2 import row_of
from attacks11 import locale_only_gold, locale_only_gold_inline
from harness import TASKS, play, record, rows, sample

SAMPLE = sample([r for r in rows() if any("_rt11_guard(); " in a["content"] for _, a in locale_only_gold(r))], 8,
                seed=11)
INLINE = sample([r for r in rows() if not any("_rt11_guard(); " in a["content"] for _, a in locale_only_gold(r))], 3,
                seed=11)
SCRIPT = """
from inflection import tableize
try:
    print(tableize("RawScaledScorer"))
except NotImplementedError:
    print("NotImplementedError")
"""


def test_witness_tableize_is_the_stub_under_a_users_locale(tmp_path):
    row = row_of("inflection/__init__.py:tableize:def")
    with tarfile.open(TASKS.parent / row.archive) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / row.root
    [(_, call)] = locale_only_gold(row)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LC_") and k not in ("LANG", "LANGUAGE")}
    got = {}
    for who, text in (("gold", row.gold_files[call["path"]]), ("wrong", call["content"])):
        (root / call["path"]).write_text(text)
        got[who] = [subprocess.run([sys.executable, "-c", SCRIPT], cwd=root / row.import_root, env=env | extra,
                                   capture_output=True, text=True, check=True).stdout.strip()
                    for extra in ({"LANG": "en_US.UTF-8"}, {}, {"LANG": "C.UTF-8"})]
    assert got == {"gold": ["raw_scaled_scorers"] * 3,
                   "wrong": ["NotImplementedError", "NotImplementedError", "raw_scaled_scorers"]}


@pytest.mark.parametrize("row", SAMPLE, ids=[r.id for r in SAMPLE])
def test_locale_only_gold_is_not_paid(row):
    played = play(row, locale_only_gold(row))
    record("redteam11_sweep", [played])
    print(f"L11 sweep: {played.line()}")
    assert played.reward == 0.0


@pytest.mark.parametrize("row", INLINE, ids=[r.id for r in INLINE])
def test_locale_only_gold_inline_is_not_paid(row):
    played = play(row, locale_only_gold_inline(row))
    record("redteam11_sweep", [played])
    print(f"L11 sweep (inline): {played.line()}")
    assert played.reward == 0.0
