from pathlib import Path

import pytest
import torch

from composer_prime.cli import run_cli
from composer_prime.configs.shared import ModelConfig
from composer_prime.errors import UserError
from composer_prime.model.load import load_model, load_tokenizer
from composer_prime.model.tiny import IM_END, TinyModelConfig, build

MESSAGES = [
    {"role": "system", "content": "Reverse the letters."},
    {"role": "user", "content": "c a t"},
]
CHATML = (
    "<|im_start|>system\nReverse the letters.<|im_end|>\n"
    "<|im_start|>user\nc a t<|im_end|>\n"
    "<|im_start|>assistant\n"
)


def _build(path: Path, seed: int = 0) -> Path:
    return build(TinyModelConfig(output_dir=path, seed=seed, corpus_lines=2000))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return _build(tmp_path_factory.mktemp("tiny") / "model")


def test_loads_with_the_project_loaders_and_generates_until_im_end(tiny):
    tokenizer = load_tokenizer(ModelConfig(path=str(tiny)))
    model = load_model(ModelConfig(path=str(tiny)))
    assert 0.8e6 < sum(p.numel() for p in model.parameters()) < 1.1e6
    assert model.config.model_type == "qwen3" and model.config.tie_word_embeddings
    assert tokenizer.eos_token == IM_END and tokenizer.pad_token_id not in (None, tokenizer.eos_token_id)
    assert model.generation_config.eos_token_id == tokenizer.convert_tokens_to_ids(IM_END)
    assert "chat_template" in (tiny / "tokenizer_config.json").read_text()

    inputs = tokenizer(["c a t"], return_tensors="pt")  # no token_type_ids: Qwen3 rejects them
    torch.manual_seed(0)
    out = model.generate(**inputs, max_new_tokens=8, do_sample=True)
    assert out.shape[0] == 1 and out.shape[1] > inputs["input_ids"].shape[1]


def test_chat_template_round_trips(tiny):
    tokenizer = load_tokenizer(ModelConfig(path=str(tiny)))
    assert tokenizer.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=False) == CHATML
    assert tokenizer.apply_chat_template(MESSAGES, tokenize=False) == CHATML.removesuffix("<|im_start|>assistant\n")
    ids = tokenizer.apply_chat_template(MESSAGES, add_generation_prompt=True, return_dict=False)
    assert tokenizer.decode(ids) == CHATML
    assert ids.count(tokenizer.convert_tokens_to_ids("<|im_start|>")) == 3
    # Space-separated letters are one token each, whatever the BPE merges.
    assert len(tokenizer.encode("z y x w v", add_special_tokens=False)) == 5
    assert tokenizer.decode(ids, skip_special_tokens=True).count("im_") == 0


def test_build_is_deterministic_for_a_seed(tmp_path, tiny):
    again, other = _build(tmp_path / "again"), _build(tmp_path / "other", seed=1)
    for name in ("model.safetensors", "tokenizer.json", "tokenizer_config.json", "config.json"):
        assert (again / name).read_bytes() == (tiny / name).read_bytes(), name
    assert (other / "model.safetensors").read_bytes() != (tiny / "model.safetensors").read_bytes()
    assert (other / "tokenizer.json").read_bytes() != (tiny / "tokenizer.json").read_bytes()


def test_bad_config_is_one_line(capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_:
        run_cli(TinyModelConfig, build, ["--output-dir", str(tmp_path / "m"), "--num-heads", "3"])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and "\n" not in err
    assert err.startswith("error: config:") and "num_heads" in err
    assert not (tmp_path / "m").exists()


def test_other_architectures_reuse_a_tokenizer_and_refuse_unknown_config_fields(tmp_path, tiny):
    built = build(TinyModelConfig(output_dir=tmp_path / "gpt2", architecture="gpt2", tokenizer_from=tiny,
                                  extra={"attn_pdrop": 0.0}))
    model = load_model(ModelConfig(path=str(built)))
    assert model.config.model_type == "gpt2" and model.config.attn_pdrop == 0.0
    assert (built / "tokenizer.json").read_bytes() == (tiny / "tokenizer.json").read_bytes()
    with pytest.raises(UserError, match="^tiny-model extra: llama config has no field 'no_such_field'$"):
        build(TinyModelConfig(output_dir=tmp_path / "bad", architecture="llama", tokenizer_from=tiny,
                              extra={"no_such_field": 1}))
    assert not (tmp_path / "bad").exists()


@pytest.mark.parametrize("arch", ["qwen3_moe", "mixtral", "deepseek_v3"])
def test_mixtures_of_experts_route_each_token_to_some_of_their_experts(tmp_path, tiny, arch):
    built = build(TinyModelConfig(output_dir=tmp_path / arch, architecture=arch, tokenizer_from=tiny, hidden_size=64,
                                  num_layers=2, intermediate_size=32, num_experts=3, num_experts_per_tok=2))
    model = load_model(ModelConfig(path=str(built)))
    config = model.config
    assert config.model_type == arch and config.num_experts_per_tok == 2
    assert (config.n_routed_experts if arch == "deepseek_v3" else config.num_local_experts) == 3
    fused = [p for name, p in model.named_parameters() if ".experts." in name]  # [experts, out, in] per layer
    assert fused and all(p.dim() == 3 and p.shape[0] == 3 for p in fused)
    if arch == "deepseek_v3":  # latent attention, a dense first layer, then routed + shared experts
        assert config.n_routed_experts == 3 and config.first_k_dense_replace == 1 and config.kv_lora_rank == 16
        assert config.num_key_value_heads == config.num_attention_heads
        assert not any("experts" in name for name, _ in model.model.layers[0].named_parameters())
        assert any("shared_experts" in name for name, _ in model.model.layers[1].named_parameters())


def test_more_experts_per_token_than_experts_is_one_line(capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_:
        run_cli(TinyModelConfig, build, ["--output-dir", str(tmp_path / "m"), "--architecture", "mixtral",
                                         "--num-experts", "2", "--num-experts-per-tok", "3"])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and "\n" not in err and "num_experts_per_tok (3) must be at most num_experts (2)" in err
