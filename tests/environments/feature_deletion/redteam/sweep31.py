"""Red team 31 (FINDINGS_31.md): play attacks31's attacks on bundled tasks, one graded play at a time.

    nice -n 19 python tests/environments/feature_deletion/redteam/sweep31.py --all ID [ID ...]
      (every bundled task the attack applies to: results/redteam31_<ID>_all.jsonl)
    nice -n 19 python tests/environments/feature_deletion/redteam/sweep31.py ID [ID ...] -- TASK [TASK ...]
      (results/redteam31_<ID>_sweep.jsonl)
    nice -n 19 python tests/environments/feature_deletion/redteam/sweep31.py --tasks DIR/tasks.jsonl.xz ID [ID ...]
      (every task of a pre-check subset answered again with the current code, `fd-validate --answer-checks`, played
      from DIR: results/redteam31_<ID>_pre.jsonl)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import attacks30  # noqa: E402
import attacks31 as a  # noqa: E402
from _sweep import main  # noqa: E402

ATTACKS = {"C31": a.callback_copies_gold, "K31": a.answer_copies_gold, "B31": a.read_whole_gold,
           "G31": a.reentry_gold, "R31": a.unsized_gold, "B31c": a.generator_refused_gold,
           "E31": a.errors_remade_gold, "G31b": a.reentry_later_gold, "F31": a.callable_marked_gold,
           "R31b": a.users_iterator_gold, "P31": a.prefetched_gold,
           "C31c": attacks30.callable_refused_gold}  # E30c, callables refused: the control for C31, K31, F31, G31b
DEFAULT = ["toolz-1.0.0/toolz/recipes.py:countby:body"]


if __name__ == "__main__":
    main("redteam31", ATTACKS, DEFAULT, sys.argv[1:])
