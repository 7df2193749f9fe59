"""The end-of-run picture from metrics.jsonl: the task's verdict, the reward, answer length and loss per step."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on training machines
import matplotlib.pyplot as plt  # noqa: E402

from composer_prime.utils.metrics import read_metrics  # noqa: E402


def _series(records: list[dict], key: str) -> list[tuple[int, float]]:
    return [(r["step"], r[key]) for r in records if r.get(key) is not None]


def plot_run(output_dir: Path) -> Path:
    """Write `<output_dir>/plots/rl.png`: held-out verdict (e.g. exact match) beside the reward it is meant to
    follow, answer length against the reference, and trainer loss, so a reward that rises while the task's
    verdict falls is seen at a glance."""
    orch = read_metrics(output_dir, "orchestrator")
    trainer = read_metrics(output_dir, "trainer")
    verdict = next((r["eval/verdict"] for r in orch if "eval/verdict" in r), "solved")
    panels = {
        f"held-out {verdict}": [("sampled", _series(orch, "eval/solved")),
                                ("greedy", _series(orch, "eval/greedy/solved")),
                                (f"train {verdict}", _series(orch, f"env/{verdict}"))],
        "reward": [("train (sampled)", _series(orch, "reward/mean")), ("held-out", _series(orch, "eval/reward"))],
        "answer length / target length": [("train", _series(orch, "answer_len/ratio")),
                                          ("held-out", _series(orch, "eval/answer_len/ratio"))],
        "trainer loss": [("loss", _series(trainer, "loss"))],
    }
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    for ax, (title, lines) in zip(axes.flat, panels.items()):
        for label, points in lines:
            if points:
                dense = len(points) >= 20  # per-step series: thin, so the eval points stay readable
                ax.plot(*zip(*points), "-" if dense else "o-", label=label, linewidth=0.7 if dense else 1.5,
                        alpha=0.6 if dense else 1.0)
        ax.set(xlabel="step", title=title)
        if any(points for _, points in lines) and len(lines) > 1:
            ax.legend()
    fig.tight_layout()
    path = Path(output_dir) / "plots" / "rl.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
