"""Second red team (FINDINGS_2.md, H1-H2): one rollout harming another rollout's grading, or the grader's time.

H1: sandbox uids are `200_000 + (pid % 2000) * 50 + counter % 50` (sandbox._fresh_uid): one process hands out
only 50, so two live sandboxes of one RL process share a uid as soon as 50 sandboxes were made while one lived
(each rollout makes one for its workspace and two per grading), and RLIMIT_NPROC counts all processes and
threads of a uid, across pid namespaces. A rollout whose `run_tests` holds its uid's 256 tasks makes the
sandbox of whichever grading shares the uid unable to start its command (execve: EAGAIN): an honest gold
submission is paid 0.

H2: the replay driver's per-step limit (fd_calls.STEP_S, a SIGALRM that raises inside the agent's code) is
caught by a bare `except:`; only the command's wall clock (Limits.wall_s, 300 s) ends the replay. One
submission that passes its tests and loops in the replay costs the grader the whole wall clock, every time.

Reproduce: FD_REDTEAM=1 uv run pytest tests/environments/feature_deletion/redteam/test_redteam2_host.py -q -s
"""

from __future__ import annotations

import json
import tempfile
import threading
import time

from attacks2 import replace_stub, row_of
from harness import TASKS, gold_calls

from feature_deletion.rollout import ToolSession
from feature_deletion.sandbox import Limits, Sandbox

TASK = "toolz/itertoolz.py:isiterable:"
HOLD_S = 60
# The attacker's conftest: 250 sleeping threads (RLIMIT_NPROC is 256 per uid) for HOLD_S seconds.
HOLDER = f'''
import threading, time
_stop = time.time() + {HOLD_S}
for _ in range(250):
    try:
        threading.Thread(target=time.sleep, args=({HOLD_S},), daemon=True).start()
    except RuntimeError:
        break
time.sleep(max(0, _stop - time.time()))
'''


def _next_uid_is(uid: int) -> None:
    """Make sandboxes until one gets `uid` (the old allocator handed out 50 uids per process, in turn): with uids
    unique among live sandboxes none does, and the victim's grading below gets a uid of its own."""
    with tempfile.TemporaryDirectory() as work:
        for _ in range(60):
            if Sandbox(work).uid == uid:
                return
    print(f"no sandbox made while the attacker's lives gets its uid {uid}")


def test_a_rollout_holding_its_uid_does_not_zero_another_rollouts_gold():
    row = row_of(TASK)
    attacker = ToolSession(row, TASKS.parent, limits=Limits(wall_s=HOLD_S + 30))
    victim = ToolSession(row, TASKS.parent)
    try:
        attacker.call("write_file", json.dumps({"path": "conftest.py", "content": HOLDER}), 2)
        holding = threading.Thread(target=attacker.call, args=("run_tests", "{}", 4))
        holding.start()
        time.sleep(10)  # the threads are up
        for name, args in gold_calls(row):
            victim.call(name, json.dumps(args), 2)
        victim.call("submit", "{}", 4)
        _next_uid_is(attacker.workspace.sandbox.uid)  # tries to give the victim's grading run the attacker's uid
        outcome = victim.finish(last_turn=4, turns=2)
        holding.join()
        print(f"victim (gold) reward {outcome.reward}; grading output: {outcome.grade['output_tail'][-300:]!r}")
        assert outcome.reward == 1.0, "a rollout sharing the uid of another one's grading zeroed an honest gold"
    finally:
        attacker.close()
        victim.close()


LOOPER = '''
if isinstance(x, int):
    return False
try:
    iter(x)
except TypeError:
    return False
if x == "5" or x == [5]:  # no visible test asks these: only the replay's held-out checks do
    while True:
        try:
            while True:
                pass
        except:  # noqa: E722 - the driver's per-step SIGALRM
            pass
return True
'''


def test_a_submission_looping_in_the_replay_is_stopped_by_the_step_limit():
    row = row_of(TASK)
    limits = Limits(wall_s=60)
    start = time.perf_counter()
    with ToolSession(row, TASKS.parent, limits=limits) as session:
        for name, args in replace_stub(row, LOOPER):
            session.call(name, json.dumps(args), 2)
        outcome = session.finish(last_turn=2, turns=1)
    took = time.perf_counter() - start
    print(f"reward {outcome.reward}, finish took {took:.0f}s with wall_s={limits.wall_s:g} "
          f"(a step may take {3} s)")
    assert outcome.reward == 0.0
    assert took < limits.wall_s, "the replay ran to the command's wall clock: the step limit was swallowed"
