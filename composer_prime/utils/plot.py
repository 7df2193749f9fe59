"""The end-of-run picture from metrics.jsonl: the task's verdict, the reward, answer length (or, for a tool
environment, turns and tool errors) and loss per step."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on training machines
import matplotlib.pyplot as plt  # noqa: E402

from composer_prime.utils.metrics import read_metrics  # noqa: E402

Series = list[tuple[int, float]]


def _series(records: list[dict], key: str) -> Series:
    return [(r["step"], r[key]) for r in records if r.get(key) is not None]


def run_panels(output_dir: Path) -> dict[str, list[tuple[str, Series]]]:
    """Title -> (label, points) of every panel with data. Held-out verdict (e.g. exact match) beside the reward it
    is meant to follow, so a reward that rises while the task's verdict falls is seen at a glance; answer length
    against the reference (single-turn) or turns and tool errors per rollout (tool environments); trainer loss."""
    orch = read_metrics(output_dir, "orchestrator")
    trainer = read_metrics(output_dir, "trainer")
    verdict = next((r["eval/verdict"] for r in orch if "eval/verdict" in r), "solved")
    panels = {
        f"held-out {verdict}": [("sampled", _series(orch, "eval/solved")),
                                ("greedy", _series(orch, "eval/greedy/solved")),
                                (f"train {verdict}", _series(orch, f"env/{verdict}")),
                                ("held-out F2P fraction", _series(orch, "eval/env/f2p_fraction"))],
        "reward": [("train (sampled)", _series(orch, "reward/mean")), ("held-out", _series(orch, "eval/reward"))],
        "answer length / target length": [("train", _series(orch, "answer_len/ratio")),
                                          ("held-out", _series(orch, "eval/answer_len/ratio"))],
        "per rollout (tools)": [("train turns", _series(orch, "env/turns")),
                                ("held-out turns", _series(orch, "eval/env/turns")),
                                ("train tool errors", _series(orch, "tool_errors")),
                                ("held-out tool errors", _series(orch, "eval/tool_errors"))],
        "trainer loss": [("loss", _series(trainer, "loss"))],
    }
    return {title: lines for title, lines in panels.items() if any(points for _, points in lines)}


def plot_run(output_dir: Path) -> Path:
    """Write `<output_dir>/plots/rl.png` with the panels of run_panels."""
    panels = run_panels(output_dir) or {"no metrics yet": []}
    cols = 2 if len(panels) <= 4 else 3
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.5 * cols, 4 * rows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, (title, lines) in zip(axes.flat, panels.items()):
        for label, points in lines:
            if points:
                dense = len(points) >= 20  # per-step series: thin, so the eval points stay readable
                ax.plot(*zip(*points), "-" if dense else "o-", label=label, linewidth=0.7 if dense else 1.5,
                        alpha=0.6 if dense else 1.0)
        ax.set(xlabel="step", title=title)
        if len(lines) > 1:
            ax.legend()
    fig.tight_layout()
    path = Path(output_dir) / "plots" / "rl.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
