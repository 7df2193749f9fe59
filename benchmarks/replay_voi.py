"""VOI gating on a real trace with local teachers: teacher calls cut and pairs kept, ungated baseline in the same run.

    uv run python benchmarks/replay_voi.py [--steps 50] [--seed 0] [--top-fraction 0.4] [--threshold H]
        [--student DIR --teachers DIR DIR DIR]

Setup (all on 127.0.0.1, nothing downloaded): four different local tiny models, each served by our
inference server: the committed quickstart warm start and three copies with seeded Gaussian weight
noise (2% of each tensor's std). The student is one perturbed copy; its trace is real: it answers
`--steps` reverse-text prompts greedily through /v1/chat/completions and is written as a
composer-prime rollout file. The three other models are the teachers (greedy, k = 2 of 3).
The student's entropy comes from /score on the student's own server.

Baseline: the ungated run asks all 3 teachers at every step. Gated: the same config with
`voi.enabled` at its default (top_fraction 0.4) or the given threshold. Both runs use their own
empty cache, so the call counts are real calls counted at the servers.
  calls cut  = 1 - gated calls / ungated calls
  pairs kept = |gated pairs & ungated pairs| / |ungated pairs|   (pairs matched by step id)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "replay"))

from servers import inference_server, model_variant, student_trace, teacher  # noqa: E402

from composer_prime.pairs import read_pairs  # noqa: E402
from composer_prime.replay.config import ReplayConfig  # noqa: E402
from composer_prime.replay.main import run  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--noise", type=float, default=0.02)
    parser.add_argument("--student-temperature", type=float, default=0.0)
    parser.add_argument("--top-fraction", type=float, default=None)
    parser.add_argument("--threshold", type=float, default=None)
    parser.add_argument("--aggregate", choices=["mean", "max"], default=None)
    parser.add_argument("--similarity", type=float, default=1.0,
                        help="agreement.similarity: below 1, answers this close (difflib ratio) count as the same")
    parser.add_argument("--student", type=Path, default=None,
                        help="a model directory as the student instead of a perturbed warm start")
    parser.add_argument("--teachers", type=Path, nargs=3, default=None,
                        help="three model directories as teachers (e.g. RL checkpoints better than the student)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="replay-voi-"))
    start = time.monotonic()
    models = {"student": args.student or model_variant(root / "student", args.noise, seed=100 + args.seed),
              "alpha": model_variant(root / "alpha"),
              "beta": model_variant(root / "beta", args.noise, seed=1),
              "gamma": model_variant(root / "gamma", args.noise, seed=2)}
    if args.teachers:
        models |= dict(zip(("alpha", "beta", "gamma"), args.teachers))
    servers = {name: inference_server(path) for name, path in models.items()}
    try:
        trace = student_trace(servers["student"].url, root / "trace", n=args.steps, seed=args.seed,
                              temperature=args.student_temperature)
        teachers = [teacher(n, servers[n].url) for n in ("alpha", "beta", "gamma")]
        voi = {"enabled": True, "student_url": servers["student"].url}
        if args.top_fraction is not None:
            voi["top_fraction"] = args.top_fraction
        if args.aggregate is not None:
            voi["aggregate"] = args.aggregate
        if args.threshold is not None:
            voi["threshold"] = args.threshold
        results = {}
        for label, gate in (("ungated", {"enabled": False}), ("gated", voi)):
            for server in servers.values():
                server.app.counts.clear()
            config = ReplayConfig(sources=[{"path": str(trace), "format": "composer-prime"}], teachers=teachers,
                                  output_dir=str(root / label), progress=False, agreement={"k": 2, "similarity": args.similarity}, voi=gate)
            stats = asyncio.run(run(config))
            calls = sum(servers[n].app.counts.total() for n in ("alpha", "beta", "gamma"))
            results[label] = {"calls": calls, "pairs": {p.id for p in read_pairs(root / label / "pairs.jsonl")},
                              "stats": stats}
    finally:
        for server in servers.values():
            server.stop()
    ungated, gated = results["ungated"], results["gated"]
    kept = len(gated["pairs"] & ungated["pairs"])
    report = {
        "steps": args.steps, "seed": args.seed, "similarity": args.similarity, "gate": voi,
        "ungated": {"calls": ungated["calls"], "pairs": len(ungated["pairs"])},
        "gated": {"calls": gated["calls"], "pairs": len(gated["pairs"]),
                  "steps_gated_out": gated["stats"].steps_gated_out},
        "calls_cut_pct": round(100 * (1 - gated["calls"] / max(1, ungated["calls"])), 1),
        "pairs_kept_pct": round(100 * kept / max(1, len(ungated["pairs"])), 1),
        "seconds": round(time.monotonic() - start, 1),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
