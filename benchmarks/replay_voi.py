"""VOI gating on a real trace with local teachers: teacher calls cut and pairs kept, ungated baseline in the same run.

    uv run python benchmarks/replay_voi.py --sft-models outputs/replay-voi-models [--steps 200] [--seed 0]
        [--student-band 0.6 0.85] [--teacher-margin 0.1] [--student-temperature 0] [--top-fraction 0.4] [--threshold H] [--aggregate mean|max] [--tiered]
    uv run python benchmarks/replay_voi.py --student DIR --teachers DIR DIR DIR [...]
    uv run python benchmarks/replay_voi.py [--noise 0.02]      (perturbed copies of the warm start)

Setup (all on 127.0.0.1, nothing downloaded): four different local tiny models, each served by our
inference server. The student's trace is real: it answers `--steps` reverse-text prompts through
/v1/chat/completions (greedy unless `--student-temperature`) and is written as a composer-prime
rollout file. The three other models are the teachers (greedy, k = 2 of 3). The student's entropy
comes from /score on the student's own server.

Which models:
- `--sft-models DIR`: the setting the gate is for, a student that is right on most steps and
  teachers better than it. SFT of the quickstart's tiny model on reverse-text demonstrations,
  built into DIR on first use, then reused. Calibrated, not counted (tests/replay/calibration.py):
  each model saves a checkpoint every 100 SFT steps and is scored on 64 held-out prompts (greedy
  exact match, the `eval` command's code); the student (SFT seed 2) is its first checkpoint inside
  `--student-band` whose uncertainty ranks its own mistakes (AUROC of the gate's signal, its mean
  token entropy, against its wrong greedy answers on 256 held-out prompts, at least
  `--student-auroc`), each teacher (seeds 1, 6, 5) its first checkpoint at least
  `--teacher-margin` above the student. The AUROC is part of the target because the gate can only
  work for a calibrated student: seed 6's first checkpoint in the band (0.69, caught mid-transition)
  ranked its mistakes at 0.72 and the gate kept 44 % of the pairs. Checkpoints are scored as the SFT writes them and the SFT is stopped at the one
  chosen, so a model trains only as far as its target needs (SFT_MODELS caps the steps); the
  teachers, whose target is known once the student is chosen, train side by side. The
  calibration reached is printed and in the report; a model that misses its target stops the build
  with one line saying which scores it saw. Scores are kept in DIR/calibration.json, so a rerun
  does not evaluate a checkpoint twice.
- `--student/--teachers`: any model directories (e.g. RL checkpoints of the quickstart).
- neither: the committed warm start and copies with seeded Gaussian weight noise (`--noise` of each
  tensor's std); the student is one perturbed copy.

Baseline: the ungated run asks all 3 teachers at every step. Gated: the same config with
`voi.enabled` at its default (top_fraction 0.4) or the given threshold. With `--tiered` two more
runs put the first teacher in tier 0 and the other two in tier 1 (asked only where tier 0 disagrees
with the student), without and with the gate. Every run uses its own empty cache, so the call
counts are real calls counted at the servers.
  calls cut  = 1 - run's calls / ungated calls
  pairs kept = |run's pairs & ungated pairs| / |ungated pairs|   (pairs matched by step id)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from functools import partial
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "tests" / d) for d in ("replay", "support")]

from servers import inference_server, model_variant, student_trace, teacher  # noqa: E402

from calibration import (  # noqa: E402
    Band, CalibrationFailed, Reached, first_above, first_in_band, trained_checkpoints)

from composer_prime.configs.eval import EvalCommandConfig  # noqa: E402
from composer_prime.configs.replay import ReplayConfig  # noqa: E402
from composer_prime.eval.main import run_eval  # noqa: E402
from composer_prime.model.chat_template import template_ids  # noqa: E402
from composer_prime.pairs import read_pairs  # noqa: E402
from composer_prime.replay.main import run  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# name -> (seed, most SFT steps); training stops at the step chosen by held-out score (see the docstring)
SFT_MODELS = {"student": (2, 2000), "alpha": (1, 4000), "beta": (6, 4000), "gamma": (5, 4000)}
SAVE_EVERY = 100
STUDENT_BAND, TEACHER_MARGIN, STUDENT_AUROC = (0.6, 0.85), 0.1, 0.85
AUROC_PROMPTS = 256


def held_out_exact(model: Path, work: Path) -> float:
    """Greedy exact match on 64 held-out reverse-text prompts."""
    config = EvalCommandConfig(model={"path": str(model)}, env={"id": "reverse-text"}, temperature=0.0, k=1,
                               num_examples=64)
    return run_eval(config, work).solved


def uncertainty_auroc(model: Path) -> float:
    """How well the gate's signal finds this model's mistakes: the AUROC of its mean token entropy over
    its own greedy answer (end of turn included, the formula of replay/voi.py, computed here in-process)
    against the answer being wrong, on the first AUROC_PROMPTS held-out reverse-text prompts. 0.5 is
    chance; 1.0 puts every wrong answer above every right one."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from composer_prime.configs.rollout import EnvConfig
    from composer_prime.rollout.envs import load_environment

    env = load_environment(EnvConfig(id="reverse-text"))
    tokenizer = AutoTokenizer.from_pretrained(model)
    net = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32).eval()
    entropies, wrong = [], []
    for example in env.examples("eval")[:AUROC_PROMPTS]:
        prompt = template_ids(tokenizer, example.prompt)
        with torch.no_grad():
            out = net.generate(torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                               max_new_tokens=24, do_sample=False, pad_token_id=tokenizer.eos_token_id)
            action = out[0, len(prompt):].tolist()
            logits = net(torch.tensor([prompt + action])).logits[0, len(prompt) - 1:-1]
        logp = logits.log_softmax(-1)
        entropies.append(float(-(logp.exp() * logp).sum(-1).mean()))
        answer = tokenizer.decode(action, skip_special_tokens=True)
        wrong.append(asyncio.run(env.score(example, answer)).metrics["exact_match"] < 1.0)
    if all(wrong) or not any(wrong):
        return float("nan")  # nothing to rank: a model right (or wrong) on every prompt is not in any band
    return auc(np.array(entropies), np.array(wrong))


def auc(x: np.ndarray, positive: np.ndarray) -> float:
    """P(signal of a positive > signal of a negative), ties counted half (Mann-Whitney)."""
    pos, neg = x[positive][:, None], x[~positive][None, :]
    return float(((pos > neg) + 0.5 * (pos == neg)).mean())


def _checkpoint(run_dir: Path, steps: int, step: int) -> Path:
    """The model `run_dir`'s SFT saved at `step` (the run's last step is saved as its final model)."""
    return run_dir / "model" if step == steps else run_dir / "checkpoints" / f"step_{step}"


def _training(name: str, seed: int, steps: int, out: Path, tiny: Path) -> Callable[[], subprocess.Popen]:
    """Starts `name`'s SFT: at most `steps` steps, a checkpoint every SAVE_EVERY."""
    def start() -> subprocess.Popen:
        print(f"training {name}: up to {steps} SFT steps, seed {seed}, a checkpoint every {SAVE_EVERY}, "
              f"stopped once one meets its target", flush=True)
        return subprocess.Popen([Path(sys.executable).parent / "sft", "@", ROOT / "configs/quickstart/sft.toml",
                                 "--model.path", tiny, "--max-steps", str(steps), "--seed", str(seed),
                                 "--save-every", str(SAVE_EVERY), "--output-dir", out / name,
                                 "--save-dir", out / name / "model", "--log.progress", "false"])
    return start


def sft_models(out: Path, band: Band, margin: float, min_auroc: float) -> tuple[dict[str, Path], list[Reached]]:
    """The four SFT models in `out`, each the first checkpoint that meets its held-out target."""
    tiny = out / "tiny-model"
    if not (tiny / "config.json").exists():
        subprocess.run([Path(sys.executable).parent / "tiny-model", "@", ROOT / "configs/quickstart/tiny_model.toml",
                        "--output-dir", tiny], check=True)
    record = out / "calibration.json"
    seeds = {name: seed for name, (seed, _) in SFT_MODELS.items()}
    saved = json.loads(record.read_text()) if record.exists() else {"seeds": seeds}
    if saved.get("seeds") != seeds:
        raise CalibrationFailed(f"{out} holds models of other SFT seeds ({saved.get('seeds')}; this build trains "
                                f"{seeds}): give --sft-models a new directory")
    measures = {"exact": held_out_exact, "auroc": lambda model, _work: uncertainty_auroc(model)}
    for measure in measures:
        saved.setdefault(measure, {})
        for name in SFT_MODELS:
            saved[measure].setdefault(name, {})
    recording = threading.Lock()  # the teachers are scored from their own threads

    def scorer(name: str, path_of: Callable[[int], Path], measure: str = "exact") -> Callable[[int], float]:
        def score(step: int) -> float:
            known = saved[measure][name]
            if str(step) not in known:
                value = measures[measure](path_of(step), out / "eval" / name)
                with recording:
                    known[str(step)] = value
                    record.write_text(json.dumps(saved, indent=1))
            label = "held-out greedy exact" if measure == "exact" else "uncertainty AUROC on its mistakes"
            print(f"calibrating {name}: step {step} {label} {known[str(step)]:.3f}", flush=True)
            return known[str(step)]
        return score

    def calibrate(name: str, choose: Callable[..., Reached]) -> tuple[Path, Reached]:
        seed, steps = SFT_MODELS[name]
        path_of = partial(_checkpoint, out / name, steps)
        train = _training(name, seed, steps, out, tiny)
        with closing(trained_checkpoints(range(SAVE_EVERY, steps + 1, SAVE_EVERY), path_of, train)) as checkpoints:
            chosen = choose(name, checkpoints, scorer(name, path_of), path_of=path_of)
        return path_of(chosen.step), chosen

    def student_target(name, checkpoints, score, path_of) -> Reached:
        return first_in_band(name, checkpoints, score, band, auroc=scorer(name, path_of, "auroc"), min_auroc=min_auroc)

    def teacher_target(name, checkpoints, score, path_of) -> Reached:
        return first_above(name, checkpoints, score, floor=student.score + margin)

    student_path, student = calibrate("student", student_target)
    # Once the student is chosen the teachers' targets are known and independent: trained side by side.
    teachers = [name for name in SFT_MODELS if name != "student"]
    with ThreadPoolExecutor(len(teachers)) as pool:
        chosen = list(pool.map(lambda name: calibrate(name, teacher_target), teachers))
    models = {"student": student_path} | {name: path for name, (path, _) in zip(teachers, chosen, strict=True)}
    return models, [student, *(reached for _, reached in chosen)]


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
    parser.add_argument("--sft-models", type=Path, default=None,
                        help="directory of the SFT student and teachers (built there on first use)")
    parser.add_argument("--student-band", type=float, nargs=2, default=STUDENT_BAND, metavar=("LOW", "HIGH"),
                        help="with --sft-models: the student's held-out greedy exact match must fall in this band")
    parser.add_argument("--teacher-margin", type=float, default=TEACHER_MARGIN,
                        help="with --sft-models: each teacher's held-out exact match must beat the student's by this")
    parser.add_argument("--student-auroc", type=float, default=STUDENT_AUROC,
                        help="with --sft-models: the student's uncertainty must rank its own held-out mistakes at "
                             "least this well (AUROC)")
    parser.add_argument("--tiered", action="store_true",
                        help="also run with the first teacher in tier 0 and the others in tier 1, ungated and gated")
    parser.add_argument("--student", type=Path, default=None,
                        help="a model directory as the student instead of a perturbed warm start")
    parser.add_argument("--teachers", type=Path, nargs=3, default=None,
                        help="three model directories as teachers (e.g. RL checkpoints better than the student)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="replay-voi-"))
    start = time.monotonic()
    reached: list[Reached] = []
    if args.sft_models:
        try:
            models, reached = sft_models(args.sft_models, Band(*args.student_band), args.teacher_margin,
                                         args.student_auroc)
        except CalibrationFailed as exc:
            raise SystemExit(f"calibration failed: {exc}") from None
        for model in reached:
            print(f"calibration: {model.line()}", flush=True)
    else:
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
        runs = [("ungated", {"enabled": False}, teachers), ("gated", voi, teachers)]
        if args.tiered:
            tiered = [teacher(n, servers[n].url, tier=int(n != "alpha")) for n in ("alpha", "beta", "gamma")]
            runs += [("tiered", {"enabled": False}, tiered), ("tiered+gated", voi, tiered)]
        results = {}
        for label, gate, pool in runs:
            for server in servers.values():
                server.app.counts.clear()
            config = ReplayConfig(sources=[{"path": str(trace), "format": "composer-prime"}], teachers=pool,
                                  output_dir=str(root / label), progress=False,
                                  agreement={"k": 2, "similarity": args.similarity}, voi=gate)
            stats = asyncio.run(run(config))
            calls = sum(servers[n].app.counts.total() for n in ("alpha", "beta", "gamma"))
            results[label] = {"calls": calls, "pairs": {p.id for p in read_pairs(root / label / "pairs.jsonl")},
                              "stats": stats}
    finally:
        for server in servers.values():
            server.stop()
    ungated = results["ungated"]
    report = {"steps": args.steps, "seed": args.seed, "student_temperature": args.student_temperature,
              "similarity": args.similarity, "gate": {k: v for k, v in voi.items() if k != "student_url"},
              "ungated": {"calls": ungated["calls"], "pairs": len(ungated["pairs"])},
              "calibration": {m.name: {"step": m.step, "held_out_exact": m.score, "uncertainty_auroc": m.auroc,
                                          "target": m.target} for m in reached}}
    for label, result in results.items():
        if label == "ungated":
            continue
        report[label] = {
            "calls": result["calls"], "pairs": len(result["pairs"]),
            "steps_gated_out": result["stats"].steps_gated_out,
            "calls_cut_pct": round(100 * (1 - result["calls"] / max(1, ungated["calls"])), 1),
            "pairs_kept_pct": round(100 * len(result["pairs"] & ungated["pairs"]) / max(1, len(ungated["pairs"])), 1),
        }
    report["seconds"] = round(time.monotonic() - start, 1)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
