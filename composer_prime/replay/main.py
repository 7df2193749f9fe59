"""`uv run replay @ configs/replay/<x>.toml`: replay traces with N teachers, write preference pairs.

Writes `<output_dir>/pairs.jsonl` (composer_prime.pairs, read by the trainer's preference channel
with `read_pairs`, loadable with `datasets`), `<output_dir>/stats.json` and the answer cache. Rerun
the same command after an interruption (or with a larger budget): answers already paid for come
from the cache, and pairs.jsonl is rewritten whole from every step's answers.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys

import httpx

from composer_prime.cli import run_cli
from composer_prime.configs.replay import ReplayConfig
from composer_prime.errors import UserError
from composer_prime.pairs import PreferencePair, write_pairs
from composer_prime.replay.agreement import canonical
from composer_prime.replay.budget import BudgetExhausted
from composer_prime.replay.cache import AnswerCache
from composer_prime.replay.ingest import ingest
from composer_prime.replay.pipeline import Replayer, StepOutcome, keep_pair, state_chars
from composer_prime.replay.stats import RunStats
from composer_prime.replay.steps import Step, digest
from composer_prime.replay.tools import with_tools
from composer_prime.utils.fs import atomic_write_bytes

log = logging.getLogger("replay")


def load_steps(config: ReplayConfig, stats: RunStats) -> list[Step]:
    steps: list[Step] = []
    for source in config.sources:
        found, report = ingest(source.path, source.format)
        found = with_tools(found, source.tools_file, source.infer_tools)
        stats.sources[str(source.path)] = {"format": source.format, **report.as_dict()}
        steps.extend(found)
    stats.steps_ingested = len(steps)
    if config.filters.max_state_chars is not None:
        kept = [s for s in steps if state_chars(s) <= config.filters.max_state_chars]
        stats.steps_filtered = len(steps) - len(kept)
        steps = kept
    return steps[: config.max_steps] if config.max_steps else steps


async def gate_steps(config: ReplayConfig, steps: list[Step], cache: AnswerCache,
                     stats: RunStats) -> tuple[list[Step], dict[str, float]]:
    if not config.voi.enabled:
        return steps, {}
    from composer_prime.replay.voi import StudentScorer, gate

    scorer = StudentScorer(config.voi, cache)
    try:
        limit = asyncio.Semaphore(8)

        async def one(step: Step) -> float:
            async with limit:
                return await scorer.entropy(step)

        entropies = await asyncio.gather(*(one(s) for s in steps))
    except (httpx.HTTPError, OSError) as exc:
        raise UserError(f"voi: cannot score steps at {config.voi.student_url}: {exc}") from None
    finally:
        await scorer.aclose()
    keep = gate(list(entropies), config.voi)
    kept = [s for s, k in zip(steps, keep) if k]
    stats.steps_gated_out = len(steps) - len(kept)
    stats.voi = {"threshold": config.voi.threshold, "top_fraction": config.voi.top_fraction,
                 "mean_entropy": sum(entropies) / len(entropies) if entropies else None,
                 "replayed_min_entropy": min((h for h, k in zip(entropies, keep) if k), default=None)}
    return kept, {s.id: h for s, h in zip(steps, entropies)}


class _Progress:
    """A progress bar (plain lines when output is not a terminal): steps done, teacher calls, spend, pairs."""

    def __init__(self, enabled: bool, total: int):
        self.enabled = enabled
        if not enabled:
            return
        from rich import get_console

        from composer_prime.utils.progress import step_progress

        self.bar = step_progress("replay", get_console())
        self.task = self.bar.add_task("replay", total=total, info="")
        self.bar.start()

    def update(self, done: int, replayer: Replayer, pairs: int) -> None:
        if not self.enabled:
            return
        answered = sum(t.stats.answered for t in replayer.teachers)
        failed = sum(t.stats.failed for t in replayer.teachers)
        cached = sum(t.stats.cached for t in replayer.teachers)
        cap = f"/${replayer.budget.cap:.4f}" if replayer.budget.cap is not None else ""
        self.bar.update(self.task, completed=done,
                        info=f"answered {answered} (+{cached} cached, {failed} failed)  "
                             f"spend ${replayer.budget.spent:.4f}{cap}  pairs {pairs}")

    def close(self) -> None:
        if self.enabled:
            self.bar.stop()


async def run(config: ReplayConfig) -> RunStats:
    stats = RunStats(budget_usd=config.budget_usd)
    steps = load_steps(config, stats)
    cache = AnswerCache(config.cache_file)
    try:
        steps, entropies = await gate_steps(config, steps, cache, stats)
        limits = httpx.Limits(max_connections=sum(t.concurrency for t in config.teachers) + 4)
        async with httpx.AsyncClient(limits=limits) as http:
            replayer = Replayer(config, cache, http)
            outcomes = await _replay_all(config, replayer, steps, entropies, stats)
        stats.spent_usd = replayer.budget.spent
        stats.budget_exhausted = replayer.budget.exhausted
        stats.teachers = {t.name: t.stats.as_dict() for t in replayer.teachers}
        pairs = _select_pairs(config, outcomes, stats)
        stats.agreement = _agreement_stats(replayer, outcomes)
    finally:
        cache.close()
    write_pairs(config.output_dir / ".pairs.jsonl.tmp", pairs)
    (config.output_dir / ".pairs.jsonl.tmp").replace(config.output_dir / "pairs.jsonl")
    atomic_write_bytes(config.output_dir / "stats.json", json.dumps(stats.as_dict(), indent=2).encode())
    return stats


async def _replay_all(config: ReplayConfig, replayer: Replayer, steps: list[Step], entropies: dict[str, float],
                      stats: RunStats) -> list[StepOutcome]:
    queue: asyncio.Queue[Step] = asyncio.Queue()
    for step in steps:
        queue.put_nowait(step)
    outcomes: list[StepOutcome] = []
    progress = _Progress(config.progress, len(steps))

    async def worker() -> None:
        while not queue.empty() and not replayer.budget.exhausted:
            step = queue.get_nowait()
            try:
                outcome = await replayer.replay_step(step, entropies.get(step.id))
            except BudgetExhausted:
                outcome = StepOutcome(step=step, complete=False)
            outcomes.append(outcome)
            progress.update(len(outcomes), replayer, sum(o.pair is not None for o in outcomes))

    try:
        await asyncio.gather(*(worker() for _ in range(min(config.max_concurrent_steps, max(1, len(steps))))))
    finally:
        progress.close()
    # A step whose every teacher call failed was not replayed: nothing answered it.
    answered = [o.complete and any(a.error is None for a in o.answers) for o in outcomes]
    stats.steps_replayed = sum(answered)
    stats.steps_unanswered = sum(o.complete and not a for o, a in zip(outcomes, answered))
    stats.steps_incomplete = sum(not o.complete for o in outcomes) + queue.qsize()
    order = {s.id: i for i, s in enumerate(steps)}
    return sorted(outcomes, key=lambda o: order[o.step.id])


def _select_pairs(config: ReplayConfig, outcomes: list[StepOutcome], stats: RunStats) -> list[PreferencePair]:
    pairs, seen, dropped = [], set(), {}
    for outcome in outcomes:
        pair = outcome.pair
        if pair is None:
            continue
        stats.pairs_found += 1
        why = keep_pair(pair, config)
        if why is None and config.filters.dedup:
            key = digest({"state": outcome.step.state_payload(), "chosen": canonical(pair.chosen),
                          "rejected": canonical(pair.rejected)})
            why = "duplicate" if key in seen else None
            seen.add(key)
        if why is not None:
            dropped[why] = dropped.get(why, 0) + 1
            continue
        pairs.append(pair)
    stats.pairs_dropped = dropped
    stats.pairs_written = len(pairs)
    return pairs


def _agreement_stats(replayer: Replayer, outcomes: list[StepOutcome]) -> dict:
    per_teacher = {}
    for teacher in replayer.teachers:
        answers = [a for o in outcomes for a in o.answers if a.teacher == teacher.name and a.action is not None]
        in_pairs = [a for o in outcomes if o.pair is not None for a in o.answers if a.teacher == teacher.name]
        per_teacher[teacher.name] = {
            "answers": len(answers),
            "agrees_with_student": sum(a.canonical == replayer.canonical(o.step.action)
                                       for o in outcomes for a in o.answers
                                       if a.teacher == teacher.name and a.action is not None),
            "in_consensus": sum(a.agrees for a in in_pairs),
        }
    return per_teacher


def main(config: ReplayConfig) -> None:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    stats = asyncio.run(run(config))
    print(stats.summary(), flush=True)
    print(f"pairs: {config.output_dir / 'pairs.jsonl'}  stats: {config.output_dir / 'stats.json'}", flush=True)
    if (failure := stats.failure()) is not None:
        raise UserError(failure)  # after the summary: the counts say what was tried
    if stats.budget_exhausted:
        print("stopped: budget cap reached; rerun with a larger budget_usd to continue from the cache",
              file=sys.stderr, flush=True)


def cli() -> None:
    run_cli(ReplayConfig, main)


if __name__ == "__main__":
    cli()
