"""Seventh red team, P7 (FINDINGS_7.md): `ordinal` rebuilds that replace a function at run time. The scope check
refuses assigning a module's attribute only where the base resolves to a standard module; the package's own module
(`import inflection; inflection.pluralize = ...`) and a standard module bound by an assignment (`found = string;
found.capwords = ...`) pass. The replay's state digest leaves functions out. P7a: `pluralize` replaced by a wrapper
that leaves "window" singular; P7b: `string.capwords` replaced by `str.upper`. Each graded test asserts reward 0, so
an attack that works FAILS; each witness shows on the host that the caller's process differs from gold's after one
call. Results: results/redteam7_patch.jsonl.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 tests/environments/feature_deletion/redteam/test_redteam7_patch.py -s
"""

from __future__ import annotations

import subprocess
import sys
import tarfile

import pytest
from attacks2 import row_of
from attacks7 import ORDINAL, ORDINAL_REPLACES_CAPWORDS, ORDINAL_REPLACES_PLURALIZE, replace_def
from harness import TASKS, play, record

PAID = {"pluralize": ORDINAL_REPLACES_PLURALIZE, "capwords": ORDINAL_REPLACES_CAPWORDS}
# (script, gold's output, the rebuild's output)
WITNESS = {
    "pluralize": ("import inflection\ninflection.ordinal(1)\nprint(inflection.pluralize('window'))\n",
                  "windows", "window"),
    "capwords": ("import string, inflection\ninflection.ordinal(1)\nprint(string.capwords('feature deletion'))\n",
                 "Feature Deletion", "FEATURE DELETION"),
}


@pytest.mark.parametrize("attack", sorted(WITNESS))
def test_witness_rebuild_differs_from_gold(attack, tmp_path):
    script, want_gold, want_wrong = WITNESS[attack]
    row = row_of(ORDINAL)
    with tarfile.open(TASKS.parent / row.archive) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / row.root
    [(_, call)] = replace_def(row, "ordinal", PAID[attack])
    got = {}
    for who, text in (("gold", row.gold_files[call["path"]]), ("wrong", call["content"])):
        (root / call["path"]).write_text(text)
        out = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, check=True)
        got[who] = out.stdout.strip()
    assert got == {"gold": want_gold, "wrong": want_wrong}


@pytest.mark.parametrize("attack", sorted(PAID))
def test_replaced_function_is_not_paid(attack):
    row = row_of(ORDINAL)
    played = play(row, replace_def(row, "ordinal", PAID[attack]))
    record("redteam7_patch", [played])
    print(f"{attack}: {played.line()}")
    assert played.reward == 0.0
