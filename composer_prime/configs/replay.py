"""Replay config (`uv run replay @ configs/replay/<x>.toml`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, model_validator
from pydantic_config import BaseConfig

TraceFormat = Literal["claude-code", "codex", "openai-chat", "verifiers", "composer-prime"]


class SourceConfig(BaseConfig):
    path: Annotated[Path, Field(description="A trace file, or a directory whose *.jsonl files are all read.")]
    format: Annotated[TraceFormat, Field(description="Which ingester reads it.")]
    tools_file: Annotated[
        Path | None, Field(description="OpenAI `tools` list (JSON) for steps whose trace carries no tool schemas, "
                                       "as Claude Code logs do.")
    ] = None
    infer_tools: Annotated[
        bool, Field(description="Without tools_file, describe schemaless steps' tools from the calls in their own "
                                "trace (names, argument names and types), so teachers can call them.")
    ] = True


class TeacherConfig(BaseConfig):
    """One model behind an OpenAI-compatible /chat/completions endpoint."""

    name: Annotated[str, Field(description="Unique name; keys the cache and the provenance.")]
    model: Annotated[str, Field(description="`model` sent in each request.")]
    base_url: Annotated[str, Field(description="Endpoint base, e.g. https://openrouter.ai/api/v1 or http://127.0.0.1:8000/v1.")]
    api_key_env: Annotated[
        str | None, Field(description="Environment variable holding the API key (sent as a Bearer token); None sends none.")
    ] = None
    input_price: Annotated[float, Field(ge=0, description="USD per million input tokens.")] = 0.0
    output_price: Annotated[float, Field(ge=0, description="USD per million output tokens.")] = 0.0
    concurrency: Annotated[int, Field(ge=1, description="Most requests in flight to this teacher.")] = 4
    tier: Annotated[
        int, Field(ge=0, description="Lower tiers are asked first; higher tiers only when the lower ones disagree "
                                     "with the student and a consensus is still reachable.")
    ] = 0
    max_tokens: Annotated[int, Field(ge=1, description="Most output tokens per answer (also the worst case reserved).")] = 512
    temperature: Annotated[float, Field(ge=0, description="Sampling temperature (0: greedy, reproducible).")] = 0.0
    seed: Annotated[int | None, Field(description="Sampling seed sent with each request.")] = 0
    tool_format: Annotated[
        Literal["native", "text"],
        Field(description="native: OpenAI tool_calls and tools; text: Hermes <tool_call> text, for endpoints without tool calling."),
    ] = "native"
    stream: Annotated[
        bool, Field(description="Ask for a server-sent-event stream and assemble it (a stream cut before [DONE] is "
                                "retried): for endpoints or proxies that drop long silent requests.")
    ] = False
    timeout_s: Annotated[
        float, Field(gt=0, description="Per-request timeout (each of connect, write and every read; with stream, "
                                       "the longest wait for the next chunk).")
    ] = 120.0


class RetryConfig(BaseConfig):
    """Retries on 429, 408, 5xx, timeouts, cut connections and unreadable bodies."""

    max_attempts: Annotated[int, Field(ge=1, description="Attempts per call, the first included.")] = 6
    backoff_s: Annotated[float, Field(ge=0, description="Base delay: attempt a waits up to backoff_s * 2**a (full jitter).")] = 1.0
    max_backoff_s: Annotated[float, Field(ge=0, description="Cap on one wait, Retry-After included.")] = 60.0


class AgreementConfig(BaseConfig):
    k: Annotated[int, Field(ge=1, description="Teachers that must agree on an action other than the student's.")] = 2
    similarity: Annotated[
        float, Field(gt=0, le=1, description="1: canonical forms must be equal; below 1: difflib ratio at least this.")
    ] = 1.0
    lowercase: Annotated[bool, Field(description="Compare text actions case-insensitively.")] = False


class VOIConfig(BaseConfig):
    """Value-of-information gating: ask teachers only where the student was uncertain, measured as the
    mean token entropy of the student's own action under the student (POST /score of our inference server)."""

    enabled: Annotated[bool, Field(description="Gate steps by the student's entropy.")] = False
    student_url: Annotated[str, Field(description="Inference server serving the student.")] = "http://127.0.0.1:8000"
    tokenizer: Annotated[
        str | None, Field(description="Student tokenizer (chat template); None reads it from the server's /health model.")
    ] = None
    aggregate: Annotated[
        Literal["mean", "max"], Field(description="Per-step uncertainty: mean or max of the action's token entropies.")
    ] = "mean"
    threshold: Annotated[
        float | None, Field(ge=0, description="Ask teachers where the step's entropy (nats) is >= this; None: use top_fraction.")
    ] = None
    top_fraction: Annotated[
        float, Field(gt=0, le=1, description="Without threshold: ask teachers at this fraction of steps, the most uncertain ones.")
    ] = 0.4


class FilterConfig(BaseConfig):
    max_state_chars: Annotated[
        int | None, Field(ge=1, description="Skip steps whose state is longer (before any teacher call).")
    ] = None
    min_action_chars: Annotated[int, Field(ge=0, description="Drop pairs whose chosen or rejected action is shorter.")] = 1
    max_action_chars: Annotated[
        int | None, Field(ge=1, description="Drop pairs whose chosen or rejected action is longer.")
    ] = None
    dedup: Annotated[bool, Field(description="Keep one pair per (state, chosen, rejected).")] = True


class ReplayConfig(BaseConfig):
    """Replay trace steps with N teachers and write preference pairs where k of them agree against the student."""

    sources: Annotated[list[SourceConfig], Field(min_length=1, description="Traces to replay.")]
    teachers: Annotated[list[TeacherConfig], Field(min_length=1, description="The teacher pool.")]
    output_dir: Annotated[Path, Field(description="pairs.jsonl, stats.json and (by default) the cache go here.")] = Path(
        "outputs/replay")
    cache_path: Annotated[Path | None, Field(description="Answer cache (SQLite); None: <output_dir>/cache.sqlite.")] = None
    budget_usd: Annotated[float | None, Field(ge=0, description="Hard spending cap in USD; None: no cap.")] = None
    max_concurrent_steps: Annotated[int, Field(ge=1, description="Steps replayed at once.")] = 16
    max_steps: Annotated[int | None, Field(ge=1, description="Replay only the first N steps (after filters).")] = None
    agreement: AgreementConfig = AgreementConfig()
    retry: RetryConfig = RetryConfig()
    voi: VOIConfig = VOIConfig()
    filters: FilterConfig = FilterConfig()
    progress: Annotated[bool, Field(description="Show a rich progress bar (calls, spend, pairs).")] = True

    @model_validator(mode="after")
    def _check(self) -> ReplayConfig:
        names = [t.name for t in self.teachers]
        if len(set(names)) != len(names):
            raise ValueError(f"teacher names must be unique, got {names}")
        if self.agreement.k > len(self.teachers):
            raise ValueError(f"agreement.k ({self.agreement.k}) exceeds the number of teachers ({len(self.teachers)})")
        return self

    @property
    def cache_file(self) -> Path:
        return self.cache_path or self.output_dir / "cache.sqlite"
