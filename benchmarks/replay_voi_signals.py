"""How well does each student-side uncertainty signal predict the steps where teachers agree against the student?

    uv run python benchmarks/replay_voi_signals.py (--sft-models DIR | --student DIR --teachers DIR DIR DIR)
        [--steps 200] [--seed 0] [--k 2] [--similarity 1.0]

`--sft-models` is replay_voi.py's SFT student and teachers (built in DIR on first use).

The same real trace as replay_voi.py (the student answers `--steps` reverse-text prompts greedily
through its own inference server), replayed ungated with the 3 local teachers; a step is positive
when it yields a pair. Each step is then scored by the student (`POST /score`, top-2) and every
signal is ranked against the positives:
  mean / max / sum of the action's token entropies (VOIConfig.aggregate offers mean and max),
  the action's NLL and its largest token NLL, minus the smallest top-1 - top-2 log-prob margin.
Baseline, same run: random gating, which has AUC 0.5 and keeps a fraction f of the pairs when it
sends a fraction f of the steps. Printed per signal: AUC, and pairs kept when the top 30/40/50 %
of steps by that signal are sent to the teachers.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "tests" / d) for d in ("replay", "support")]

from replay_voi import STUDENT_AUROC, STUDENT_BAND, TEACHER_MARGIN, auc, sft_models  # noqa: E402
from calibration import Band  # noqa: E402
from servers import inference_server, student_trace, teacher  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

from composer_prime.configs.replay import ReplayConfig  # noqa: E402
from composer_prime.inference.client import InferenceClient  # noqa: E402
from composer_prime.inference.protocol import ScoreRequest  # noqa: E402
from composer_prime.model.chat_template import template_ids  # noqa: E402
from composer_prime.pairs import read_pairs  # noqa: E402
from composer_prime.replay.main import load_steps, run  # noqa: E402
from composer_prime.replay.render import action_text, request_messages  # noqa: E402
from composer_prime.replay.stats import RunStats  # noqa: E402

FRACTIONS = (0.3, 0.4, 0.5)


async def signals(url: str, tokenizer, steps) -> list[dict[str, float]]:
    client = InferenceClient(url)
    out = []
    try:
        for step in steps:
            messages, _ = request_messages(step.state, step.tools, "text")
            prompt = template_ids(tokenizer, messages)
            completion = tokenizer.encode(action_text(step.action), add_special_tokens=False) + [tokenizer.eos_token_id]
            score = await client.score(ScoreRequest(prompt_token_ids=prompt, completion_token_ids=completion, top_k=2))
            entropies = score.entropies
            out.append({
                "entropy mean": float(np.mean(entropies)), "entropy max": max(entropies), "entropy sum": sum(entropies),
                "nll": -sum(score.logprobs), "max token nll": -min(score.logprobs),
                "-min margin": -min(top[0] - top[1] for top in score.top_logprobs),
            })
    finally:
        await client.aclose()
    return out


def kept_at(x: np.ndarray, positive: np.ndarray, fraction: float) -> tuple[float, float]:
    """(share of steps sent, share of positives kept) when the top `fraction` by x is sent (ties at the cut included)."""
    cut = np.sort(x)[::-1][math.ceil(fraction * len(x)) - 1]
    return float((x >= cut).mean()), float((x[positive] >= cut).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    models = parser.add_mutually_exclusive_group(required=True)
    models.add_argument("--sft-models", type=Path)
    models.add_argument("--student", type=Path)
    parser.add_argument("--teachers", type=Path, nargs=3)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--k", type=int, default=2, help="teachers that must agree against the student")
    parser.add_argument("--similarity", type=float, default=1.0)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="replay-voi-signals-"))
    if args.sft_models:
        models, _ = sft_models(args.sft_models, Band(*STUDENT_BAND), TEACHER_MARGIN, STUDENT_AUROC)
    elif args.teachers:
        models = {"student": args.student, **dict(zip(("alpha", "beta", "gamma"), args.teachers))}
    else:
        parser.error("--student needs --teachers")
    servers = {name: inference_server(path) for name, path in models.items()}
    try:
        trace = student_trace(servers["student"].url, root / "trace", n=args.steps, seed=args.seed, temperature=0.0)
        teachers = [teacher(n, servers[n].url) for n in ("alpha", "beta", "gamma")]
        config = ReplayConfig(sources=[{"path": str(trace), "format": "composer-prime"}], teachers=teachers,
                              output_dir=str(root / "ungated"), progress=False,
                              agreement={"k": args.k, "similarity": args.similarity})
        asyncio.run(run(config))
        pairs = {p.id for p in read_pairs(root / "ungated" / "pairs.jsonl")}
        steps = load_steps(config, RunStats())
        values = asyncio.run(signals(servers["student"].url, AutoTokenizer.from_pretrained(models["student"]), steps))
    finally:
        for server in servers.values():
            server.stop()
    positive = np.array([step.id in pairs for step in steps])
    print(f"{len(steps)} steps, {positive.sum()} yield a pair (k = {args.k}, similarity {args.similarity}); "
          f"random gating: AUC 0.5, keeps f of the pairs at f sent")
    print(f"{'signal':16s} {'AUC':>6s}  " + "  ".join(f"top {f:.0%}: sent -> kept" for f in FRACTIONS))
    for name in values[0]:
        x = np.array([v[name] for v in values])
        cells = "  ".join(f"{s:>11.0%} -> {k:4.0%}" for s, k in (kept_at(x, positive, f) for f in FRACTIONS))
        print(f"{name:16s} {auc(x, positive):6.3f}  {cells}")


if __name__ == "__main__":
    main()
