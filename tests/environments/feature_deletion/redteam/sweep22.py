"""Red team 22 (FINDINGS_22.md): play attacks21's attacks on bundled tasks, one graded play at a time.

    nice -n 19 uv run python tests/environments/feature_deletion/redteam/sweep22.py --all ID [ID ...]
      (every bundled task the attack applies to: results/redteam22_<ID>_all.jsonl)
    nice -n 19 uv run python tests/environments/feature_deletion/redteam/sweep22.py ID [ID ...] -- TASK [TASK ...]
      (results/redteam22_<ID>_sweep.jsonl)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import attacks22 as a  # noqa: E402
from _sweep import main  # noqa: E402

ATTACKS = {"N22": a.natural_gold, "A22": a.abstract_gold, "O22": a.override_gold, "A22b": a.abstract_b_gold}
DEFAULT = ["inflection-0.5.1/inflection/__init__.py:pluralize:body"]


if __name__ == "__main__":
    main("redteam22", ATTACKS, DEFAULT, sys.argv[1:])
