"""Play attacks30's IDs on some tasks of a pre-check subset: run_some.py DIR/tasks.jsonl.xz TASK,TASK ID [ID ...]"""
import sys
from pathlib import Path
sys.path.insert(0, "/work/wt/rt30/tests/environments/feature_deletion/redteam")
from sweep30 import ATTACKS  # noqa: E402
from harness import play, record, rows  # noqa: E402
path, want, ids = Path(sys.argv[1]), sys.argv[2].split(","), sys.argv[3:]
for row in rows(path):
    if want != ["all"] and not any(f":{w}:" in row.id for w in want):
        continue
    for attack_id in ids:
        calls = ATTACKS[attack_id](row)
        if calls is None:
            print(f"{attack_id} {row.id}: does not apply", flush=True)
            continue
        p = play(row, calls, tasks_dir=path.parent)
        record(f"redteam30_{attack_id}_pre", [p])
        print(f"{attack_id} {p.line()}", flush=True)
