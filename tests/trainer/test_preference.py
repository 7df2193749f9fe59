"""Channel 3 in the trainer: pair tokenisation, the cached reference, DPO / SimPO values, held-out accuracy."""

import json
import math

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from composer_prime.batch import Array, MicroBatch, TrainBatch
from composer_prime.chat import Action, ChatMessage, ToolCall
from composer_prime.configs.trainer import DPPOLossConfig, PreferenceLossConfig
from composer_prime.errors import UserError
from composer_prime.loss.resolve import resolve_loss
from composer_prime.model.tiny import TinyModelConfig, build
from composer_prime.pairs import PreferencePair, Provenance, write_pairs
from composer_prime.trainer.parallel import World
from composer_prime.trainer.preference import PreferenceChannel, tokenize_pair
from composer_prime.trainer.step import train_step

CPU = World(rank=0, world_size=1, device=torch.device("cpu"))


@pytest.fixture(scope="module")
def chat_model(tmp_path_factory):
    return build(TinyModelConfig(output_dir=tmp_path_factory.mktemp("chat") / "model", corpus_lines=500,
                                 hidden_size=32, num_layers=2, intermediate_size=64))


def pairs(count: int) -> list[PreferencePair]:
    out = []
    for i in range(count):
        word = "".join(chr(97 + (i * 7 + j * 3) % 26) for j in range(3 + i % 4))
        out.append(PreferencePair(
            id=f"pair-{i}",
            state=[ChatMessage(role="system", content="Reverse the letters."),
                   ChatMessage(role="user", content=" ".join(word))],
            chosen=Action(content=" ".join(reversed(word))),
            rejected=Action(content=" ".join(word)),
            provenance=Provenance(source="test", format="composer-prime", trace_id=str(i), step=0, k=2, n=3),
        ))
    return out


def test_tokenized_answer_is_what_the_template_appends_up_to_eos(chat_model):
    tokenizer = AutoTokenizer.from_pretrained(chat_model)
    pair = pairs(1)[0]
    pair = pair.model_copy(update={"rejected": Action(tool_calls=[ToolCall(name="reverse", arguments='{"s": "a"}')])})
    t = tokenize_pair(pair, tokenizer)
    assert t.prompt_ids == tokenizer.apply_chat_template(
        [m.openai() for m in pair.state], add_generation_prompt=True, tokenize=True, return_dict=False)
    assert tokenizer.decode(t.chosen_ids) == pair.chosen.content + tokenizer.eos_token
    assert tokenizer.decode(t.rejected_ids) == '<tool_call>{"name": "reverse", "arguments": {"s": "a"}}</tool_call>' \
        + tokenizer.eos_token


def _reference_sums(model, tokenized):
    """Summed log-probs of chosen and rejected answers, one unpadded float64 forward each."""
    out = []
    with torch.no_grad():
        for answer in (tokenized.chosen_ids, tokenized.rejected_ids):
            ids = torch.tensor([tokenized.prompt_ids + answer])
            logp = torch.log_softmax(model(input_ids=ids).logits[0].double(), -1)
            start = len(tokenized.prompt_ids)
            out.append(sum(logp[t - 1, ids[0, t]].item() for t in range(start, ids.shape[1])))
    return out


def test_dpo_step_against_float64_reference_and_the_cached_reference(chat_model, tmp_path):
    path = tmp_path / "pairs.jsonl"
    write_pairs(path, pairs(12))
    config = PreferenceLossConfig(weight=1.0, pairs=path, pairs_per_step=4, eval_fraction=0.0)
    tokenizer = AutoTokenizer.from_pretrained(chat_model)
    model = AutoModelForCausalLM.from_pretrained(chat_model, dtype=torch.float32)
    reference = AutoModelForCausalLM.from_pretrained(chat_model, dtype=torch.float64)
    channel = PreferenceChannel(config, tokenizer, tmp_path / "run", seed=0)
    channel.prepare_reference(model, CPU.device, write=True)
    for t in channel.train:
        # float32 padded batch vs float64 alone: same-sign sums of ~50 moved ~1e-7 relative
        assert channel.reference[t.id] == pytest.approx(_reference_sums(reference, t), rel=1e-5)
    cached = json.loads((tmp_path / "run" / "preference" / "reference.json").read_text())
    assert set(cached["logps"]) == {p.id for p in pairs(12)}

    # A first step (policy == reference) has margin 0: loss log 2 on every pair.
    channels = [channel]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    batch = _empty_batch()
    first = train_step(model, optimizer, batch, resolve_loss(DPPOLossConfig()), 1e-2, 1.0, CPU, channels)
    # the margin subtracts float32 sums of ~50 from two batchings (~1e-5); the loss scales it by beta / 2
    assert first.channel_losses["preference"] == pytest.approx(0.6931471805599453, rel=1e-4)
    for step in range(2, 40):
        result = train_step(model, optimizer, _empty_batch(step), resolve_loss(DPPOLossConfig()), 1e-2, 1.0, CPU,
                            channels)
    assert result.channel_losses["preference"] < 0.6
    assert result.loss_metrics["preference/accuracy"] > 0.5

    # A resumed run reads the cache instead of recomputing with (now trained) weights.
    resumed = PreferenceChannel(config, tokenizer, tmp_path / "run", seed=0)
    resumed.prepare_reference(model, CPU.device, write=False)
    assert resumed.reference == channel.reference
    write_pairs(path, pairs(13))
    with pytest.raises(UserError, match="another pairs file"):
        PreferenceChannel(config, tokenizer, tmp_path / "run", seed=0).prepare_reference(model, CPU.device, False)


def test_simpo_and_held_out_accuracy(chat_model, tmp_path):
    path = tmp_path / "pairs.jsonl"
    write_pairs(path, pairs(40))
    config = PreferenceLossConfig(weight=1.0, variant="simpo", pairs=path, pairs_per_step=8, eval_fraction=0.3)
    tokenizer = AutoTokenizer.from_pretrained(chat_model)
    model = AutoModelForCausalLM.from_pretrained(chat_model, dtype=torch.float32)
    channel = PreferenceChannel(config, tokenizer, tmp_path / "run", seed=0)
    assert channel.eval and channel.train and not {p.id for p in channel.eval} & {p.id for p in channel.train}
    evaluation = channel.evaluate(model, CPU.device)
    assert set(evaluation) == {"preference/eval_accuracy", "preference/eval_margin"}
    pairs_step = channel.step_pairs(1, 0, 1)
    assert [p.id for p in pairs_step] == [p.id for p in channel.step_pairs(1, 0, 1)]  # fixed by (seed, step)
    loss, diag = channel.loss(model, pairs_step, CPU.device)
    # SimPO by hand from length-averaged log-probs.
    expected = 0.0
    with torch.no_grad():
        for t in pairs_step:
            avg = []
            for answer in (t.chosen_ids, t.rejected_ids):
                ids = torch.tensor([t.prompt_ids + answer])
                logp = torch.log_softmax(model(input_ids=ids).logits[0].double(), -1)
                start = len(t.prompt_ids)
                avg.append(sum(logp[i - 1, ids[0, i]].item() for i in range(start, ids.shape[1])) / len(answer))
            z = 2.0 * (avg[0] - avg[1]) - 0.6
            expected += -torch.nn.functional.logsigmoid(torch.tensor(z, dtype=torch.float64)).item()
    assert loss.item() == pytest.approx(expected, rel=1e-4)  # padded float32 batch vs one row at a time


def test_rpo_channel_adds_the_chosen_nll_to_the_first_step_log_2(chat_model, tmp_path):
    path = tmp_path / "pairs.jsonl"
    write_pairs(path, pairs(12))
    config = PreferenceLossConfig(weight=1.0, pairs=path, pairs_per_step=4, eval_fraction=0.0, nll_weight=0.5)
    tokenizer = AutoTokenizer.from_pretrained(chat_model)
    model = AutoModelForCausalLM.from_pretrained(chat_model, dtype=torch.float32)
    reference = AutoModelForCausalLM.from_pretrained(chat_model, dtype=torch.float64)
    channel = PreferenceChannel(config, tokenizer, tmp_path / "run", seed=0)
    channel.prepare_reference(model, CPU.device, write=False)
    step_pairs = channel.step_pairs(1, 0, 1)
    loss, _ = channel.loss(model, step_pairs, CPU.device)
    # Policy == reference: each pair's DPO term is log 2; RPO adds 0.5 * the chosen answer's mean NLL.
    expected = sum(math.log(2) - 0.5 * _reference_sums(reference, t)[0] / len(t.chosen_ids) for t in step_pairs)
    assert loss.item() == pytest.approx(expected, rel=1e-5)  # float32 vs float64: ~1e-7 relative on a sum of ~15


def test_bad_pairs_file_is_a_one_line_error(chat_model, tmp_path):
    tokenizer = AutoTokenizer.from_pretrained(chat_model)
    (tmp_path / "bad.jsonl").write_text('{"id": 1}\n')
    with pytest.raises(UserError, match=r"bad.jsonl:1: not a preference pair"):
        PreferenceChannel(PreferenceLossConfig(pairs=tmp_path / "bad.jsonl"), tokenizer, tmp_path, 0)


def _empty_batch(step: int = 1):
    """A step with nothing for the policy gradient: only the preference channel trains."""
    zeros = np.zeros((1, 4), dtype=np.float32)
    micro = MicroBatch(
        input_ids=Array.from_numpy(np.ones((1, 4), dtype=np.int32)),
        position_ids=Array.from_numpy(np.arange(4, dtype=np.int32)[None]),
        loss_mask=Array.from_numpy(np.zeros((1, 4), dtype=np.bool_)),
        advantages=Array.from_numpy(zeros), inference_logprobs=Array.from_numpy(zeros),
    )
    return TrainBatch(step=step, rank=0, world_size=1, temperature=1.0, num_loss_tokens=0, micro_batches=[micro],
                      min_policy_version=0, max_policy_version=0)
