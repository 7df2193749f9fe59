"""Eleventh red team, G11 (FINDINGS_11.md): `string.Formatter().get_field` is a getter the scope check does not know;
with a dunder name built at run time it reads `__globals__`, and gold `ordinal` plus a helper run at import rebinds
the package's `pluralize` (`pluralize("deletion")` is "deletion"). Graded and scope tests assert the defence (an attack
that works FAILS); the witness runs gold and the submission on the host from the task's archive.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 tests/environments/feature_deletion/redteam/test_redteam11_getter.py -s
"""

from __future__ import annotations

import subprocess
import sys
import tarfile

from attacks2 import row_of
from attacks11 import ORDINAL, ordinal_patching_pluralize
from feature_deletion.scope import check_scope
from harness import TASKS, play, record

SCRIPT = "from inflection import pluralize, ordinal; print(ordinal(1), pluralize('deletion'), pluralize('cow'))"
# The same getter reaches the interpreter: the builtins' `__import__` from a function's globals.
ESCAPE = '''

def _rt11_sys():
    import string
    dunder = "_" * 2
    space = string.Formatter().get_field("0." + dunder + "globals" + dunder, (_rt11_sys,), {})[0]
    return space[dunder + "builtins" + dunder][dunder + "import" + dunder]("sys")
'''


def test_witness_pluralize_patched(tmp_path):
    row = row_of(ORDINAL)
    with tarfile.open(TASKS.parent / row.archive) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / row.root
    [(_, call)] = ordinal_patching_pluralize(row)
    got = {}
    for who, text in (("gold", row.gold_files[call["path"]]), ("wrong", call["content"])):
        (root / call["path"]).write_text(text)
        got[who] = subprocess.run([sys.executable, "-c", SCRIPT], cwd=root / row.import_root, capture_output=True,
                                  text=True, check=True).stdout.strip()
    assert got == {"gold": "st deletions kine", "wrong": "st deletion kine"}


def test_scope_refuses_the_getter():
    row = row_of(ORDINAL)
    rel = row.deletion.targets[0].file
    text = row.gold_files[rel] + ESCAPE
    invalid = check_scope(row, {rel: text.encode()})
    print("G11 scope:", [i.text() for i in invalid])
    assert invalid


def test_patching_ordinal_is_not_paid():
    row = row_of(ORDINAL)
    played = play(row, ordinal_patching_pluralize(row))
    record("redteam11_getter", [played])
    print(f"G11 gold ordinal + pluralize patched through get_field: {played.line()}")
    assert played.reward == 0.0
