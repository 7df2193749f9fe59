"""The run's stats report (`<output_dir>/stats.json`) and its one-screen summary.

Counts: steps ingested and skipped (by reason, per source), steps gated out by VOI or filtered by
length, steps replayed, teacher calls (paid, cached, failed, HTTP attempts, retries by cause),
tokens, spend against the cap, pairs found, dropped (dedup, length) and written, and per teacher
how often its answer was part of a kept consensus.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RunStats:
    sources: dict = field(default_factory=dict)
    steps_ingested: int = 0
    steps_filtered: int = 0
    steps_gated_out: int = 0
    steps_replayed: int = 0
    steps_incomplete: int = 0
    pairs_found: int = 0
    pairs_dropped: dict = field(default_factory=dict)
    pairs_written: int = 0
    budget_usd: float | None = None
    spent_usd: float = 0.0
    budget_exhausted: bool = False
    voi: dict | None = None
    teachers: dict = field(default_factory=dict)
    agreement: dict = field(default_factory=dict)

    @property
    def calls(self) -> int:
        return sum(t["answered"] + t["failed"] for t in self.teachers.values())

    @property
    def cached(self) -> int:
        return sum(t["cached"] for t in self.teachers.values())

    def as_dict(self) -> dict:
        return {
            "sources": self.sources, "steps_ingested": self.steps_ingested, "steps_filtered": self.steps_filtered,
            "steps_gated_out": self.steps_gated_out, "steps_replayed": self.steps_replayed,
            "steps_incomplete": self.steps_incomplete, "teacher_calls": self.calls, "cached_answers": self.cached,
            "pairs_found": self.pairs_found, "pairs_dropped": self.pairs_dropped, "pairs_written": self.pairs_written,
            "budget_usd": self.budget_usd, "spent_usd": self.spent_usd, "budget_exhausted": self.budget_exhausted,
            "voi": self.voi, "teachers": self.teachers, "agreement": self.agreement,
        }

    def summary(self) -> str:
        cap = f" of ${self.budget_usd:.4f}" if self.budget_usd is not None else ""
        lines = [
            f"steps: {self.steps_ingested} ingested, {self.steps_filtered} filtered, "
            f"{self.steps_gated_out} gated out (VOI), {self.steps_replayed} replayed, {self.steps_incomplete} incomplete",
            f"teacher calls: {self.calls} paid, {self.cached} from cache; spent ${self.spent_usd:.6f}{cap}"
            + (" (budget exhausted)" if self.budget_exhausted else ""),
            f"pairs: {self.pairs_found} found, {self.pairs_written} written, dropped {self.pairs_dropped or 'none'}",
        ]
        for name, source in self.sources.items():
            if source["skipped"]:
                lines.append(f"skipped in {name}: {source['skipped']}")
        return "\n".join(lines)
