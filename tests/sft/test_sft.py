import dataclasses
from pathlib import Path

import pytest
import torch

from composer_prime.cli import run_cli
from composer_prime.configs.sft import SFTConfig, SFTOptimConfig
from composer_prime.configs.shared import LogConfig, ModelConfig
from composer_prime.errors import UserError
from composer_prime.model.load import load_model, load_tokenizer
from composer_prime.model.tiny import TinyModelConfig, build
from composer_prime.configs.rollout import EnvConfig
from composer_prime.rollout.envs import load_environment
from composer_prime.sft.data import IGNORE, collate, demonstrations, hinted_demonstrations
from composer_prime.sft.main import train

ENV = EnvConfig(id="reverse-text", args={"num_examples": 64})


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return build(TinyModelConfig(output_dir=tmp_path_factory.mktemp("tiny") / "model", corpus_lines=2000))


@pytest.fixture(scope="module")
def tokenizer(base):
    return load_tokenizer(ModelConfig(path=str(base)))


def test_loss_falls_only_on_the_answer_and_eos(tokenizer):
    examples = load_environment(ENV).examples("train")[:3]
    demos = demonstrations(examples, tokenizer)
    batch = collate(demos, tokenizer.pad_token_id)
    for row, (example, demo) in enumerate(zip(examples, demos, strict=True)):
        labels = batch["labels"][row]
        trained = labels[labels != IGNORE].tolist()
        assert tokenizer.decode(trained) == example.answer + tokenizer.eos_token
        prompt = tokenizer.decode(demo.input_ids[: demo.prompt_len])
        assert prompt == tokenizer.apply_chat_template(example.prompt, add_generation_prompt=True, tokenize=False)
        assert batch["attention_mask"][row].sum() == len(demo.input_ids)


def test_hinted_demonstrations_use_the_hint_channel_teacher_context(tokenizer):
    env = load_environment(ENV)
    examples = env.examples("train")[:4]
    for example, demo in zip(examples, hinted_demonstrations(examples, env, tokenizer, seed=0), strict=True):
        prompt = tokenizer.decode(demo.input_ids[: demo.prompt_len])
        plain = tokenizer.apply_chat_template(example.prompt, add_generation_prompt=False, tokenize=False)
        assert prompt.startswith(plain)  # the original context, untouched, then the hint turn
        hint = prompt[len(plain):]
        assert hint.startswith("<|im_start|>user\nHint: Your answer is wrong: expected '" + example.answer + "', got '")
        assert prompt.endswith("<|im_start|>assistant\n")
        got = hint.split("got '")[1].split("'")[0]
        assert got != example.answer and sorted(got.split()) == sorted(example.answer.split())
        assert tokenizer.decode(demo.input_ids[demo.prompt_len :]) == example.answer + tokenizer.eos_token


def test_an_environment_without_answers_is_a_user_error(tokenizer):
    example = dataclasses.replace(load_environment(ENV).examples("train")[0], answer=None)
    with pytest.raises(UserError, match="no reference answer"):
        demonstrations([example], tokenizer)


def test_sft_lowers_the_demonstration_loss_and_saves_a_loadable_model(base, tokenizer, tmp_path):
    config = SFTConfig(
        model=ModelConfig(path=str(base)), env=ENV, output_dir=tmp_path / "run", max_steps=25, batch_size=16,
        optim=SFTOptimConfig(lr=3e-3), log=LogConfig(progress=False),
    )
    saved = train(config)
    assert saved == tmp_path / "run" / "model"

    batch = collate(demonstrations(load_environment(ENV).examples("train")[:32], tokenizer), tokenizer.pad_token_id)
    with torch.no_grad():
        before = load_model(ModelConfig(path=str(base)))(**batch).loss.item()
        after = load_model(ModelConfig(path=str(saved)))(**batch).loss.item()
    assert after < before - 1.0, (before, after)  # starts near ln(vocab) ~ 6.9
    assert load_tokenizer(ModelConfig(path=str(saved))).chat_template == tokenizer.chat_template

    records = [line for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines() if '"sft"' in line]
    assert len(records) == 25


def test_missing_model_is_one_line(capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_:
        run_cli(SFTConfig, train, ["--model.path", str(tmp_path / "nope"), "--output-dir", str(tmp_path / "run")])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and err == f"error: model directory not found: {tmp_path / 'nope'}"


def test_hinted_only_sft_learns_the_hinted_contexts(base, tokenizer, tmp_path):
    config = SFTConfig(
        model=ModelConfig(path=str(base)), env=ENV, output_dir=tmp_path / "run", max_steps=25, batch_size=16,
        hinted=True, plain=False, optim=SFTOptimConfig(lr=3e-3), log=LogConfig(progress=False),
    )
    saved = train(config)
    env = load_environment(ENV)
    batch = collate(hinted_demonstrations(env.examples("train")[:32], env, tokenizer, seed=1), tokenizer.pad_token_id)
    with torch.no_grad():
        before = load_model(ModelConfig(path=str(base)))(**batch).loss.item()
        after = load_model(ModelConfig(path=str(saved)))(**batch).loss.item()
    assert after < before - 1.0, (before, after)


def test_no_demonstrations_is_one_line(capsys, base, tmp_path):
    with pytest.raises(SystemExit) as exit_:
        run_cli(SFTConfig, train, ["--model.path", str(base), "--output-dir", str(tmp_path / "run"), "--no-plain"])
    assert exit_.value.code == 2 and "no demonstrations to train on: set plain or hinted" in capsys.readouterr().err
