"""The `eval` command end to end: its own inference server, the shared eval code, metrics, cleanup."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest
from transformers import AutoModelForCausalLM

from composer_prime.cli import run_cli
from composer_prime.configs.eval import EvalCommandConfig
from composer_prime.configs.shared import LogConfig, ModelConfig
from composer_prime.eval.main import main
from composer_prime.model.load import load_tokenizer
from composer_prime.configs.rollout import EnvConfig
from composer_prime.rollout.envs import Score, load_environment
from composer_prime.utils.metrics import read_metrics


def processes_mentioning(text: str) -> list[int]:
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "composer_prime.inference.main" in cmdline and text in cmdline:
            pids.append(int(pid))
    return pids


def greedy_reference(model_dir: Path, num_examples: int, max_tokens: int) -> list[Score]:
    """Scores of plain transformers greedy decoding of the first eval prompts."""
    env = load_environment(EnvConfig(id="reverse-text"))
    tokenizer = load_tokenizer(ModelConfig(path=str(model_dir)))
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    rewards = []
    for example in env.examples("eval")[:num_examples]:
        ids = tokenizer.apply_chat_template(example.prompt, add_generation_prompt=True, return_tensors="pt",
                                            return_dict=False)
        out = model.generate(ids, max_new_tokens=max_tokens, do_sample=False, eos_token_id=tokenizer.eos_token_id,
                             pad_token_id=tokenizer.pad_token_id)
        text = tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=True)
        rewards.append(asyncio.run(env.score(example, text)))
    return rewards


@pytest.mark.slow
def test_eval_matches_greedy_transformers_and_appends_metrics(tiny_model, tmp_path, capsys):
    out = tmp_path / "out"
    # success_metric None: a sample passes by its reward (an environment without a verdict of its own).
    config = EvalCommandConfig(model=ModelConfig(path=str(tiny_model)), num_examples=4, k=1, temperature=0.0,
                               max_tokens=10, success_metric=None, pass_threshold=0.15, max_concurrent=1,
                               output_dir=out, log=LogConfig(progress=False))
    result = main(config)

    scores = greedy_reference(tiny_model, 4, 10)
    rewards = [s.reward for s in scores]
    assert result.reward == pytest.approx(sum(rewards) / 4, abs=1e-12)
    assert result.pass_at_k == pytest.approx(sum(r >= 0.15 for r in rewards) / 4, abs=1e-12)
    assert result.solved == result.pass_at_k and result.verdict == "reward>=0.15"
    assert result.env_metrics["exact_match"] == pytest.approx(sum(s.metrics["exact_match"] for s in scores) / 4)
    assert (result.num_examples, result.weight_version) == (4, 0)
    assert f"reward>=0.15 {result.solved:.4f}  pass@1 {result.pass_at_k:.4f}  reward {result.reward:.4f}" \
        in capsys.readouterr().out
    (record,) = read_metrics(out, "eval")
    assert record["eval/reward"] == result.reward and record["eval/pass@1"] == result.pass_at_k
    assert record["eval/answer_len/ratio"] == result.lengths["answer_len/ratio"] > 0
    assert not processes_mentioning(str(out)), "the eval command left its inference server running"


@pytest.mark.slow
def test_server_that_fails_to_start_is_one_line_and_is_cleaned_up(tiny_model, tmp_path, capsys):
    broken = tmp_path / "broken"
    shutil.copytree(tiny_model, broken)
    (broken / "model.safetensors").write_bytes(b"not a safetensors file")  # tokenizer fine, weights not
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_:
        run_cli(EvalCommandConfig, main, args=["--model.path", str(broken), "--output-dir", str(out),
                                               "--num-examples", "2", "--no-log.progress"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: inference server exited") and "\n" not in err, err
    assert not processes_mentioning(str(out))
    assert read_metrics(out, "eval") == []
