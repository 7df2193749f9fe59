"""A GGUF file (llama.cpp's format) as a Hugging Face model directory.

The weights go through transformers' own GGUF loader (`from_pretrained(..., gguf_file=...)`), told to
dequantize them to float32 (transformers 5 otherwise keeps them in GGUF blocks when a kernel is installed).
The tokenizer does not, because neither transformers gets SmolLM2's right: 4.57 makes a `LlamaTokenizer`
with `<|im_start|>` as EOS and a BOS prepended to every text (and transformers 5 rebuilds a saved
`LlamaTokenizer` with a Metaspace pipeline that drops the spaces of a byte-level vocabulary: 'ĊAnyĠother'
for "\nAny other"); 5.19 gets the special tokens right but ignores the GGUF's pre-tokenizer name
('smollm': every digit split off first), so 10 of 3000 random strings with digits came out as other ids
than SmolLM2 was trained on. So the tokenizer is built here, with `tokenizers`, from the GGUF's metadata
(vocabulary, merges, token types, special ids, pre-tokenizer name, chat template), and saved as a plain
`PreTrainedTokenizerFast`, which transformers loads from `tokenizer.json` verbatim. What this cannot build
exactly (another tokenizer model, an unknown pre-tokenizer, a BOS or space prefix to add, unusual token
types) is refused in one line rather than approximated.

Before the directory is published, it is loaded back with `AutoTokenizer` and checked: the same ids
as the built tokenizer, every probe text (spaces, newlines, code, non-ASCII) decoded back to itself,
and a chat turn ending with the EOS token that stops sampling.
"""

from __future__ import annotations

from pathlib import Path

import torch
from gguf import GGUFReader
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors
from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig, GgufConfig, PreTrainedTokenizerFast

from composer_prime.errors import UserError
from composer_prime.model.save import staged_dir, write_model

# llama.cpp's token types (gguf.TokenType): plain vocabulary entries and special (control) tokens.
NORMAL, CONTROL = 1, 3

# llama.cpp's pre-tokenizer names (`tokenizer.ggml.pre`) and the `tokenizers` pipeline that splits text
# the same way. "smollm": every digit alone, then GPT-2's byte-level regex (SmolLM2's own tokenizer.json).
PRE_TOKENIZERS = {
    "smollm": lambda: pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ]),
}

# Texts whose round trip (encode, then decode) the written tokenizer must pass.
PROBES = (
    "Hello world\nAny other question?",
    "def reverse(s):\n    return s[::-1]  # two spaces\n\tthen a tab",
    "naïve café, 日本語, emoji 🙂",
    "  leading and trailing spaces  ",
    "12 + 345 = 357\n\n",
)


def open_gguf(path: Path) -> GGUFReader:
    try:
        return GGUFReader(path)
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot read GGUF file {path}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None


def field(reader: GGUFReader, key: str, default: object = UserError) -> object:
    """The value of metadata `key`; a missing key raises UserError unless a default is given."""
    if key not in reader.fields:
        if default is UserError:
            raise UserError(f"GGUF file has no {key!r}; cannot build its tokenizer")
        return default
    return reader.fields[key].contents()


def build_tokenizer(reader: GGUFReader) -> PreTrainedTokenizerFast:
    """The byte-level BPE tokenizer a GGUF describes, with its special tokens and chat template."""
    kind = field(reader, "tokenizer.ggml.model")
    if kind != "gpt2":
        raise UserError(f"GGUF tokenizer model {kind!r} is not supported: only byte-level BPE ('gpt2') is built")
    pre = field(reader, "tokenizer.ggml.pre", "default")
    if pre not in PRE_TOKENIZERS:
        raise UserError(f"GGUF pre-tokenizer {pre!r} is not supported (known: {', '.join(sorted(PRE_TOKENIZERS))})")
    if field(reader, "tokenizer.ggml.add_bos_token", False) or field(reader, "tokenizer.ggml.add_space_prefix", False):
        raise UserError("GGUF tokenizer adds a BOS token or a space prefix, which this converter does not build")
    tokens, types = field(reader, "tokenizer.ggml.tokens"), field(reader, "tokenizer.ggml.token_type")
    if len(types) != len(tokens) or set(types) - {NORMAL, CONTROL}:
        raise UserError(f"GGUF token types {sorted(set(types) - {NORMAL, CONTROL})} are not supported "
                        f"(only normal and control tokens, one type per token)")
    vocab = {token: i for i, token in enumerate(tokens)}
    if len(vocab) != len(tokens):
        raise UserError("GGUF vocabulary has duplicate tokens")
    merges = [tuple(merge.split(" ")) for merge in field(reader, "tokenizer.ggml.merges")]
    if any(len(merge) != 2 for merge in merges):
        raise UserError("GGUF merges must be pairs of tokens separated by one space")

    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False))
    tokenizer.pre_tokenizer = PRE_TOKENIZERS[pre]()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens([AddedToken(token, special=True, normalized=False)
                                  for token, kind in zip(tokens, types) if kind == CONTROL])

    def special(key: str) -> str | None:
        index = field(reader, f"tokenizer.ggml.{key}_token_id", None)
        if index is not None and not 0 <= index < len(tokens):
            raise UserError(f"GGUF {key} token id {index} is outside the vocabulary of {len(tokens)}")
        return None if index is None else tokens[index]

    if special("eos") is None:
        raise UserError("GGUF file names no EOS token (tokenizer.ggml.eos_token_id)")
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token=special("bos"), eos_token=special("eos"), unk_token=special("unknown"),
        pad_token=special("padding"), chat_template=field(reader, "tokenizer.chat_template"),
        model_max_length=field(reader, f"{field(reader, 'general.architecture')}.context_length"),
        clean_up_tokenization_spaces=False, model_input_names=["input_ids", "attention_mask"],  # no token_type_ids
    )


def check_tokenizer(directory: Path, built: PreTrainedTokenizerFast) -> None:
    """Load the written tokenizer as a user would and refuse it unless it behaves as `built` does."""
    loaded = AutoTokenizer.from_pretrained(directory)
    for text in PROBES:
        ids = loaded(text)["input_ids"]
        if ids != built(text)["input_ids"] or loaded.decode(ids) != text:
            raise UserError(f"written tokenizer does not round-trip {text!r} (decoded {loaded.decode(ids)!r})")
    if loaded.eos_token_id != built.eos_token_id:
        raise UserError(f"written tokenizer's EOS is {loaded.eos_token!r}, the GGUF's {built.eos_token!r}")
    chat = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    ids = loaded(loaded.apply_chat_template(chat, tokenize=False), add_special_tokens=False)["input_ids"]
    reply = loaded("Hello", add_special_tokens=False)["input_ids"]
    ends = [i + len(reply) for i in range(len(ids)) if ids[i:i + len(reply)] == reply]
    if not ends or ends[-1] >= len(ids) or ids[ends[-1]] != loaded.eos_token_id:
        raise UserError(f"the chat template does not end an assistant turn with the EOS token {loaded.eos_token!r}, "
                        f"so sampling would not stop there")


def convert_gguf(path: Path, output_dir: Path, provenance: dict[str, str] | None = None) -> Path:
    """Write the model and tokenizer of GGUF `path` as a Hugging Face directory at `output_dir` (replaced).

    `provenance` (where the file came from) is written beside them as `fetch_model.json`."""
    reader = open_gguf(path)
    tokenizer = build_tokenizer(reader)
    try:
        model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32,
                                                     quantization_config=GgufConfig(dequantize=True))
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise UserError(f"cannot load the weights of {path}: {str(exc).splitlines()[0] if str(exc) else exc!r}") from None
    if model.get_input_embeddings().num_embeddings != len(tokenizer):
        raise UserError(f"GGUF model has {model.get_input_embeddings().num_embeddings} embeddings "
                        f"for a vocabulary of {len(tokenizer)}")
    model.generation_config = GenerationConfig(bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                                               pad_token_id=tokenizer.pad_token_id)
    with staged_dir(output_dir) as tmp:
        write_model(model, tokenizer, tmp, provenance)
        check_tokenizer(tmp, tokenizer)
    return output_dir
