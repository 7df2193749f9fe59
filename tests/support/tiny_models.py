"""A tiny Qwen3 model with a locally trained byte-level BPE tokenizer (vocab 300, ChatML), for tests and benchmarks."""

from __future__ import annotations

import random
import string
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import AutoModelForCausalLM, GenerationConfig, PreTrainedTokenizerFast, Qwen3Config

CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _corpus(lines: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    words = ["the", "reverse", "text", "answer", "user", "assistant", "hello", "world", "abc", "please"]
    return [
        " ".join(rng.choice(words) if rng.random() < 0.5 else "".join(rng.choices(string.ascii_lowercase, k=4))
                 for _ in range(rng.randint(3, 10)))
        for _ in range(lines)
    ]


def build_tiny_model(path: Path, max_positions: int = 256) -> Path:
    """Tokenizer (vocab 300, ChatML) and a randomly initialised 2-layer Qwen3 with tied embeddings."""
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(_corpus(400), trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    ))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"], chat_template=CHATML,
    )
    eos, pad = tokenizer.convert_tokens_to_ids(["<|im_end|>", "<|endoftext|>"])
    config = Qwen3Config(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=max_positions,
        tie_word_embeddings=True, bos_token_id=None, eos_token_id=eos, pad_token_id=pad,
        initializer_range=0.2,  # peaked next-token distributions: greedy ties would make tests flaky
    )
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config)
    model.generation_config = GenerationConfig(eos_token_id=eos, pad_token_id=pad)
    tokenizer.save_pretrained(path, save_jinja_files=False)
    model.save_pretrained(path)
    return path
