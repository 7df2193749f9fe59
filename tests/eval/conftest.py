import pytest

from composer_prime.model.tiny import TinyModelConfig, build


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """A ~1M-parameter Qwen3 model with a ChatML tokenizer, built offline (composer_prime.model.tiny)."""
    return build(TinyModelConfig(output_dir=tmp_path_factory.mktemp("tiny") / "model", corpus_lines=2000))
