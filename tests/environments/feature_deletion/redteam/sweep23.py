"""Red team 23 (FINDINGS_23.md): play attacks23's attacks on bundled tasks, one graded play at a time.

    nice -n 19 uv run python tests/environments/feature_deletion/redteam/sweep23.py --all ID [ID ...]
      (every bundled task the attack applies to: results/redteam23_<ID>_all.jsonl)
    nice -n 19 uv run python tests/environments/feature_deletion/redteam/sweep23.py ID [ID ...] -- TASK [TASK ...]
      (results/redteam23_<ID>_sweep.jsonl)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import attacks23 as a  # noqa: E402
from _sweep import main  # noqa: E402

ATTACKS = {"L23": a.nested_gold, "C23": a.odd_gold, "T23": a.punct_gold, "S23": a.full_cache_gold, "G23": a.lazy_gold,
           "S23b": a.full_cache_b_gold}
DEFAULT = ["inflection-0.5.1/inflection/__init__.py:pluralize:body"]


if __name__ == "__main__":
    main("redteam23", ATTACKS, DEFAULT, sys.argv[1:])
