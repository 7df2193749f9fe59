"""Red team 25 (FINDINGS_25.md): play attacks24's attacks on bundled tasks, one graded play at a time.

    nice -n 19 uv run python tests/environments/feature_deletion/redteam/sweep25.py --all ID [ID ...]
      (every bundled task the attack applies to: results/redteam25_<ID>_all.jsonl)
    nice -n 19 uv run python tests/environments/feature_deletion/redteam/sweep25.py ID [ID ...] -- TASK [TASK ...]
      (results/redteam25_<ID>_sweep.jsonl)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import attacks25 as a  # noqa: E402
from _sweep import main  # noqa: E402

ATTACKS = {"F25": a.bound_gold, "M25": a.marks_gold, "U25": a.spaces_gold, "O25": a.functools_gold}
DEFAULT = ["inflection-0.5.1/inflection/__init__.py:pluralize:body"]


if __name__ == "__main__":
    main("redteam25", ATTACKS, DEFAULT, sys.argv[1:])
