"""Red team: is gold reachable from inside the sandbox? The agent's conftest.py (run by `run_tests`, no audit hook)
walks the sandbox's whole filesystem and reports every file whose text holds a deleted definition's gold source
line, every copy of the four bundled packages and of the tasks file, and the environment. The test asserts none is
found (it PASSES while the sandbox hides gold; a hit makes it FAIL).

Reproduce: FD_REDTEAM=1 uv run pytest tests/environments/feature_deletion/redteam/test_gold_visible.py -q -s
"""

from __future__ import annotations

import json

from harness import TASKS, rows

from feature_deletion.rollout import ToolSession

PROBE = r'''
import os, json
NEEDLES = {needles!r}
def pytest_configure(config):
    hits, seen, dirs = [], 0, 0
    here = os.path.dirname(os.path.abspath(__file__))  # the workspace, wherever the sandbox drew it
    for top in os.listdir("/"):
        if top in ("proc", "sys", "dev"):
            continue
        for root, ds, fs in os.walk("/" + top):
            if root == here:
                ds[:] = []
                continue
            dirs += 1
            for f in fs:
                p = os.path.join(root, f)
                seen += 1
                low = p.lower()
                if any(k in low for k in ("inflection", "toolz", "cachetools", "more_itertools", "tasks.jsonl")):
                    hits.append(["name", p])
                try:
                    if os.path.getsize(p) > 4 << 20 or os.path.islink(p):
                        continue
                    data = open(p, "rb").read()
                except OSError:
                    continue
                for n in NEEDLES:
                    if n.encode() in data:
                        hits.append(["text", p, n[:40]])
    procs = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                procs.append(open(f"/proc/{{pid}}/cmdline", "rb").read().replace(b"\0", b" ").decode()[:300])
            except OSError:
                pass
    open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "probe.json"), "w").write(json.dumps({{"seen": seen, "dirs": dirs, "hits": hits,
        "env": dict(os.environ), "procs": procs}}))
'''


def _needles(row) -> list[str]:
    """Distinctive gold lines of the deleted definitions (absent from the broken file)."""
    out = []
    for rel, gold in row.gold_files.items():
        broken = set(row.broken_files.get(rel, "").splitlines())
        out += [ln.strip() for ln in gold.splitlines() if len(ln.strip()) > 25 and ln not in broken][:5]
    return out


def test_no_gold_copy_is_visible_in_the_sandbox():
    found = {}
    picked = {r.id.split("-")[0]: r for r in rows()}  # one task of each package
    for package, row in picked.items():
        with ToolSession(row, TASKS.parent) as s:
            s.call("write_file", json.dumps({"path": "conftest.py", "content": PROBE.format(needles=_needles(row))}), 2)
            s.call("run_tests", json.dumps({"tests": [row.f2p[0]]}), 4)
            probe = json.loads((s.workspace.root / "probe.json").read_text())
        print(package, "files seen", probe["seen"], "hits", probe["hits"][:10])
        print("  pid 1 cmdline leaks host paths:", [p[:160] for p in probe["procs"][:2]])
        assert probe["seen"] > 1000  # the probe really walked the sandbox
        if probe["hits"]:
            found[package] = probe["hits"]
    assert found == {}, found
