"""Published weight versions: complete or invisible, and publishable for tied embeddings."""

import torch
from safetensors.torch import load_file
from transformers import Qwen3Config, Qwen3ForCausalLM

from composer_prime.weights import (
    STABLE,
    WEIGHTS_FILE,
    WeightLayout,
    iter_checkpoint_tensors,
    latest_version,
    list_versions,
    load_version_state_dict,
    prune_versions,
    publish_weights,
    tensor_shapes,
    version_dir,
)


def tiny_tied_model() -> Qwen3ForCausalLM:
    config = Qwen3Config(vocab_size=50, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=8, tie_word_embeddings=True)
    return Qwen3ForCausalLM(config)


def test_tied_weights_publish_as_separate_equal_tensors(tmp_path):
    model = tiny_tied_model()
    state = model.state_dict()
    path = publish_weights(tmp_path, 1, state, model.config.to_json_string())
    back = load_file(str(path / WEIGHTS_FILE))
    assert back.keys() == state.keys()
    assert torch.equal(back["lm_head.weight"], back["model.embed_tokens.weight"])
    assert state["lm_head.weight"].data_ptr() == model.model.embed_tokens.weight.data_ptr(), "model left untouched"


def test_only_complete_versions_are_visible(tmp_path):
    model = tiny_tied_model()
    assert latest_version(tmp_path) == 0
    for version in (1, 2, 3):
        publish_weights(tmp_path, version, model.state_dict(), model.config.to_json_string())
    # A crash mid-write leaves a temporary directory and a directory without STABLE: neither counts.
    (version_dir(tmp_path, 9).with_name(".tmp_step_9")).mkdir()
    version_dir(tmp_path, 7).mkdir()
    assert list_versions(tmp_path) == [1, 2, 3] and latest_version(tmp_path) == 3
    try:
        load_version_state_dict(version_dir(tmp_path, 7))
    except FileNotFoundError as exc:
        assert STABLE in str(exc)
    else:
        raise AssertionError("an incomplete version was loaded")
    prune_versions(tmp_path, keep_last=2)
    assert list_versions(tmp_path) == [2, 3]


def test_republishing_a_version_replaces_it_whole(tmp_path):
    model = tiny_tied_model()
    publish_weights(tmp_path, 1, model.state_dict(), model.config.to_json_string())
    changed = {k: v + 1 for k, v in model.state_dict().items()}
    publish_weights(tmp_path, 1, changed, model.config.to_json_string())
    back = load_version_state_dict(version_dir(tmp_path, 1))
    assert torch.equal(back["model.norm.weight"], changed["model.norm.weight"])
    assert sorted(p.name for p in (tmp_path / "broadcasts").iterdir()) == ["step_1"]


def test_a_version_with_assets_is_a_loadable_model_directory(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from composer_prime.model.tiny import TinyModelConfig, build

    source = build(TinyModelConfig(output_dir=tmp_path / "tiny"))
    model = AutoModelForCausalLM.from_pretrained(source)
    path = publish_weights(tmp_path / "run", 1, model.state_dict(), model.config.to_json_string(), assets_dir=source)
    tokenizer = AutoTokenizer.from_pretrained(path)
    assert tokenizer.chat_template and tokenizer.eos_token == "<|im_end|>"
    reloaded = AutoModelForCausalLM.from_pretrained(path)
    assert torch.equal(reloaded.model.norm.weight, model.model.norm.weight)



def test_shapes_come_from_the_header_and_tensors_one_at_a_time(tmp_path):
    """What vLLM's reload checks a version against (before any weight changes) and how its workers read it."""
    model = tiny_tied_model()
    path = publish_weights(tmp_path, 1, model.state_dict(), model.config.to_json_string())
    assert tensor_shapes(path) == {k: tuple(v.shape) for k, v in model.state_dict().items()}
    streamed = iter_checkpoint_tensors(path)
    name, tensor = next(streamed)  # a generator: nothing past the first tensor is read yet
    assert torch.equal(tensor, model.state_dict()[name])
    assert sorted([name, *(n for n, _ in streamed)]) == sorted(model.state_dict())  # in the file's order


def test_a_checkpoint_with_tied_embeddings_saved_once_reloads_every_name_of_them(tmp_path):
    """save_pretrained keeps tied embeddings under one name; vLLM on CPU kept the previous version's output head
    when a reload brought only the input embedding (a restored base model served half of the old weights)."""
    model = tiny_tied_model()
    model.save_pretrained(tmp_path / "hf")
    layout = WeightLayout.from_module(model)
    held = tensor_shapes(tmp_path / "hf")
    assert "lm_head.weight" not in held
    copies = layout.tied_copies(held)
    assert copies == {"model.embed_tokens.weight": ["lm_head.weight"]}
    streamed = dict(iter_checkpoint_tensors(tmp_path / "hf", copies))
    assert streamed.keys() == model.state_dict().keys()
    assert torch.equal(streamed["lm_head.weight"], model.lm_head.weight)
    published = publish_weights(tmp_path / "run", 1, model.state_dict(), model.config.to_json_string())
    assert layout.tied_copies(tensor_shapes(published)) == {}  # our versions hold every name already

