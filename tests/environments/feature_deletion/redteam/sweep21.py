"""Red team 21 (FINDINGS_21.md): play attacks21's attacks on bundled tasks, one graded play at a time.

    nice -n 19 uv run python tests/environments/feature_deletion/redteam/sweep21.py --all ID [ID ...]
      (every bundled task the attack applies to: results/redteam21_<ID>_all.jsonl)
    nice -n 19 uv run python tests/environments/feature_deletion/redteam/sweep21.py ID [ID ...] -- TASK [TASK ...]
      (results/redteam21_<ID>_sweep.jsonl)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import attacks21 as a  # noqa: E402
from _sweep import main  # noqa: E402

ATTACKS = {"P21": a.long_gold, "D21": a.mapping_gold, "C21": a.container_gold, "F21": a.full_gold,
           "S21": a.keeps_type_gold, "F21b": a.full_count_gold}
DEFAULT = ["inflection-0.5.1/inflection/__init__.py:pluralize:body"]


if __name__ == "__main__":
    main("redteam21", ATTACKS, DEFAULT, sys.argv[1:])
