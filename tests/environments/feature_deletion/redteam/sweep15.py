"""Red team 15's two forgeries (W15: a call counter past the drift walk's reach; W15n: in a NaN's payload) played on
every bundled task through `harness.play`, two at a time; prints each one paid and the maximum reward per attack.
Run from the repository root: `uv run python tests/environments/feature_deletion/redteam/sweep15.py`."""

import concurrent.futures as cf
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from harness import play, rows  # noqa: E402
import attacks15 as a  # noqa: E402

todo = []
for row in rows():
    for name, make in (("W15", a.counted_gold), ("W15n", a.nan_counted_gold)):
        calls = make(row)
        if calls is not None:
            todo.append((name, row, calls))


def one(t):
    name, row, calls = t
    return name, row.id, play(row, calls)


paid = {}
with cf.ThreadPoolExecutor(2) as ex:
    for name, rid, p in ex.map(one, todo):
        paid.setdefault(name, []).append(p.reward)
        if p.reward > 0:
            print("PAID", name, p.line(), flush=True)
for name, r in paid.items():
    print(name, len(r), "tasks played, max reward", max(r), "paid on", sum(x > 0 for x in r))
