"""Red team 17's task-agnostic attack N17 (a call counter in the names of an object's attributes,
`attacks17.named_counted_gold`) played through `harness.play` on every bundled task it applies to (a deleted method
taking `self`), one at a time (the shared 2-core box); records each play in results/redteam17_N17_sweep.jsonl and
prints each one, paid or not, and the totals. Run from the repository root:
`nice -n 19 uv run python tests/environments/feature_deletion/redteam/sweep17.py`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from harness import play, record, rows  # noqa: E402
import attacks17 as a  # noqa: E402

todo = [(row, calls) for row in rows() if (calls := a.named_counted_gold(row)) is not None]
print(len(todo), "tasks apply", flush=True)
rewards = []
for row, calls in todo:
    p = play(row, calls)
    record("redteam17_N17_sweep", [p])
    rewards.append(p.reward)
    state = (p.verdict or {}).get("state")
    print(("PAID " if p.reward > 0 else "ZERO ") + p.line() + (f"  state={state}" if state else ""), flush=True)
print("N17", len(rewards), "tasks played, max reward", max(rewards), "paid on", sum(x > 0 for x in rewards),
      "at 1.0 on", sum(x == 1.0 for x in rewards))
