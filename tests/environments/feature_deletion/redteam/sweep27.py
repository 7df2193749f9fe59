"""Red team 27 (FINDINGS_27.md): play attacks27's attacks on bundled tasks, one graded play at a time.

    nice -n 19 python tests/environments/feature_deletion/redteam/sweep27.py --all ID [ID ...]
      (every bundled task the attack applies to: results/redteam27_<ID>_all.jsonl)
    nice -n 19 python tests/environments/feature_deletion/redteam/sweep27.py ID [ID ...] -- TASK [TASK ...]
      (results/redteam27_<ID>_sweep.jsonl)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import attacks27 as a  # noqa: E402
from _sweep import main  # noqa: E402

ATTACKS = {"I27": a.iterators_gold, "I27b": a.iterators_b_gold, "M27": a.users_taken_gold,
           "L27": a.large_taken_gold, "G27": a.range_gold, "F27": a.frozen_gold, "R27": a.records_gold,
           "B27": a.bytes_items_gold, "N27": a.nan_gold, "M27c": a.users_refused_gold, "L27c": a.large_refused_gold}
DEFAULT = ["toolz-1.0.0/toolz/itertoolz.py:frequencies:body"]


if __name__ == "__main__":
    main("redteam27", ATTACKS, DEFAULT, sys.argv[1:])
