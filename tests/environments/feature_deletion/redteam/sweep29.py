"""Red team 29 (FINDINGS_29.md): play attacks29's attacks on bundled tasks, one graded play at a time.

    nice -n 19 python tests/environments/feature_deletion/redteam/sweep29.py --all ID [ID ...]
      (every bundled task the attack applies to: results/redteam29_<ID>_all.jsonl)
    nice -n 19 python tests/environments/feature_deletion/redteam/sweep29.py ID [ID ...] -- TASK [TASK ...]
      (results/redteam29_<ID>_sweep.jsonl)
    nice -n 19 python tests/environments/feature_deletion/redteam/sweep29.py --tasks DIR/tasks.jsonl.xz ID [ID ...]
      (every task of a pre-check subset answered again with the current code, `fd-validate --answer-checks`, played
      from DIR: results/redteam29_<ID>_pre.jsonl)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import attacks29 as a  # noqa: E402
from _sweep import main  # noqa: E402

ATTACKS = {"X29": a.lookup_quiet_gold, "F29": a.first_quiet_gold, "C29": a.closing_gold, "C29c": a.read_ahead_gold,
           "L29": a.latin_in_word_gold, "L29c": a.any_latin_gold, "I29": a.nested_iterator_gold,
           "K29": a.text_tuple_keys_gold, "P29": a.consumed_lazily_gold, "P29c": a.consumed_gold}
DEFAULT = ["toolz-1.0.0/toolz/itertoolz.py:frequencies:body"]


if __name__ == "__main__":
    main("redteam29", ATTACKS, DEFAULT, sys.argv[1:])
