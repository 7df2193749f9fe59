"""Red team: tool calls that hang the host process serving the agent's tools (the rollout, its `finish`, the RL step).

Each attack is plain tool calls through `ToolSession`, run in a child process with a deadline so that this test
itself never hangs. The tests assert the defence (the call returns within its deadline): while the attack works
they FAIL, which is the point.

- `search_redos`: `search` compiles the agent's regex and runs it on the host, in the tool server's own process,
  over files the agent wrote; a catastrophically backtracking pattern (`^(a|a)*$` on a line of `a`s ending in
  `!`) costs 2^n steps with the GIL held: n = 40 is days.
- `write_file_fifo`: code the agent runs through `run_tests` (a conftest.py) makes a named pipe at a source
  path; `write_file` on that path opens it for writing on the host, which blocks until a reader opens it: never.

Reproduce: FD_REDTEAM=1 uv run pytest tests/environments/feature_deletion/redteam/test_host_hang.py -q
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HERE = Path(__file__).parent
DEADLINE_S = 60  # a call that should take milliseconds; far more than a loaded machine needs

CHILD = textwrap.dedent("""
    import json, sys, time
    sys.path.insert(0, {here!r})
    from harness import rows
    from feature_deletion.rollout import ToolSession
    row = rows()[{index}]
    calls = json.loads(sys.argv[1])
    with ToolSession(row, {tasks_dir!r}) as s:
        for i, (name, args) in enumerate(calls):
            t = time.perf_counter()
            print("CALL", name, flush=True)
            out = s.call(name, json.dumps(args), 2 * i + 2)
            print("DONE", name, round(time.perf_counter() - t, 2), out[:200].replace(chr(10), " | "), flush=True)
""")


def run_calls(calls: list, index: int = 0, deadline: float = DEADLINE_S) -> tuple[bool, str]:
    """(finished within the deadline, output) of a child process making the tool calls."""
    from harness import TASKS

    code = CHILD.format(here=str(HERE), index=index, tasks_dir=str(TASKS.parent))
    proc = subprocess.Popen([sys.executable, "-c", code, json.dumps(calls)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=deadline)
        return True, out
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        return False, out


def redos_calls(n: int) -> list:
    return [("write_file", {"path": "notes.txt", "content": "a" * n + "!\n"}),
            ("search", {"pattern": "^(a|a)*$", "path": "notes.txt"})]


def test_search_redos_scales_exponentially_then_hangs():
    """Measured on the task's own tool server: each extra character doubles the time of one `search` call."""
    times = {}
    for n in (16, 18, 20):
        done, out = run_calls(redos_calls(n))
        assert done, out
        line = next(ln for ln in out.splitlines() if ln.startswith("DONE search"))
        times[n] = float(line.split()[2])
    print("search seconds by n:", times)
    # The defence: a bounded regex engine or a deadline keeps n = 40 (2^20 times n = 20) within DEADLINE_S.
    done, out = run_calls(redos_calls(40))
    assert done, f"search with a 41-character line hung the tool server past {DEADLINE_S}s: {times}\n{out[-500:]}"


FIFO_CONFTEST = """
import os
def pytest_configure(config):
    path = os.path.join({root}, {target!r})
    if os.path.exists(path):
        os.remove(path)
    os.mkfifo(path)
"""


def test_write_file_on_a_fifo_made_by_run_tests_hangs():
    from harness import rows

    row = rows()[0]
    target = row.deletion.targets[0].file
    calls = [("write_file", {"path": "conftest.py", "content": FIFO_CONFTEST.format(root="os.path.dirname(os.path.abspath(__file__))", target=target)}),
             ("run_tests", {"tests": [row.f2p[0]]}),
             ("list_dir", {"path": str(Path(target).parent)}),
             ("write_file", {"path": target, "content": row.gold_files[target]})]
    done, out = run_calls(calls, index=0)
    assert "CALL write_file" in out.splitlines()[-1] or done, out
    assert done, f"write_file on a named pipe planted by run_tests blocked the tool server past {DEADLINE_S}s\n{out[-800:]}"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-s"]))
