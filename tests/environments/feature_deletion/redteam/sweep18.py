"""Red team 18's task-agnostic attack played on every bundled task it applies to through `harness.play`, one at a
time (resumable: tasks already in the record are not played again): P18 (a call counter in the permutation of a new private list of empty lists); records each play in
results/redteam18_P18_sweep.jsonl and prints each one paid and the maximum reward. Run from the repository root:
`nice -n 19 uv run python tests/environments/feature_deletion/redteam/sweep18.py [LIMIT]`."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from harness import play, record, rows  # noqa: E402
import attacks18 as a  # noqa: E402

LIMIT = int(sys.argv[1]) if len(sys.argv) > 1 else a.LIMIT
NAME = "P18" if LIMIT == a.LIMIT else f"P18_limit{LIMIT}"
OUT = Path(__file__).parent / "results" / f"redteam18_{NAME}_sweep.jsonl"
done = {json.loads(line)["task"]: json.loads(line)["reward"] for line in OUT.read_text().splitlines()} \
    if OUT.exists() else {}  # resumable: tasks already played are counted, not played again
rewards = list(done.values())
for row in rows():
    if row.id in done:
        continue
    calls = a.permutation_counted_gold(row, LIMIT)
    if calls is None:
        print("SKIP", row.id, flush=True)
        continue
    p = play(row, calls)
    record(f"redteam18_{NAME}_sweep", [p])
    rewards.append(p.reward)
    print(("PAID " if p.reward > 0 else "ZERO ") + p.line(), flush=True)
print(NAME, len(rewards), "tasks played, max reward", max(rewards), "paid on", sum(x > 0 for x in rewards),
      "at 1.0 on", sum(x == 1.0 for x in rewards))
