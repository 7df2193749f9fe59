"""Trainer config (`uv run trainer @ file.toml`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator
from pydantic_config import BaseConfig

from composer_prime.configs.diloco import DiLoCoConfig
from composer_prime.configs.shared import LogConfig, ModelConfig, NumThreads, StoreConfig


class OptimConfig(BaseConfig):
    """AdamW."""

    lr: Annotated[float, Field(gt=0, description="Learning rate.")] = 1e-6
    weight_decay: Annotated[float, Field(ge=0, description="Decoupled weight decay.")] = 0.0
    betas: Annotated[tuple[float, float], Field(description="Adam betas.")] = (0.9, 0.999)
    max_norm: Annotated[float, Field(gt=0, description="Gradient clipping norm.")] = 1.0
    warmup_steps: Annotated[int, Field(ge=0, description="Linear learning-rate warm-up steps.")] = 0


class DPPOLossConfig(BaseConfig):
    """PRIME-RL's default loss: masked importance-weighted policy gradient (see loss/dppo.py)."""

    type: Literal["dppo"] = "dppo"
    mask_low: Annotated[float, Field(ge=0, description="Mask tokens with A <= 0 and p_train - p_inf < -mask_low.")] = 0.2
    mask_high: Annotated[float, Field(ge=0, description="Mask tokens with A > 0 and p_train - p_inf > mask_high.")] = 0.2
    kl_coef: Annotated[float, Field(ge=0, description="Weight of the (log r)^2 mismatch penalty.")] = 1e-3


class CustomLossConfig(BaseConfig):
    """A user loss `fn(inputs: LossInputs, **kwargs) -> LossOutputs`, PRIME-RL compatible."""

    type: Literal["custom"] = "custom"
    import_path: Annotated[str, Field(description="`package.module.function` of the loss.")]
    kwargs: Annotated[dict[str, Any], Field(description="Keyword arguments passed to the loss.")] = {}


class HintLossConfig(BaseConfig):
    """Channel 2, hint self-distillation (SDPO / Composer 2.5): the student on the original context is pulled
    toward the same model shown a hint, on the error turn's tokens (trainer/hint.py)."""

    weight: Annotated[float, Field(ge=0, description="alpha: weight of the channel's mean per-token loss; 0 is off.")] = 0.0
    variant: Annotated[
        Literal["jsd", "taid", "entropy_gated"],
        Field(description="jsd: generalised JSD (beta); taid: TAID with its adaptive t; entropy_gated: reverse KL "
                          "plus forward KL where the teacher is uncertain."),
    ] = "jsd"
    beta: Annotated[float, Field(ge=0, le=1, description="JSD beta: 0 KL(teacher||student), 1 KL(student||teacher).")] = 1.0
    temperature: Annotated[float, Field(gt=0, description="Both distributions are taken at this temperature.")] = 1.0
    clamp: Annotated[float | None, Field(gt=0, description="Cap on each token's loss (OPSD); None: no cap.")] = None
    side_channel: Annotated[
        Literal["full", "topk"],
        Field(description="How the trainer-side teacher reaches the loss: full logits (chunked) or top-k + tail."),
    ] = "full"
    top_k: Annotated[int, Field(ge=1, description="Teacher ids per token for side_channel = topk.")] = 64
    entropy_threshold: Annotated[float, Field(ge=0, description="entropy_gated: teacher entropy (nats) above "
                                                                "which forward KL is added.")] = 1.0
    sites_per_micro_batch: Annotated[int, Field(ge=1, description="Error sites per forward pass.")] = 16


class PreferenceLossConfig(BaseConfig):
    """Channel 3, preference pairs from trace replay (composer_prime/pairs.py), DPO or SimPO (trainer/preference.py)."""

    weight: Annotated[float, Field(ge=0, description="beta_w: weight of the channel's mean pair loss; 0 is off.")] = 0.0
    variant: Annotated[Literal["dpo", "simpo"], Field(description="dpo (sigmoid, reference model) or simpo.")] = "dpo"
    pairs: Annotated[Path | None, Field(description="Pairs JSONL written by `uv run replay`.")] = None
    beta: Annotated[float | None, Field(gt=0, description="Reward scale; None: 0.1 for dpo, 2.0 for simpo.")] = None
    gamma: Annotated[float, Field(ge=0, description="SimPO target margin.")] = 0.6
    label_smoothing: Annotated[float, Field(ge=0, lt=0.5, description="Assumed label-flip rate (cDPO).")] = 0.0
    nll_weight: Annotated[
        float, Field(ge=0, description="RPO: weight of the chosen answer's length-normalised NLL added to each pair's "
                                       "loss (keeps the chosen likelihood from falling); 0 is plain DPO / SimPO.")
    ] = 0.0
    pairs_per_step: Annotated[int, Field(ge=1, description="Pairs trained on per step (all ranks).")] = 8
    eval_fraction: Annotated[float, Field(ge=0, lt=1, description="Pairs held out (by id hash) for eval accuracy.")] = 0.1
    eval_interval: Annotated[int, Field(ge=0, description="Log held-out pair accuracy every N steps (0: start and "
                                                          "end only).")] = 0
    max_tokens: Annotated[int, Field(ge=8, description="Pairs longer than this (prompt + answer) are skipped.")] = 1024


class LossConfig(BaseConfig):
    """The composed loss: policy gradient + alpha * hint distillation + beta_w * preference."""

    pg: Annotated[DPPOLossConfig | CustomLossConfig, Field(discriminator="type")] = DPPOLossConfig()
    hint: HintLossConfig = HintLossConfig()
    preference: PreferenceLossConfig = PreferenceLossConfig()


class CheckpointConfig(BaseConfig):
    interval: Annotated[
        int, Field(ge=1, description="Save model + optimizer + step + RNG every N steps and at the last (PRIME-RL's "
                                     "default: a checkpoint is the model and twice its size of AdamW state). A "
                                     "resumed run retrains the steps after its newest checkpoint from their batches "
                                     "on disk.")
    ] = 50
    keep_last: Annotated[int, Field(ge=1, description="Checkpoints to keep on disk.")] = 2
    resume: Annotated[bool, Field(description="Resume from the newest checkpoint in output_dir if there is one.")] = True


class LoRAConfig(BaseConfig):
    """Low-rank adapters (peft) on the model's linear layers; the base weights stay frozen and untouched by AdamW.

    Weight versions are published merged (W + B A * alpha / rank), so inference loads full weights as usual.
    No adapter dropout: it would make the trainer score tokens under a different network than the sampler."""

    rank: Annotated[int, Field(ge=1, description="Rank r of each adapter.")] = 16
    alpha: Annotated[float, Field(gt=0, description="Scale numerator: the update is B A * alpha / rank.")] = 32.0
    target_modules: Annotated[
        list[str] | Literal["all-linear"],
        Field(description="Module names to adapt (e.g. [\"q_proj\", \"v_proj\"]); all-linear: every linear layer "
                          "but the output head."),
    ] = "all-linear"


class DataConfig(BaseConfig):
    """Where this trainer's batches come from; several DiLoCo sites each take one shard of every step."""

    dir: Annotated[Path | None, Field(description="Run directory the orchestrator writes steps into; None: output_dir.")] = None
    shard: Annotated[int, Field(ge=0, description="This site's shard of every step (0 .. shards - 1).")] = 0
    shards: Annotated[
        int, Field(ge=1, description="Sites sharing the orchestrator's steps (its train_world_size = shards x ranks per site).")
    ] = 1
    store: Annotated[
        StoreConfig | None,
        Field(description="Fetch steps from the orchestrator's step_store instead of a shared disk; they are "
                          "downloaded into dir (a site on another machine)."),
    ] = None
    step_public_key: Annotated[
        str | None,
        Field(description="The orchestrator's step_key public key (hex, or the .pub file beside it): with store, a "
                          "step is trained only when its seal checks (verify/step_seal.py); others are refused."),
    ] = None

    @model_validator(mode="after")
    def _store_needs_key(self) -> DataConfig:
        if self.store is not None and self.step_public_key is None:
            raise ValueError("data.store needs data.step_public_key: a step from a shared store is trained only when "
                             "the orchestrator's seal checks")
        return self


class TrainerConfig(BaseConfig):
    """Reads packed batches, steps the policy, checkpoints and publishes weight versions."""

    model: ModelConfig = ModelConfig()
    output_dir: Annotated[Path, Field(description="Run directory shared with the orchestrator.")] = Path("outputs/run")
    max_steps: Annotated[int, Field(ge=1, description="Optimizer steps to take.")] = 20
    seed: Annotated[int, Field(description="Torch seed.")] = 0
    optim: OptimConfig = OptimConfig()
    loss: LossConfig = LossConfig()
    ckpt: CheckpointConfig = CheckpointConfig()
    keep_weight_versions: Annotated[int, Field(ge=1, description="Published weight versions kept on disk.")] = 3
    batch_timeout_s: Annotated[
        float, Field(gt=0, description="Give up when no batch arrives for this long (orchestrator gone).")
    ] = 1800.0
    num_threads: NumThreads = None
    log: LogConfig = LogConfig()
    data: DataConfig = DataConfig()
    diloco: Annotated[
        DiLoCoConfig | None,
        Field(description="Train as one site of a Streaming DiLoCo run (composer_prime/diloco); None: a lone trainer."),
    ] = None
    activation_checkpointing: Annotated[
        bool, Field(description="Recompute each decoder layer's activations in the backward pass instead of keeping "
                                "them: less memory, about one more forward pass of compute.")
    ] = False
    mixed_precision: Annotated[
        bool, Field(description="With a half-precision model.dtype (bfloat16, float16): keep parameters and AdamW "
                                "state in float32 and compute in model.dtype (FSDP2's MixedPrecisionPolicy when "
                                "sharded, autocast otherwise); published versions are in model.dtype. Off: train "
                                "the half-precision weights directly.")
    ] = True
    lora: Annotated[
        LoRAConfig | None, Field(description="Train low-rank adapters instead of all weights; None: full fine-tuning.")
    ] = None
    gpu_memory_fraction: Annotated[
        float | None,
        Field(gt=0, le=1, description="Cap on the share of its GPU's memory this trainer's allocator may take "
                                      "(torch.cuda.set_per_process_memory_fraction); rl sets it on a GPU shared "
                                      "with vLLM to what vLLM leaves. None: no cap.")
    ] = None
    publish_weights: Annotated[
        bool, Field(description="Publish each step's weights as a version. Of several DiLoCo sites only the lead "
                                "does: its versions are what inference and workers sample from.")
    ] = True

    @model_validator(mode="after")
    def _check_sites(self) -> TrainerConfig:
        if self.data.shard >= self.data.shards:
            raise ValueError(f"data.shard {self.data.shard} must be below data.shards {self.data.shards}")
        return self
