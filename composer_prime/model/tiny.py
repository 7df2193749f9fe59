"""Build a tiny causal LM and its tokenizer from scratch, offline.

`uv run tiny-model @ configs/quickstart/tiny_model.toml` writes a directory that
`transformers.AutoModelForCausalLM` / `AutoTokenizer` load like any hub checkpoint: a
byte-level BPE tokenizer trained on a generated corpus (or copied from another model directory),
with ChatML special tokens and chat template, and a randomly initialised model (~1M parameters by
default) of one of several architectures: Qwen3 (the quickstart's), Llama, Qwen2, Gemma2, Phi3,
GPT-NeoX, GPT-2, or the mixtures of experts Qwen3-MoE, Mixtral and DeepSeek-V3 (multi-head latent
attention, a shared expert, its first layer dense). Everything derives from `seed`, so two builds with
one config are byte-identical.
"""

from __future__ import annotations

import random
import string
from pathlib import Path
from typing import Annotated, Literal

import torch
from pydantic import Field, model_validator
from pydantic_config import BaseConfig
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import (AutoConfig, AutoModelForCausalLM, GenerationConfig, PretrainedConfig, PreTrainedModel,
                          PreTrainedTokenizerBase, PreTrainedTokenizerFast)

from composer_prime.cli import run_cli
from composer_prime.configs.shared import ModelConfig
from composer_prime.errors import UserError
from composer_prime.model.load import load_tokenizer
from composer_prime.model.save import save_model

PAD, IM_START, IM_END = "<|pad|>", "<|im_start|>", "<|im_end|>"

CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


Architecture = Literal["qwen3", "llama", "qwen2", "gemma2", "phi3", "gpt_neox", "gpt2", "qwen3_moe", "mixtral",
                       "deepseek_v3"]


class TinyModelConfig(BaseConfig):
    """A from-scratch tokenizer + causal LM, deterministic for a seed."""

    output_dir: Annotated[Path, Field(description="Directory to write the model and tokenizer to (replaced).")] = Path(
        "outputs/tiny-model"
    )
    seed: Annotated[int, Field(description="Seed for the corpus, the tokenizer and the weight init.")] = 0
    vocab_size: Annotated[
        int, Field(ge=300, description="BPE vocabulary size, special tokens included (256 byte tokens + merges).")
    ] = 1024
    corpus_lines: Annotated[int, Field(ge=100, description="Lines of generated text the tokenizer is trained on.")] = (
        20000
    )
    hidden_size: Annotated[int, Field(ge=8, description="Model width.")] = 128
    num_layers: Annotated[int, Field(ge=1, description="Transformer blocks.")] = 4
    num_heads: Annotated[int, Field(ge=1, description="Attention (query) heads.")] = 4
    num_kv_heads: Annotated[int, Field(ge=1, description="Key/value heads (grouped-query attention).")] = 2
    intermediate_size: Annotated[int, Field(ge=8, description="MLP hidden width (of each expert, in a mixture of "
                                                              "experts).")] = 384
    num_experts: Annotated[int, Field(ge=1, description="Routed experts per MoE layer (qwen3_moe, mixtral, "
                                                        "deepseek_v3; ignored otherwise).")] = 4
    num_experts_per_tok: Annotated[int, Field(ge=1, description="Experts each token is routed to (MoE only).")] = 2
    max_position_embeddings: Annotated[int, Field(ge=16, description="Longest sequence the model accepts.")] = 512
    architecture: Annotated[
        Architecture,
        Field(description="transformers model type to build. gpt_neox, gpt2 and deepseek_v3 have no grouped-query "
              "attention (num_kv_heads is ignored); gpt2 has learned absolute position embeddings; qwen3_moe, "
              "mixtral and deepseek_v3 are mixtures of experts (num_experts, num_experts_per_tok)."),
    ] = "qwen3"
    tokenizer_from: Annotated[
        Path | None,
        Field(description="Copy the tokenizer (and its chat template) of this model directory instead of training "
              "one; vocab_size and corpus_lines are then ignored."),
    ] = None
    extra: Annotated[
        dict[str, int | float | bool | str],
        Field(description="More fields of the architecture's transformers config, e.g. sliding_window = 8, "
              "final_logit_softcapping = 30.0 or attention_dropout = 0.1; a field the config lacks is refused."),
    ] = {}

    @model_validator(mode="after")
    def _check_heads(self) -> TinyModelConfig:
        if self.hidden_size % self.num_heads:
            raise ValueError(f"hidden_size ({self.hidden_size}) must be a multiple of num_heads ({self.num_heads})")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_heads ({self.num_heads}) must be a multiple of num_kv_heads ({self.num_kv_heads})")
        if self.num_experts_per_tok > self.num_experts:
            raise ValueError(f"num_experts_per_tok ({self.num_experts_per_tok}) must be at most num_experts "
                             f"({self.num_experts})")
        return self


# Chat roles and common instruction words, so that chat prompts take few tokens.
COMMON_WORDS = (
    "system user assistant the a an of to and in is it you that for on with as are be this answer "
    "question reply letters words text reverse reversed order write give say repeat copy count "
    "number sort list first last each every one two three what which please"
).split()


def corpus(num_lines: int, seed: int) -> list[str]:
    """Generated text: common words, random lowercase words, space-separated letters (one
    token each after BPE, which tasks over letters rely on), capitalised words, numbers and
    punctuation."""
    rng = random.Random(seed)
    lower = string.ascii_lowercase

    def word() -> str:
        kind = rng.random()
        if kind < 0.3:
            return rng.choice(COMMON_WORDS)
        if kind < 0.55:
            return "".join(rng.choices(lower, k=rng.randint(1, 8)))
        if kind < 0.8:
            return " ".join(rng.choices(lower, k=rng.randint(2, 10)))
        if kind < 0.9:
            return "".join(rng.choices(lower, k=rng.randint(2, 8))).capitalize() + rng.choice(".,:;?!")
        return str(rng.randint(0, 10_000))

    return [" ".join(word() for _ in range(rng.randint(4, 12))) for _ in range(num_lines)]


def build_tokenizer(config: TinyModelConfig) -> PreTrainedTokenizerFast:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=config.vocab_size,
        special_tokens=[PAD, IM_START, IM_END],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),  # any byte stays encodable
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus(config.corpus_lines, config.seed), trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token=PAD,
        eos_token=IM_END,
        additional_special_tokens=[IM_START],
        chat_template=CHAT_TEMPLATE,
        model_max_length=config.max_position_embeddings,
        model_input_names=["input_ids", "attention_mask"],  # Qwen3 takes no token_type_ids
    )


def model_config(config: TinyModelConfig, tokenizer: PreTrainedTokenizerBase) -> PretrainedConfig:
    """The transformers config of `config.architecture`, sized by `config`."""
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    common = dict(vocab_size=len(tokenizer), tie_word_embeddings=True, bos_token_id=None, eos_token_id=eos,
                  pad_token_id=pad)
    if config.architecture == "gpt2":  # GPT-2 names its sizes differently and has no separate kv heads
        sizes = dict(n_embd=config.hidden_size, n_layer=config.num_layers, n_head=config.num_heads,
                     n_inner=config.intermediate_size, n_positions=config.max_position_embeddings)
    else:
        sizes = dict(hidden_size=config.hidden_size, intermediate_size=config.intermediate_size,
                     num_hidden_layers=config.num_layers, num_attention_heads=config.num_heads,
                     max_position_embeddings=config.max_position_embeddings)
        if config.architecture == "deepseek_v3":  # latent attention decompresses keys/values for every head
            sizes["num_key_value_heads"] = config.num_heads
        elif config.architecture != "gpt_neox":
            sizes["num_key_value_heads"] = config.num_kv_heads
        if config.architecture in ("qwen3", "gemma2", "qwen3_moe"):
            sizes["head_dim"] = config.hidden_size // config.num_heads
        sizes |= _experts(config)
    built = AutoConfig.for_model(config.architecture, **common, **sizes)
    unknown = sorted(key for key in config.extra if not hasattr(built, key))
    if unknown:
        raise UserError(f"tiny-model extra: {config.architecture} config has no field {unknown[0]!r}")
    for key, value in config.extra.items():
        setattr(built, key, value)
    return built


def _experts(config: TinyModelConfig) -> dict:
    """The mixture-of-experts fields of `config.architecture`'s config (none for a dense one)."""
    routing = dict(num_experts_per_tok=config.num_experts_per_tok)
    if config.architecture == "qwen3_moe":
        return routing | dict(num_experts=config.num_experts, moe_intermediate_size=config.intermediate_size)
    if config.architecture == "mixtral":
        return routing | dict(num_local_experts=config.num_experts)
    if config.architecture == "deepseek_v3":
        # Multi-head latent attention at the model's width: queries and keys/values through low-rank projections,
        # half of each head rotary. One expert group, so routing is plain top-k over all experts.
        head_dim = config.hidden_size // config.num_heads
        return routing | dict(n_routed_experts=config.num_experts, n_shared_experts=1,
                              moe_intermediate_size=config.intermediate_size, first_k_dense_replace=1,
                              n_group=1, topk_group=1, q_lora_rank=config.hidden_size // 2,
                              kv_lora_rank=config.hidden_size // 4, qk_rope_head_dim=head_dim // 2,
                              qk_nope_head_dim=head_dim // 2, v_head_dim=head_dim)
    return {}


def build_model(config: TinyModelConfig, tokenizer: PreTrainedTokenizerBase) -> PreTrainedModel:
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    torch.manual_seed(config.seed)
    model = AutoModelForCausalLM.from_config(model_config(config, tokenizer))
    model.generation_config = GenerationConfig(eos_token_id=eos, pad_token_id=pad)
    return model


def build(config: TinyModelConfig) -> Path:
    """Write tokenizer + model to `config.output_dir`; returns it."""
    if config.tokenizer_from is not None:
        tokenizer = load_tokenizer(ModelConfig(path=str(config.tokenizer_from)))
    else:
        tokenizer = build_tokenizer(config)
    model = build_model(config, tokenizer)
    out = save_model(model, tokenizer, config.output_dir)
    params = sum(p.numel() for p in model.parameters())
    print(f"tiny model: {params / 1e6:.2f}M parameters, vocab {len(tokenizer)}, written to {out}", flush=True)
    return out


def cli() -> None:
    run_cli(TinyModelConfig, build)
