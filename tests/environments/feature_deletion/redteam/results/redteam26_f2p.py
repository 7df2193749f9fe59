import sys, tarfile, subprocess, tempfile, pathlib
sys.path.insert(0, 'tests/environments/feature_deletion/redteam')
import attacks26 as a
from attacks2 import row_of
from harness import TASKS
task = sys.argv[1]
row = row_of(task)
d = pathlib.Path(tempfile.mkdtemp())
with tarfile.open(TASKS.parent / row.archive) as tar: tar.extractall(d, filter="data")
root = d / row.root
[(_, call)] = getattr(a, sys.argv[2])(row)
(root / call["path"]).write_text(call["content"])
import os; r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *sys.argv[3:]], cwd=root, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(root / (row.import_root or ""))})
print(r.stdout[-3000:], r.stderr[-2000:])
