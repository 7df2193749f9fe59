"""Red team 24 (FINDINGS_24.md): play attacks24's attacks on bundled tasks, one graded play at a time.

    nice -n 19 uv run python tests/environments/feature_deletion/redteam/sweep24.py --all ID [ID ...]
      (every bundled task the attack applies to: results/redteam24_<ID>_all.jsonl)
    nice -n 19 uv run python tests/environments/feature_deletion/redteam/sweep24.py ID [ID ...] -- TASK [TASK ...]
      (results/redteam24_<ID>_sweep.jsonl)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import attacks24 as a  # noqa: E402
from _sweep import main  # noqa: E402

ATTACKS = {"W24": a.wide_gold, "K24": a.control_gold, "V24": a.values_gold, "D24": a.deep_gold, "B24": a.big_gold}
DEFAULT = ["inflection-0.5.1/inflection/__init__.py:pluralize:body"]


if __name__ == "__main__":
    main("redteam24", ATTACKS, DEFAULT, sys.argv[1:])
