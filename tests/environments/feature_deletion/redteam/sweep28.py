"""Red team 28 (FINDINGS_28.md): play attacks27's attacks on bundled tasks, one graded play at a time.

    nice -n 19 python tests/environments/feature_deletion/redteam/sweep28.py --all ID [ID ...]
      (every bundled task the attack applies to: results/redteam28_<ID>_all.jsonl)
    nice -n 19 python tests/environments/feature_deletion/redteam/sweep28.py ID [ID ...] -- TASK [TASK ...]
      (results/redteam28_<ID>_sweep.jsonl)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import attacks28 as a  # noqa: E402
from _sweep import main  # noqa: E402

ATTACKS = {"X28": a.quiet_gold, "X28c": a.iterators_refused_gold, "L28": a.western_gold, "E28": a.exponent_gold,
           "E28b": a.exponent_b_gold, "O28": a.operator_gold, "I28": a.left_out_gold,
           "M28": a.items_taken_gold, "M28c": a.items_taken_before_gold, "R28": a.items_taken_before_gold,
           "K28": a.tuple_keys_gold}
DEFAULT = ["toolz-1.0.0/toolz/itertoolz.py:frequencies:body"]


if __name__ == "__main__":
    main("redteam28", ATTACKS, DEFAULT, sys.argv[1:])
