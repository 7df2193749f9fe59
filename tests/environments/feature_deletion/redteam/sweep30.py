"""Red team 30 (FINDINGS_30.md): play attacks30's attacks on bundled tasks, one graded play at a time.

    nice -n 19 python tests/environments/feature_deletion/redteam/sweep30.py --all ID [ID ...]
      (every bundled task the attack applies to: results/redteam30_<ID>_all.jsonl)
    nice -n 19 python tests/environments/feature_deletion/redteam/sweep30.py ID [ID ...] -- TASK [TASK ...]
      (results/redteam30_<ID>_sweep.jsonl)
    nice -n 19 python tests/environments/feature_deletion/redteam/sweep30.py --tasks DIR/tasks.jsonl.xz ID [ID ...]
      (every task of a pre-check subset answered again with the current code, `fd-validate --answer-checks`, played
      from DIR: results/redteam30_<ID>_pre.jsonl)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import attacks30 as a  # noqa: E402
from _sweep import main  # noqa: E402

ATTACKS = {"E30": a.lenient_callback_gold, "E30c": a.callable_refused_gold, "X30": a.left_out_quiet_gold,
           "N30": a.positional_only_gold, "N30b": a.all_positional_only_gold, "C30": a.c0_gold,
           "Z30": a.negative_zero_gold, "Q30": a.equal_types_gold, "Y30": a.cyclic_gold,
           "A30": a.aliased_gold, "E30b": a.lenient_lookup_gold,
           "U30": a.users_mutable_gold, "M30": a.users_marked_gold,
           "S30": a.surrogate_gold, "O30": a.reordered_gold,
           "H30": a.rows_copied_gold}
DEFAULT = ["toolz-1.0.0/toolz/recipes.py:countby:body"]


if __name__ == "__main__":
    main("redteam30", ATTACKS, DEFAULT, sys.argv[1:])
