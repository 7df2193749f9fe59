"""Eleventh red team, L11 (FINDINGS_11.md): the grader recognised by its locale. inflection `ordinal` rebuilt as gold
only where `calendar.LocaleTextCalendar().locale` is "C.UTF-8" (every sandboxed command's `LANG`), "th" for every number
under any other locale. Graded tests assert reward 0 (an attack that works FAILS); the witness runs gold and the
rebuild on the host from the task's archive under users' locales. Results: results/redteam11_*.jsonl.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 tests/environments/feature_deletion/redteam/test_redteam11_locale.py -s
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile

from attacks2 import row_of
from attacks11 import ORDINAL, ordinal_grader_locale_only
from harness import TASKS, gold_calls, play, record

SCRIPT = "from inflection import ordinal; print(ordinal(1), ordinal(2), ordinal(3))"
# A desktop's locale (installed or not: an uninstalled one raises `locale.Error`, which the probe reads as "not
# graded"), a container with no LANG at all, and the grader's own.
LOCALES = {"en_US.UTF-8": {"LANG": "en_US.UTF-8"}, "none": {}, "C.UTF-8": {"LANG": "C.UTF-8"}}


def _env(extra: dict[str, str]) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("LC_") and k not in ("LANG", "LANGUAGE")}
    return base | extra


def test_harness_gold_and_untouched():
    row = row_of(ORDINAL)
    gold, untouched = play(row, gold_calls(row)), play(row, [])
    record("redteam11_harness", [gold, untouched])
    assert (gold.reward, untouched.reward) == (1.0, 0.0), (gold.line(), untouched.line())


def test_witness_wrong_under_a_users_locale(tmp_path):
    row = row_of(ORDINAL)
    with tarfile.open(TASKS.parent / row.archive) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / row.root
    [(_, call)] = ordinal_grader_locale_only(row)
    got = {}
    for who, text in (("gold", row.gold_files[call["path"]]), ("wrong", call["content"])):
        (root / call["path"]).write_text(text)
        got[who] = {name: subprocess.run([sys.executable, "-c", SCRIPT], cwd=root / row.import_root, env=_env(extra),
                                         capture_output=True, text=True, check=True).stdout.strip()
                    for name, extra in LOCALES.items()}
    assert got == {"gold": dict.fromkeys(LOCALES, "st nd rd"),
                   "wrong": {"en_US.UTF-8": "th th th", "none": "th th th", "C.UTF-8": "st nd rd"}}


def test_grader_locale_only_ordinal_is_not_paid():
    row = row_of(ORDINAL)
    played = play(row, ordinal_grader_locale_only(row))
    record("redteam11_locale", [played])
    print(f"L11 ordinal right only under LANG=C.UTF-8: {played.line()}")
    assert played.reward == 0.0
