"""Red team: the sandbox shares the host's IPC namespace (`unshare --mount --pid --net`, no `--ipc`).

Code the agent runs through `run_tests` (its conftest.py, where ctypes is not refused: no audit hook outside
grading) creates a System V shared-memory segment, fills it and exits. The segment outlives the sandbox, its pid
namespace and the rollout: it is host memory that nothing frees (the sandbox uid is never reused on purpose), with
shmmax/shmall unlimited here. The same channel links concurrent sandboxes with each other and with the host.

The test asserts the defence (no segment of the sandbox's uid left after run_tests); while the attack works it
FAILS. It removes the segment it made (by id) either way.

Reproduce: FD_REDTEAM=1 uv run pytest tests/environments/feature_deletion/redteam/test_ipc_leak.py -q -s
"""

from __future__ import annotations

import json
import subprocess

from harness import TASKS, rows

from feature_deletion.rollout import ToolSession

SHM_CONFTEST = """
import ctypes
import os
def pytest_configure(config):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    size = {mb} << 20
    shmid = libc.shmget(0, ctypes.c_size_t(size), 0o1000 | 0o600)   # IPC_PRIVATE, IPC_CREAT
    addr = libc.shmat(shmid, None, 0)
    ctypes.memset(ctypes.c_void_p(addr), 1, size)                   # resident, not just reserved
    libc.shmdt(ctypes.c_void_p(addr))
    open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "shmid.txt"), "w").write(str(shmid))
"""


def _segments_of(uid: int) -> list[tuple[int, int]]:
    """(shmid, bytes) of the host's System V segments owned by `uid` (from /proc/sysvipc/shm)."""
    found = []
    with open("/proc/sysvipc/shm") as f:
        header = f.readline().split()
        for line in f:
            row = dict(zip(header, line.split()))
            if int(row["uid"]) == uid:
                found.append((int(row["shmid"]), int(row["size"])))
    return found


def test_run_tests_leaves_no_shared_memory_on_the_host():
    row = rows()[0]
    with ToolSession(row, TASKS.parent) as s:
        uid = s.workspace.sandbox.uid
        s.call("write_file", json.dumps({"path": "conftest.py", "content": SHM_CONFTEST.format(mb=64)}), 2)
        s.call("run_tests", json.dumps({"tests": [row.f2p[0]]}), 4)
        s.call("submit", "{}", 6)
        outcome = s.finish(6, 3)
    left = _segments_of(uid)  # the sandbox and the session are gone
    for shmid, _ in left:
        subprocess.run(["ipcrm", "-m", str(shmid)], check=False)
    print("reward", outcome.reward, "segments left on the host by sandbox uid", uid, ":", left)
    assert left == [], f"run_tests left {sum(b for _, b in left) >> 20} MiB of System V shared memory on the host"
