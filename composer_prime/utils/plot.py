"""The end-of-run picture: reward and loss curves from metrics.jsonl."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on training machines
import matplotlib.pyplot as plt  # noqa: E402

from composer_prime.utils.metrics import read_metrics  # noqa: E402


def plot_run(output_dir: Path) -> Path:
    """Write `<output_dir>/plots/rl.png`: train reward, held-out reward and trainer loss per step."""
    orch = read_metrics(output_dir, "orchestrator")
    trainer = read_metrics(output_dir, "trainer")
    train = [(r["step"], r["reward/mean"]) for r in orch if "reward/mean" in r]
    held_out = [(r["step"], r["eval/reward"]) for r in orch if "eval/reward" in r]
    loss = [(r["step"], r["loss"]) for r in trainer if r.get("loss") is not None]

    fig, (ax_reward, ax_loss) = plt.subplots(1, 2, figsize=(10, 4))
    if train:
        ax_reward.plot(*zip(*train), label="train (sampled)")
    if held_out:
        ax_reward.plot(*zip(*held_out), "o-", label="held-out")
    ax_reward.set(xlabel="step", ylabel="reward", title="reward")
    ax_reward.legend()
    if loss:
        ax_loss.plot(*zip(*loss))
    ax_loss.set(xlabel="step", ylabel="loss", title="trainer loss")
    fig.tight_layout()
    path = Path(output_dir) / "plots" / "rl.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
