"""Orchestrator config (`uv run orchestrator @ file.toml`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, model_validator
from pydantic_config import BaseConfig

from composer_prime.configs.coordinator import AdmissionConfig, AssignmentsConfig, UploadsConfig
from composer_prime.configs.heldout import PassAtKConfig
from composer_prime.configs.hints import HintsConfig
from composer_prime.configs.rollout import EnvConfig, SamplingConfig
from composer_prime.configs.shared import LogConfig, ModelConfig, StoreConfig
from composer_prime.configs.verify import VerifyConfig


class OverlongConfig(BaseConfig):
    """DAPO's soft overlong punishment: a linear penalty over the last `buffer` tokens before max_tokens."""

    buffer: Annotated[int, Field(ge=1, description="Tokens before max_tokens where the penalty ramps up.")] = 16
    penalty: Annotated[float, Field(ge=0, description="Penalty at max_tokens (subtracted from the reward).")] = 1.0


class AdvantageConfig(BaseConfig):
    std_normalize: Annotated[bool, Field(description="Divide by the group's reward std (GRPO); off by default.")] = False
    drop_uniform_groups: Annotated[
        bool, Field(description="Drop groups whose rewards are all equal (DAPO dynamic sampling).")
    ] = False
    overlong: Annotated[OverlongConfig | None, Field(description="Soft overlong penalty; None disables it.")] = None
    max_redraws: Annotated[
        int,
        Field(ge=0, description="Dynamic sampling: new prompts tried per batch slot before a uniform group "
                                "(all advantages zero) is kept anyway, so a step always completes."),
    ] = 8


class InRunEvalConfig(PassAtKConfig):
    """Held-out evaluation during an rl run (the `eval` command has its own EvalCommandConfig)."""

    num_examples: Annotated[int, Field(ge=0, description="Held-out prompts per evaluation; 0 disables eval.")] = 64
    interval: Annotated[int, Field(ge=0, description="Evaluate every N steps (0: only at start and end).")] = 0
    greedy: Annotated[
        bool, Field(description="Also evaluate greedily (one sample per prompt at T = 0), logged as eval/greedy/*.")
    ] = True


class WorkersConfig(BaseConfig):
    """orchestrator.source = "workers": volunteer workers sample, this process admits and verifies them."""

    host: Annotated[str, Field(description="Interface the coordinator binds (0.0.0.0 to admit other hosts).")] = "127.0.0.1"
    port: Annotated[int, Field(ge=0, le=65535, description="Coordinator port (workers' run_url).")] = 8700
    join_token: Annotated[str | None, Field(min_length=8, description="Secret every volunteer needs to join (an open "
                                                                      "run: one shared token).")] = None
    volunteer_tokens: Annotated[
        Path | None,
        Field(description="Instead of join_token: a file of SHA-256 digests (hex, one a line) of tokens given one per "
                          "volunteer; each admits the first key that joins with it and no other, so a banned volunteer "
                          "cannot rejoin under a new key. Read at every join: append a line to admit one more."),
    ] = None
    run_id: Annotated[str, Field(description="Run name announced to workers.")] = "run"
    run_key: Annotated[Path, Field(description="The run's private key file (the one broadcast.watch signs weight "
                                               "manifests with): it signs assignments and the answers workers get.")]
    store: Annotated[StoreConfig, Field(description="Run store root as the coordinator uses it: it reads rollouts/ and "
                                                    "grants workers uploads there (they hold no credential).")]
    broadcast_servers: Annotated[list[str], Field(description="Origin and relay URLs as workers reach them.")] = []
    prompts_per_batch: Annotated[int, Field(ge=1, description="Prompts per uploaded batch.")] = 4
    weights_dir: Annotated[
        Path | None, Field(description="Run directory of the lead trainer whose versions are trusted for verification; "
                                       "None: output_dir.")
    ] = None
    poll_s: Annotated[float, Field(gt=0, description="Seconds between looks at the store for new batches.")] = 0.5
    verify: VerifyConfig = VerifyConfig()
    uploads: UploadsConfig = UploadsConfig()
    assignments: AssignmentsConfig = AssignmentsConfig()
    admission: AdmissionConfig = AdmissionConfig()

    @model_validator(mode="after")
    def _one_way_in(self) -> WorkersConfig:
        if (self.join_token is None) == (self.volunteer_tokens is None):
            raise ValueError("set exactly one of workers.join_token (shared) and workers.volunteer_tokens (one each)")
        return self


class OrchestratorConfig(BaseConfig):
    """Runs rollouts against the inference server, scores them and writes trainer batches."""

    model: ModelConfig = ModelConfig()
    output_dir: Annotated[Path, Field(description="Run directory shared with the trainer.")] = Path("outputs/run")
    max_steps: Annotated[int, Field(ge=1, description="Trainer steps to produce batches for.")] = 20
    seed: Annotated[int, Field(description="Seed for prompt sampling.")] = 0
    inference_url: Annotated[str, Field(description="Base URL of the inference server.")] = "http://127.0.0.1:8000"
    env: EnvConfig = EnvConfig()
    batch_size: Annotated[int, Field(ge=1, description="Rollouts per trainer step.")] = 64
    group_size: Annotated[int, Field(ge=1, description="Rollouts per prompt (the advantage baseline group).")] = 8
    sampling: SamplingConfig = SamplingConfig()
    advantage: AdvantageConfig = AdvantageConfig()
    max_off_policy_steps: Annotated[
        int, Field(ge=0, description="Drop rollouts sampled by a policy more than this many versions old.")
    ] = 2
    async_level: Annotated[
        int, Field(ge=0, description="How many steps the orchestrator may run ahead of the newest weights.")
    ] = 1
    max_concurrent: Annotated[int, Field(ge=1, description="Rollout groups in flight at once.")] = 16
    seed_rollouts: Annotated[
        bool | None,
        Field(description="Give each training rollout a sampling seed derived from (seed, step, slot), so a rerun "
                          "draws the same samples. None: on, except when inference runs vLLM, which samples seeded "
                          "rows one at a time in Python (and whose batched kernels differ between runs anyway)."),
    ] = None
    max_turns: Annotated[
        int, Field(ge=1, description="Tool environments: most assistant turns per rollout (the whole "
                                     "conversation must also fit seq_len).")
    ] = 30
    seq_len: Annotated[int, Field(ge=8, description="Tokens per packed micro-batch row.")] = 2048
    micro_batch_rows: Annotated[int, Field(ge=1, description="Rows per micro-batch.")] = 1
    train_world_size: Annotated[int, Field(ge=1, description="Data-parallel trainer ranks to split each step over.")] = 1
    eval: InRunEvalConfig = InRunEvalConfig()
    hints: HintsConfig = HintsConfig()
    inference_timeout_s: Annotated[
        float, Field(gt=0, description="Give up when the inference server is not ready after this long.")
    ] = 600.0
    weight_poll_s: Annotated[
        float, Field(gt=0, description="Seconds between looks for a newly published weight version.")
    ] = 0.5
    weight_timeout_s: Annotated[
        float, Field(gt=0, description="Give up when a needed weight version has not appeared after this long.")
    ] = 1800.0
    log: LogConfig = LogConfig()
    source: Annotated[
        Literal["inference", "workers"],
        Field(description="Where rollouts come from: this run's inference server, or volunteer workers "
                          "([orchestrator.workers]), verified before they train."),
    ] = "inference"
    workers: Annotated[WorkersConfig | None, Field(description="Volunteer workers (source = 'workers').")] = None
    step_store: Annotated[
        StoreConfig | None,
        Field(description="Also publish every step to this store (steps/step_<N>/), for trainer sites that do not "
                          "share output_dir (their data.store)."),
    ] = None
    step_key: Annotated[
        Path | None,
        Field(description="Ed25519 key file that seals every step in step_store (created with <file>.pub beside it "
                          "on first use); sites check the seal with that public key (trainer data.step_public_key)."),
    ] = None

    @model_validator(mode="after")
    def _groups_divide_batch(self) -> OrchestratorConfig:
        if self.sampling.temperature == 0:
            raise ValueError("sampling.temperature must be > 0: the trainer divides logits by it")
        if self.batch_size % self.group_size:
            raise ValueError(f"batch_size ({self.batch_size}) must be a multiple of group_size ({self.group_size})")
        if self.step_store is not None and self.step_key is None:
            raise ValueError("step_store needs step_key: remote sites train only on steps the orchestrator sealed")
        if self.source == "workers":
            if self.workers is None:
                raise ValueError("source = 'workers' needs an [orchestrator.workers] section")
            if self.sampling.top_p < 1:
                raise ValueError("source = 'workers' samples without top-p (the run tells workers the temperature "
                                 "only): set sampling.top_p = 1")
            if self.eval.num_examples or self.hints.enabled:
                raise ValueError("source = 'workers' has no inference server for held-out eval or hint sites: set "
                                 "eval.num_examples = 0 and hints.enabled = false (evaluate with `uv run eval`)")
        return self
