"""The command line red teams 19-23's `sweepNN.py` share: play an attack on bundled tasks, one graded play at a time.

    sweepNN.py --all ID [ID ...]
      (every bundled task the attack applies to: results/redteamNN_<ID>_all.jsonl)
    sweepNN.py ID [ID ...] -- TASK [TASK ...]
      (those tasks, the script's DEFAULT without `--`: results/redteamNN_<ID>_sweep.jsonl)
    sweepNN.py --tasks DIR/tasks.jsonl.xz ID [ID ...]
      (every task of a pre-check subset answered again with the current code, played from DIR:
      results/redteamNN_<ID>_pre.jsonl; red teams 29-31)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from _rt14_witness import graded
from harness import play, record, rows


def sweep(name: str, attack_id: str, attack: Callable) -> None:
    """Every bundled task the attack applies to, totals printed at the end."""
    todo = [(row, calls) for row in rows() if (calls := attack(row)) is not None]
    print(attack_id, len(todo), "tasks apply", flush=True)
    rewards = []
    for row, calls in todo:
        p = play(row, calls)
        record(f"{name}_{attack_id}_all", [p])
        rewards.append(p.reward)
        print(("PAID " if p.reward > 0 else "ZERO ") + p.line(), flush=True)
    print(attack_id, len(rewards), "tasks played, paid on", sum(x > 0 for x in rewards), "at 1.0 on",
          sum(x == 1.0 for x in rewards), flush=True)


def pre(name: str, attacks: dict[str, Callable], path: Path, ids: list[str]) -> None:
    """Each attack on every task of the subset at `path` (its archives and checks beside it)."""
    for row in rows(path):
        for attack_id in ids:
            calls = attacks[attack_id](row)
            if calls is None:
                print(f"{attack_id} {row.id}: does not apply", flush=True)
                continue
            p = play(row, calls, tasks_dir=path.parent)
            record(f"{name}_{attack_id}_pre", [p])
            print(f"{attack_id} {p.line()}", flush=True)


def main(name: str, attacks: dict[str, Callable], default: list[str], argv: list[str]) -> None:
    """`name`: the results' prefix (`redteam23`); `attacks`: id -> attack; `default`: the tasks played without `--`."""
    if argv[:1] == ["--tasks"]:
        pre(name, attacks, Path(argv[1]), argv[2:])
        return
    if argv[:1] == ["--all"]:
        for attack_id in argv[1:]:
            sweep(name, attack_id, attacks[attack_id])
        return
    ids, tasks = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, default)
    for attack_id in ids:
        for task in tasks:
            try:
                graded(task, attacks[attack_id], f"{name}_{attack_id}_sweep")
            except AssertionError:
                print(f"{attack_id} {task}: does not apply", flush=True)
