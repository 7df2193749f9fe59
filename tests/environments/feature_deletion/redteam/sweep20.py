"""Red team 20 (FINDINGS_20.md): play attacks20's attacks on bundled tasks, one graded play at a time.

    nice -n 19 uv run python tests/environments/feature_deletion/redteam/sweep20.py --all ID [ID ...]
      (every bundled task the attack applies to: results/redteam20_<ID>_all.jsonl)
    nice -n 19 uv run python tests/environments/feature_deletion/redteam/sweep20.py ID [ID ...] -- TASK [TASK ...]
      (results/redteam20_<ID>_sweep.jsonl)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import attacks20 as a  # noqa: E402
from _sweep import main  # noqa: E402

ATTACKS = {"Z20": a.sized_gold, "Y20": a.subclass_gold}
DEFAULT = ["inflection-0.5.1/inflection/__init__.py:pluralize:body"]


if __name__ == "__main__":
    main("redteam20", ATTACKS, DEFAULT, sys.argv[1:])
