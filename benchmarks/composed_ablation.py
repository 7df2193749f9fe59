"""Ablation of the composed loss on the quickstart task: (alpha, beta) in {0, a} x {0, b}.

alpha weights channel 2 (hint self-distillation), beta channel 3 (preference pairs); channel 1
(policy gradient) runs in every arm. Everything is real and local:

1. student traces: the warm start samples train prompts through a real inference server; the
   rollouts become composer-prime traces, wrong answers carrying the environment's feedback.
2. pairs: `composer_prime.replay` replays those traces with N teacher models, each behind its own
   inference server (its OpenAI-compatible route), and keeps the steps where k of them agree on an
   answer other than the student's.
3. held-out error sites: the warm start's wrong answers on EVAL prompts, each with its template hint.
4. arms: `rl @ configs/composed/rl.toml` with the arm's weights (baseline (0, 0) repeated over
   seeds for the run-to-run noise).
5. per arm: KL(student || hinted teacher) on the held-out sites with the final weights, held-out
   pair accuracy (trainer's `preference/eval_accuracy`, eval-split pairs), held-out task reward.

Stages whose output exists are skipped, so an interrupted ablation resumes. Usage:

    uv run python benchmarks/composed_ablation.py --teachers outputs/teachers/a outputs/teachers/b ... \
        [--work outputs/ablation] [--steps 300] [--alpha 0.5] [--beta 0.5] [--seeds 3] [--noise-seeds 2]

With `--seeds N` every arm runs at seeds 0..N-1 and a second table compares the arms' means: an
arm is "not worse beyond noise" when its mean reward is at most two standard errors of the
difference of means below the (0, 0) arm's.

Teachers are any model directories that share the warm start's tokenizer (e.g. quickstart RL
checkpoints: `uv run rl @ configs/quickstart/rl.toml` then `outputs/quickstart/broadcasts/step_600`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import msgspec
import numpy as np
import tomli_w
import torch
from transformers import AutoModelForCausalLM

from composer_prime.batch import HintSite
from composer_prime.configs.hints import HintsConfig
from composer_prime.configs.inference import InferenceConfig, TransformersBackendConfig
from composer_prime.configs.shared import LogConfig, ModelConfig
from composer_prime.eval.hint_kl import error_site_kl
from composer_prime.eval.server import inference_server, wait_ready
from composer_prime.hints.writer import TemplateHintWriter
from composer_prime.inference.client import InferenceClient
from composer_prime.model.load import load_tokenizer
from composer_prime.configs.rollout import EnvConfig, SamplingConfig
from composer_prime.rollout.envs import load_environment
from composer_prime.orchestrator.hint_sites import build_hint_sites, rollouts_of
from composer_prime.rollout.single_turn import request_seed, rollout_group
from composer_prime.utils.metrics import read_metrics
from composer_prime.utils.net import free_port

REPO = Path(__file__).resolve().parents[1]
MAX_TOKENS = 16  # as the quickstart samples


def _server(model: Path, work: Path, stack: ExitStack) -> tuple[str, object]:
    port = free_port()
    config = InferenceConfig(model=ModelConfig(path=str(model)), port=port, log=LogConfig(progress=False),
                             backend=TransformersBackendConfig(max_batch_size=64, num_threads=1))
    child = stack.enter_context(inference_server(config, work))
    return f"http://127.0.0.1:{port}", child


async def _sample_rollouts(url: str, child, model: Path, split: str, prompts: int, n: int, seed: int):
    env = load_environment(EnvConfig(id="reverse-text"))
    tokenizer = load_tokenizer(ModelConfig(path=str(model)))
    examples = env.examples(split)
    order = np.random.default_rng(seed).permutation(len(examples))[:prompts]
    hints = HintsConfig(enabled=True)
    async with InferenceClient(url) as client:
        await wait_ready(client, child, timeout_s=300)
        gate = asyncio.Semaphore(16)
        sampling = SamplingConfig(temperature=1.0, max_tokens=MAX_TOKENS)

        async def one(slot: int, index: int):
            async with gate:
                group = await rollout_group(client, env, tokenizer, examples[index], sampling, n=n,
                                            seed=request_seed(seed, slot))
            return rollouts_of(0, slot, group, env.id, hints)

        groups = await asyncio.gather(*(one(slot, int(i)) for slot, i in enumerate(order)))
        return [r for g in groups for r in g], tokenizer


def student_traces(work: Path, model: Path, prompts: int) -> Path:
    path = work / "student" / "traces.jsonl"
    if path.exists():
        return path
    with ExitStack() as stack:
        url, child = _server(model, work / "student" / "server", stack)
        rollouts, _ = asyncio.run(_sample_rollouts(url, child, model, "train", prompts, 1, seed=1))
    path.write_text("".join(r.trace.model_dump_json() + "\n" for r in rollouts))
    wrong = sum(bool(r.trace.errors) for r in rollouts)
    print(f"student traces: {len(rollouts)} rollouts, {wrong} with an error -> {path}", flush=True)
    return path


def mine_pairs(work: Path, traces: Path, teachers: list[Path], k: int) -> Path:
    out = work / "pairs"
    if (out / "pairs.jsonl").exists():
        return out / "pairs.jsonl"
    with ExitStack() as stack:
        urls = [_server(t, out / f"teacher{i}", stack) for i, t in enumerate(teachers)]
        asyncio.run(_all_ready(urls))
        config = {
            "sources": [{"path": str(traces), "format": "composer-prime"}],
            "teachers": [{"name": f"teacher{i}", "model": Path(t).name, "base_url": f"{url}/v1",
                          "max_tokens": MAX_TOKENS, "temperature": 0.0, "tool_format": "text"}
                         for i, (t, (url, _)) in enumerate(zip(teachers, urls))],
            "output_dir": str(out),
            "agreement": {"k": k},
            "progress": False,
        }
        (out / "replay.toml").write_text(tomli_w.dumps(config))
        subprocess.run([sys.executable, "-m", "composer_prime.replay.main", "@", str(out / "replay.toml")],
                       cwd=REPO, check=True)
    print(f"pairs: {sum(1 for _ in open(out / 'pairs.jsonl'))} -> {out / 'pairs.jsonl'}", flush=True)
    return out / "pairs.jsonl"


async def _all_ready(urls) -> None:
    for url, child in urls:
        async with InferenceClient(url) as client:
            await wait_ready(client, child, timeout_s=300)


def held_out_sites(work: Path, model: Path, prompts: int) -> list[HintSite]:
    path = work / "held_out_sites.msgpack"
    if not path.exists():
        with ExitStack() as stack:
            url, child = _server(model, work / "sites_server", stack)

            async def go():
                rollouts, tokenizer = await _sample_rollouts(url, child, model, "eval", prompts, 2, seed=2)
                erring = [r for r in rollouts if r.trace.errors]
                async with InferenceClient(url) as client:
                    return await build_hint_sites(erring, HintsConfig(enabled=True), TemplateHintWriter(),
                                                  tokenizer, client, temperature=1.0)

            sites = asyncio.run(go())
        path.write_bytes(msgspec.msgpack.encode(sites))
    return msgspec.msgpack.decode(path.read_bytes(), type=list[HintSite])


def run_arm(work: Path, model: Path, name: str, alpha: float, beta: float, seed: int, steps: int, pairs: Path,
            nll: float) -> Path:
    out = work / "arms" / name
    if any(r.get("step") == steps and "eval/reward_end" in r for r in read_metrics(out, "orchestrator")):
        return out
    command = [
        sys.executable, "-m", "composer_prime.rl.main", "@", str(REPO / "configs/composed/rl.toml"),
        "--output-dir", str(out), "--max-steps", str(steps), "--seed", str(seed), "--model.path", str(model),
        "--inference.port", str(free_port()),
        "--trainer.loss.hint.weight", str(alpha), "--trainer.loss.preference.weight", str(beta),
        "--trainer.loss.preference.pairs", str(pairs), "--trainer.loss.preference.eval-interval", "0",
        "--no-plot", "--no-log.progress",
    ]
    if beta > 0 and nll > 0:
        command += ["--trainer.loss.preference.nll-weight", str(nll)]
    if alpha == 0:  # no hint sites to build when nobody trains on them
        command.append("--no-orchestrator.hints.enabled")
    print(f"arm {name}: alpha {alpha} beta {beta} seed {seed}", flush=True)
    subprocess.run(command, cwd=REPO, check=True)
    return out


def arm_figures(out: Path, steps: int, sites: list[HintSite]) -> dict[str, float]:
    model = AutoModelForCausalLM.from_pretrained(out / "broadcasts" / f"step_{steps}", dtype=torch.float32).eval()
    trainer = read_metrics(out, "trainer")
    orchestrator = read_metrics(out, "orchestrator")
    accuracy = [r for r in trainer if "preference/eval_accuracy" in r]
    end = next(r for r in orchestrator if "eval/reward_end" in r)
    return {
        "kl_sites": error_site_kl(model, sites),
        "pair_acc_start": accuracy[0]["preference/eval_accuracy"],
        "pair_acc_end": accuracy[-1]["preference/eval_accuracy"],
        "reward_start": end["eval/reward_start"],
        "reward_end": end["eval/reward_end"],
        # the task's own verdict (exact match): the reward is partial credit and must not stand in for it
        "exact_start": end.get("eval/solved_start", float("nan")),
        "exact_end": end.get("eval/solved_end", float("nan")),
    }


def table(rows: list[dict], noise: float, kl_start: float, alpha: float, beta: float) -> str:
    def base(row, key, **match):
        same = [r for r in rows if all(r[k] == v for k, v in match.items()) and r["seed"] == 0]
        return same[0][key] if same else float("nan")

    lines = [
        f"Held-out KL(student || hinted teacher) at error sites before training: {kl_start:.4f}",
        f"Run-to-run noise of the held-out reward, channel-1-only arm over seeds: std {noise:.4f}",
        "",
        "| alpha | beta | seed | KL at error sites | vs alpha=0 | pair acc. start -> end | vs beta=0 (points) "
        "| held-out exact match | held-out reward | vs (0, 0) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        kl0 = base(r, "kl_sites", alpha=0.0, beta=r["beta"])
        acc0 = base(r, "pair_acc_end", alpha=r["alpha"], beta=0.0)
        reward0 = base(r, "reward_end", alpha=0.0, beta=0.0)
        lines.append(
            f"| {r['alpha']:g} | {r['beta']:g} | {r['seed']} | {r['kl_sites']:.4f} | "
            f"{(r['kl_sites'] / kl0 - 1) * 100:+.1f}% | {r['pair_acc_start']:.3f} -> {r['pair_acc_end']:.3f} | "
            f"{(r['pair_acc_end'] - acc0) * 100:+.1f} | {r['exact_end']:.3f} | {r['reward_end']:.3f} | "
            f"{r['reward_end'] - reward0:+.3f} |"
        )
    return "\n".join(lines)


def _against_base(values: np.ndarray, base: list[float]) -> tuple[float, float, float]:
    """(std over seeds, mean difference to the (0, 0) arm, standard error of that difference)."""
    std = float(np.std(values, ddof=1)) if len(values) > 1 else float("nan")
    diff = float(values.mean() - np.mean(base)) if base else float("nan")
    se = float(np.sqrt(np.var(values, ddof=1) / len(values) + np.var(base, ddof=1) / len(base))) \
        if len(values) > 1 and len(base) > 1 else float("nan")
    return std, diff, se


def summary(rows: list[dict]) -> str:
    """Per arm over its seeds: means, and each arm's held-out exact match and reward against (0, 0) in standard
    errors. Exact match is the task's verdict; the reward (partial credit) stands beside it."""
    arms = sorted({(r["alpha"], r["beta"]) for r in rows})
    by_arm = {arm: [r for r in rows if (r["alpha"], r["beta"]) == arm] for arm in arms}

    def mean(key: str, arm: tuple[float, float]) -> float:
        return float(np.mean([r[key] for r in by_arm[arm]])) if arm in by_arm else float("nan")

    lines = [
        "| alpha | beta | seeds | KL at error sites (mean) | vs alpha=0 | pair acc. end (mean) | vs beta=0 (points) "
        "| held-out exact match mean +- std | vs (0, 0) | SE | held-out reward mean +- std | vs (0, 0) | SE "
        "| not worse beyond noise on exact match (>= -2 SE) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (alpha, beta), group in by_arm.items():
        kl, acc = mean("kl_sites", (alpha, beta)), mean("pair_acc_end", (alpha, beta))
        stats = {key: (np.mean([r[key] for r in group]),
                       *_against_base(np.array([r[key] for r in group]), [r[key] for r in by_arm.get((0.0, 0.0), [])]))
                 for key in ("exact_end", "reward_end")}
        cells = [f"{m:.3f} +- {std:.3f} | {diff:+.3f} | {se:.3f}" for m, std, diff, se in stats.values()]
        _, _, exact_diff, exact_se = stats["exact_end"]
        verdict = "yes" if exact_diff >= -2 * exact_se else "no"
        lines.append(
            f"| {alpha:g} | {beta:g} | {len(group)} | {kl:.4f} | {(kl / mean('kl_sites', (0.0, beta)) - 1) * 100:+.1f}% | "
            f"{acc:.3f} | {(acc - mean('pair_acc_end', (alpha, 0.0))) * 100:+.1f} | {' | '.join(cells)} | {verdict} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--teachers", nargs="+", type=Path, required=True)
    parser.add_argument("--warmstart", type=Path, default=Path("configs/composed/warmstart"),
                        help="the student (committed; configs/composed/README.md rebuilds it)")
    parser.add_argument("--k", type=int, default=2, help="teachers that must agree")
    parser.add_argument("--work", type=Path, default=Path("outputs/ablation"))
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--alpha", type=float, default=0.5)
    parser.add_argument("--beta", type=float, default=0.5)
    parser.add_argument("--seeds", type=int, default=1, help="seeds of every arm")
    parser.add_argument("--noise-seeds", type=int, default=2, help="extra seeds of the (0, 0) arm beyond --seeds")
    parser.add_argument("--extra-alphas", type=float, nargs="*", default=[],
                        help="more (alpha, 0) arms, to see how the reward cost of channel 2 scales with alpha")
    parser.add_argument("--preference-nll", type=float, default=0.0,
                        help="RPO: the preference channel's chosen-NLL weight in the beta > 0 arms (named ..._rpoW)")
    parser.add_argument("--train-prompts", type=int, default=1000)
    parser.add_argument("--eval-prompts", type=int, default=200)
    args = parser.parse_args()
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)

    model = args.warmstart.resolve()
    pairs = mine_pairs(work, student_traces(work, model, args.train_prompts), [t.resolve() for t in args.teachers],
                       args.k)
    sites = held_out_sites(work, model, args.eval_prompts)
    print(f"held-out error sites: {len(sites)}", flush=True)
    warm = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32).eval()
    kl_start = error_site_kl(warm, sites)

    arms = [(a, b, s) for s in range(args.seeds) for a in (0.0, args.alpha) for b in (0.0, args.beta)]
    arms += [(0.0, 0.0, s) for s in range(args.seeds, max(args.seeds, args.noise_seeds + 1))]
    arms += [(a, 0.0, 0) for a in args.extra_alphas]
    suffix = f"_rpo{args.preference_nll:g}" if args.preference_nll else ""
    rows = []
    for alpha, beta, seed in arms:
        name = f"a{alpha:g}_b{beta:g}_s{seed}" + (suffix if beta else "")
        out = run_arm(work, model, name, alpha, beta, seed, args.steps, pairs, args.preference_nll)
        rows.append({"alpha": alpha, "beta": beta, "seed": seed, **arm_figures(out, args.steps, sites)})
        (work / f"results{suffix}.json").write_text(json.dumps(rows, indent=1))
    baseline = [r["reward_end"] for r in rows if r["alpha"] == 0 and r["beta"] == 0]
    noise = float(np.std(baseline, ddof=1)) if len(baseline) > 1 else float("nan")
    report = table(rows, noise, kl_start, args.alpha, args.beta) + "\n\n" + summary(rows)
    (work / f"table{suffix}.md").write_text(report + "\n")
    print(report)


if __name__ == "__main__":
    main()
