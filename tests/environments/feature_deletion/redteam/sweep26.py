"""Red team 26 (FINDINGS_26.md): play attacks26's attacks on bundled tasks, one graded play at a time.

    nice -n 19 uv run python tests/environments/feature_deletion/redteam/sweep26.py --all ID [ID ...]
      (every bundled task the attack applies to: results/redteam26_<ID>_all.jsonl)
    nice -n 19 uv run python tests/environments/feature_deletion/redteam/sweep26.py ID [ID ...] -- TASK [TASK ...]
      (results/redteam26_<ID>_sweep.jsonl)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import attacks26 as a  # noqa: E402
from _sweep import main  # noqa: E402

ATTACKS = {"R26": a.objects_gold, "R26b": a.objects_b_gold, "Z26": a.aware_gold, "P26": a.symbols_gold}
DEFAULT = ["toolz-1.0.0/toolz/itertoolz.py:frequencies:body"]


if __name__ == "__main__":
    main("redteam26", ATTACKS, DEFAULT, sys.argv[1:])
