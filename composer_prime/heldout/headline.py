"""The run's closing lines, read from its final eval record (kept free of heavy imports: `rl` prints them)."""

from __future__ import annotations


def headline(record: dict) -> list[str]:
    """The run's closing lines from its final eval record: the task's verdict first, the shaped reward beside it,
    and a warning when the reward rose while the verdict fell (the policy learned the reward, not the task)."""
    verdict = record.get("eval/verdict", "solved")
    solved = (f"held-out {verdict} {record['eval/solved_start']:.3f} -> {record['eval/solved_end']:.3f} "
              f"({record['eval/solved_delta']:+.3f})")
    if "eval/greedy/solved_end" in record:
        solved += f", greedy {record['eval/greedy/solved_start']:.3f} -> {record['eval/greedy/solved_end']:.3f}"
    reward = (f"reward {record['eval/reward_start']:.3f} -> {record['eval/reward_end']:.3f} "
              f"({record['eval/delta']:+.3f})")
    length = f"; answer length {record['eval/answer_len/ratio']:.2f}x target" if "eval/answer_len/ratio" in record else ""
    lines = [f"{solved}; {reward}{length}"]
    if record["eval/delta"] > 0 and record["eval/solved_delta"] < 0:
        lines.append(f"warning: held-out reward rose ({record['eval/delta']:+.3f}) while {verdict} fell "
                     f"({record['eval/solved_delta']:+.3f}): the policy may be learning the reward's loophole, "
                     "not the task; read its answers in traces/")
    return lines
