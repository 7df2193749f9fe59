"""Red team 23 (FINDINGS_23.md): play attacks23.s attacks on bundled tasks, one graded play at a time.

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
from _rt14_witness import graded  # noqa: E402
from harness import play, record, rows  # noqa: E402

ATTACKS = {"L23": a.nested_gold, "C23": a.odd_gold, "T23": a.punct_gold, "S23": a.full_cache_gold, "G23": a.lazy_gold, "S23b": a.full_cache_b_gold}
DEFAULT = ["inflection-0.5.1/inflection/__init__.py:pluralize:body"]


def sweep(attack_id: str) -> None:
    """Every bundled task the attack applies to, totals printed at the end."""
    todo = [(row, calls) for row in rows() if (calls := ATTACKS[attack_id](row)) is not None]
    print(attack_id, len(todo), "tasks apply", flush=True)
    rewards = []
    for row, calls in todo:
        p = play(row, calls)
        record(f"redteam23_{attack_id}_all", [p])
        rewards.append(p.reward)
        print(("PAID " if p.reward > 0 else "ZERO ") + p.line(), flush=True)
    print(attack_id, len(rewards), "tasks played, paid on", sum(x > 0 for x in rewards), "at 1.0 on",
          sum(x == 1.0 for x in rewards), flush=True)


def main(argv: list[str]) -> None:
    if argv[:1] == ["--all"]:
        for attack_id in argv[1:]:
            sweep(attack_id)
        return
    ids, tasks = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, DEFAULT)
    for attack_id in ids:
        for task in tasks:
            try:
                graded(task, ATTACKS[attack_id], f"redteam23_{attack_id}_sweep")
            except AssertionError:
                print(f"{attack_id} {task}: does not apply", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
