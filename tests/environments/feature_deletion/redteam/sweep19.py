"""Red team 19 (FINDINGS_19.md): play attacks19's attacks on bundled tasks, one graded play at a time, each recorded
in results/redteam19_<ID>_sweep.jsonl.

    nice -n 19 uv run python tests/environments/feature_deletion/redteam/sweep19.py ID [ID ...] [-- TASK ...]
    nice -n 19 uv run python tests/environments/feature_deletion/redteam/sweep19.py --all ID [ID ...]
      (every bundled task the attack applies to: results/redteam19_<ID>_all.jsonl)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import attacks19 as a  # noqa: E402
from _sweep import main  # noqa: E402

ATTACKS = {"I19": a.digits_gold, "X19": a.dev_gold, "B19": a.bytes_gold, "R19": a.deep_gold, "K19": a.seeded_gold,
           "N19": a.booted_gold, "C19": a.both_gold, "D19": a.docless_gold, "W19": a.strict_gold,
           "F19": a.localised_gold, "S19": a.sited_gold, "W19b": a.strict_elsewhere_gold}
DEFAULT = ["inflection-0.5.1/inflection/__init__.py:ordinal:def"]


if __name__ == "__main__":
    main("redteam19", ATTACKS, DEFAULT, sys.argv[1:])
