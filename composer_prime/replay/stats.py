"""The run's stats report (`<output_dir>/stats.json`) and its one-screen summary.

Counts: steps ingested and skipped (by reason, per source), steps gated out by VOI or filtered by
length, steps replayed, teacher calls by outcome (answered by a billed call, answered from the
cache, failed after retries or with a final error, refused by the budget before anything was sent;
HTTP attempts and retries by cause beside them), tokens, spend against the cap (what answered calls
cost, and apart from it what was charged for calls whose billing cannot be known), pairs found,
dropped (dedup, length) and written, and per teacher how often its answer was part of a kept
consensus. `failure()` is the one line a run prints when no teacher answered anything.
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
    """Steps at least one teacher answered."""
    steps_unanswered: int = 0
    """Steps every teacher asked failed on."""
    steps_incomplete: int = 0
    """Steps the budget stopped before every needed teacher was asked."""
    pairs_found: int = 0
    pairs_dropped: dict = field(default_factory=dict)
    pairs_written: int = 0
    budget_usd: float | None = None
    spent_usd: float = 0.0
    budget_exhausted: bool = False
    voi: dict | None = None
    teachers: dict = field(default_factory=dict)
    agreement: dict = field(default_factory=dict)

    answered = property(lambda self: self._total("answered"), doc="Answers obtained by a billed call.")
    cached = property(lambda self: self._total("cached"), doc="Answers read from the cache.")
    failed = property(lambda self: self._total("failed"), doc="Calls that got no answer after their retries.")
    refused = property(lambda self: self._total("refused"), doc="Calls the budget refused; nothing was sent.")

    def _total(self, key: str) -> int | float:
        return sum(t[key] for t in self.teachers.values())

    @property
    def calls(self) -> int:
        """Calls sent to a teacher (answered or failed; cached and refused ones were not sent)."""
        return self.answered + self.failed

    def failure(self) -> str | None:
        """Why the run produced nothing, when every teacher that was asked failed every time."""
        if not self.failed or self.answered or self.cached:
            return None
        errors = {name: t["last_error"] for name, t in self.teachers.items() if t["failed"]}
        name, error = next(iter(errors.items()))
        return (f"every teacher call failed ({self.failed} calls, {len(errors)} of {len(self.teachers)} teachers, "
                f"none answered); {name}: {error}")

    def as_dict(self) -> dict:
        return {
            "sources": self.sources, "steps_ingested": self.steps_ingested, "steps_filtered": self.steps_filtered,
            "steps_gated_out": self.steps_gated_out, "steps_replayed": self.steps_replayed,
            "steps_unanswered": self.steps_unanswered, "steps_incomplete": self.steps_incomplete,
            "teacher_calls": self.calls, "cached_answers": self.cached,
            "calls": {"answered": self.answered, "cached": self.cached, "failed": self.failed, "refused": self.refused},
            "answered_cost_usd": self._total("cost_usd"), "unknown_cost_usd": self._total("unknown_cost_usd"),
            "pairs_found": self.pairs_found, "pairs_dropped": self.pairs_dropped, "pairs_written": self.pairs_written,
            "budget_usd": self.budget_usd, "spent_usd": self.spent_usd, "budget_exhausted": self.budget_exhausted,
            "voi": self.voi, "teachers": self.teachers, "agreement": self.agreement,
        }

    def summary(self) -> str:
        cap = f" of ${self.budget_usd:.4f}" if self.budget_usd is not None else ""
        lines = [
            f"steps: {self.steps_ingested} ingested, {self.steps_filtered} filtered, "
            f"{self.steps_gated_out} gated out (VOI), {self.steps_replayed} replayed, "
            f"{self.steps_unanswered} unanswered (every teacher failed), {self.steps_incomplete} incomplete",
            f"teacher calls: {self.answered} answered, {self.cached} cached, {self.failed} failed, "
            f"{self.refused} refused by the budget",
            f"spent ${self.spent_usd:.6f}{cap}: ${self._total('cost_usd'):.6f} on answered calls, "
            f"${self._total('unknown_cost_usd'):.6f} on calls that may have been billed (sent, no answer read)"
            + (" (budget exhausted)" if self.budget_exhausted else ""),
            f"pairs: {self.pairs_found} found, {self.pairs_written} written, dropped {self.pairs_dropped or 'none'}",
        ]
        for name, source in self.sources.items():
            if source["skipped"]:
                lines.append(f"skipped in {name}: {source['skipped']}")
            if source.get("noted"):
                lines.append(f"read in another shape in {name}: {source['noted']}")
        return "\n".join(lines)
