"""Red team 16's task-agnostic attacks played on every bundled task they apply to through `harness.play`, two at a
time: H16 (a call counter in a big int, read by the drift walk modulo 2**61 - 1; every task) or V16 (gold plus a
`UserWarning` at every call, the tasks whose file warns) or I16 (a call counter in the instance, the tasks with a
deleted method); records each play in results/redteam16_<name>_sweep.jsonl
and prints each one paid and the maximum reward. Run from the repository root:
`nice -n 19 uv run python tests/environments/feature_deletion/redteam/sweep16.py H16` (or `V16`, `I16`)."""

import concurrent.futures as cf
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from harness import play, record, rows  # noqa: E402
import attacks16 as a  # noqa: E402

NAME = sys.argv[1] if len(sys.argv) > 1 else "H16"
MAKE = {"H16": a.bigint_counted_gold, "V16": a.warning_gold, "I16": a.instance_counted_gold}[NAME]
todo = [(row, calls) for row in rows() if (calls := MAKE(row)) is not None]


def one(t):
    row, calls = t
    return play(row, calls)


rewards = []
with cf.ThreadPoolExecutor(2) as ex:
    for p in ex.map(one, todo):
        record(f"redteam16_{NAME}_sweep", [p])
        rewards.append(p.reward)
        print(("PAID " if p.reward > 0 else "ZERO ") + p.line(), flush=True)
print(NAME, len(rewards), "tasks played, max reward", max(rewards), "paid on", sum(x > 0 for x in rewards),
      "at 1.0 on", sum(x == 1.0 for x in rewards))
