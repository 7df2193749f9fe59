"""Tenth red team, H10 (FINDINGS_10.md): at a8c7712 no sandbox can be made. `sandbox.draw_mounts` drew paths until
none clashed with "/" among others, but every absolute path lies under "/", so the loop never ended: `Sandbox()` (every
tool call that runs code, every grading, `check_start`, `probe_isolation`) hung the host process forever, at 100 % of
one core. The draw runs in a child with a deadline so that a hang FAILS here instead of hanging the suite.

Reproduce: FD_REDTEAM=1 nice -n 19 uv run pytest -n0 tests/environments/feature_deletion/redteam/test_redteam10_host.py
"""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
from feature_deletion import sandbox
paths = sandbox.draw_mounts(["/bin", "/usr/bin", "/etc"])
print(len(set(paths)))
"""


def test_mount_paths_are_drawn_in_finite_time():
    try:
        out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=True)
    except subprocess.TimeoutExpired:
        raise AssertionError("draw_mounts did not return within 60 s: every Sandbox() hangs") from None
    assert out.stdout.strip() == "3"
