"""Red team 18's stateless time bombs played through `harness.play` on every bundled task they apply to, one at a
time (the shared 2-core box): U18 (`attacks18u.uptime_gold`, the 34 tasks whose file reads `time.monotonic`) and O18
(`attacks18o.asserted_gold`, all 66). Records each play in results/redteam18_<ID>_sweep.jsonl and prints each one and
the totals. Run from the repository root:
`nice -n 19 uv run python tests/environments/feature_deletion/redteam/sweep18uo.py [U18] [O18]`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from harness import play, record, rows  # noqa: E402
import attacks18o  # noqa: E402
import attacks18u  # noqa: E402

ATTACKS = {"U18": attacks18u.uptime_gold, "O18": attacks18o.asserted_gold}
for name in sys.argv[1:] or list(ATTACKS):
    todo = [(row, calls) for row in rows() if (calls := ATTACKS[name](row)) is not None]
    print(name, len(todo), "tasks apply", flush=True)
    rewards = []
    for row, calls in todo:
        p = play(row, calls)
        record(f"redteam18_{name}_sweep", [p])
        rewards.append(p.reward)
        state = (p.verdict or {}).get("state")
        print(("PAID " if p.reward > 0 else "ZERO ") + p.line() + (f"  state={state}" if state else ""), flush=True)
    print(name, len(rewards), "tasks played, max reward", max(rewards), "paid on", sum(x > 0 for x in rewards),
          "at 1.0 on", sum(x == 1.0 for x in rewards), flush=True)
