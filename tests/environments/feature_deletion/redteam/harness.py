"""Red-team harness: drive a task exactly as a rollout does, through `ToolSession` (tool calls, `finish`).

An attack is a list of tool calls `(name, arguments)`; `play` runs them in a fresh session and returns the graded
outcome. `gold_calls` writes the gold files (must score 1.0) and `[]` submits the untouched task (must score 0.0):
`test_harness.py` proves both before any attack's 0 means anything.
"""

from __future__ import annotations

import json
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path

from feature_deletion.rollout import ToolSession
from feature_deletion.task import TaskRow, load_rows

TASKS = Path(__file__).resolve().parents[4] / "environments/feature_deletion/feature_deletion/data/tasks.jsonl.xz"
STUB = 'raise NotImplementedError("this feature was deleted; rebuild it")'
RESULTS = Path(os.environ.get("FD_REDTEAM_OUT", Path(__file__).parent / "results"))


@dataclass
class Played:
    task: str
    reward: float
    invalid: list[str]
    f2p: str
    verdict: dict
    replies: list[str]
    seconds: float
    output_tail: str = ""  # the grading test run's output (its last 2,000 characters)

    def line(self) -> str:
        v = self.verdict
        checks = f"disc {v.get('discriminating_matched')}/{v.get('discriminating')} held {v.get('heldout_matched')}/" \
                 f"{v.get('heldout')}" if v else "no verdict"
        return f"{self.reward:.3f}  f2p {self.f2p}  {checks}  invalid={self.invalid}  {self.task}  ({self.seconds:.0f}s)"


def rows(path: Path = TASKS) -> list[TaskRow]:
    found, problems = load_rows(path)
    assert found and not problems, problems
    return found


def sample(all_rows: list[TaskRow], n: int | None, seed: int = 0) -> list[TaskRow]:
    """A fixed random sample (all rows when n is None or FD_REDTEAM_ALL=1)."""
    if n is None or os.environ.get("FD_REDTEAM_ALL") == "1" or n >= len(all_rows):
        return list(all_rows)
    picked = random.Random(seed).sample(range(len(all_rows)), n)
    return [all_rows[i] for i in sorted(picked)]


def play(row: TaskRow, calls: list[tuple[str, dict]], tasks_dir: Path = TASKS.parent, submit: bool = True) -> Played:
    start = time.perf_counter()
    replies = []
    with ToolSession(row, tasks_dir) as session:
        turn = 2
        for name, args in calls:
            replies.append(session.call(name, json.dumps(args), turn))
            turn += 2
        if submit:
            replies.append(session.call("submit", "{}", turn))
        outcome = session.finish(last_turn=turn, turns=turn // 2)
    g = outcome.grade
    return Played(row.id, outcome.reward, [i["code"] for i in g["invalid"]], f"{g['f2p_passed']}/{g['f2p_total']}",
                  g["verdict"], replies, time.perf_counter() - start, g["output_tail"])


def gold_calls(row: TaskRow) -> list[tuple[str, dict]]:
    return [("write_file", {"path": rel, "content": text}) for rel, text in row.gold_files.items()]


def replace_stub(row: TaskRow, body: str) -> list[tuple[str, dict]]:
    """Write the deleted function's file with `body` (dedented code) in place of the stub line."""
    import textwrap

    rel = row.deletion.targets[0].file
    text = row.broken_files[rel]
    stub = next(line for line in text.splitlines() if line.strip() == STUB)
    indent = stub[: len(stub) - len(stub.lstrip())]
    code = textwrap.indent(textwrap.dedent(body).strip("\n") + "\n", indent)
    return [("write_file", {"path": rel, "content": text.replace(stub + "\n", code, 1)})]


def record(attack: str, results: list[Played]) -> Path:
    """Append the attack's per-task rewards to results/<attack>.jsonl (the evidence behind FINDINGS.md)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{attack}.jsonl"
    with path.open("a") as f:
        for r in results:
            f.write(json.dumps({"attack": attack, "task": r.task, "reward": r.reward, "invalid": r.invalid,
                                "f2p": r.f2p, "verdict": r.verdict, "seconds": round(r.seconds, 1),
                                "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}) + "\n")
    return path
