"""Where a real tokenizer and real weights matter: SmolLM2-135M-Instruct (49,152 tokens, ChatML, EOS <|im_end|>).

The tiny models of the other tests share one 1,024-token tokenizer; these run the same paths on the model
`fetch-model` writes (the session fixture `smollm2_dir`), on sort-numbers prompts, in float32 on the CPU."""

from __future__ import annotations

import asyncio

import pytest
import torch
from sort_numbers.taskset import QUESTION

from composer_prime.configs.shared import ModelConfig
from composer_prime.configs.trainer import DPPOLossConfig, TrainerConfig
from composer_prime.loss.resolve import resolve_loss
from composer_prime.model.chat_template import template_ids
from composer_prime.orchestrator.packing import Sample, pack_step
from composer_prime.trainer.build import build_train_model
from composer_prime.trainer.parallel import World
from composer_prime.trainer.step import train_step
from staggered import sample_staggered

CPU = World(rank=0, world_size=1, device=torch.device("cpu"))
LISTS = ["7, 1, 3", "9, 0, 4, 2", "5, 5, 1"]
MAX_TOKENS = [12, 6, 9]  # rows end at different steps, so later requests join a running batch


def _messages(digits: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": QUESTION.format(digits)}]


@pytest.fixture(scope="module")
def sampled(smollm2_dir):
    """The tokenizer, each list's prompt ids and two completions sampled at T = 1 by the project's backend."""
    backend, prompts, responses = asyncio.run(
        sample_staggered(smollm2_dir, [_messages(digits) for digits in LISTS], MAX_TOKENS))
    return backend.tokenizer, prompts, responses


def test_chat_template_and_eos(sampled):
    tokenizer, prompts, responses = sampled
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert tokenizer.eos_token_id == end == 2
    assert tokenizer("7")["input_ids"] == [tokenizer.convert_tokens_to_ids("7")]  # no BOS put before a text
    text = tokenizer.decode(prompts[0])
    # the template's own system prompt when the conversation has none
    assert text == ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
                    "<|im_start|>user\nSort these numbers from smallest to largest: 7, 1, 3<|im_end|>\n"
                    "<|im_start|>assistant\n")
    assert tokenizer.convert_ids_to_tokens(tokenizer("7, 13")["input_ids"]) == ["7", ",", "Ġ", "1", "3"]  # digits alone
    # A finished turn ends with <|im_end|>, which the trainer must score (it is what stops a reply), and only there;
    # a reply cut at max_tokens has none.
    for response, max_tokens in zip(responses, MAX_TOKENS):
        for c in response.completions:
            assert (c.finish_reason == "stop") == (c.token_ids[-1] == end) and end not in c.token_ids[:-1]
            assert c.finish_reason == "stop" or len(c.token_ids) == max_tokens
            assert len(c.logprobs) == len(c.token_ids) and all(lp <= 0 for lp in c.logprobs)
    # the token that ends an assistant turn in the template is the one sampling stops on
    turn = template_ids(tokenizer, _messages("7, 1, 3") + [{"role": "assistant", "content": "1, 3, 7"}],
                        add_generation_prompt=False)
    assert turn[len(prompts[0]):] == tokenizer("1, 3, 7")["input_ids"] + [end] + tokenizer("\n")["input_ids"]


def test_packed_first_step_is_exactly_on_policy(sampled, smollm2_dir):
    tokenizer, prompts, responses = sampled
    samples = [Sample(prompt_ids=p, completion_ids=c.token_ids, completion_logprobs=c.logprobs,
                      advantage=1.0 if j % 2 else -1.0, policy_version=0)
               for p, r in zip(prompts, responses) for j, c in enumerate(r.completions)]
    # two rows of 160: several samples back to back in each, positions restarting at 0
    [batch] = pack_step(samples, step=1, seq_len=160, micro_batch_rows=2, world_size=1,
                        pad_token_id=tokenizer.eos_token_id, temperature=1.0)
    assert all((m.position_ids.numpy() == 0).sum() >= 3 for m in batch.micro_batches)
    model = build_train_model(TrainerConfig(model=ModelConfig(path=str(smollm2_dir), dtype="float32", device="cpu")), CPU)
    result = train_step(model, torch.optim.SGD(model.parameters(), lr=0.0), batch,
                        resolve_loss(DPPOLossConfig()), 0.0, 1.0, CPU)
    # sampler and trainer run the same float32 weights over the same tokens in other batch shapes: |log r| of a
    # few 1e-7 per token; a wrong position, mask or a sample seeing its row neighbour gives 1e-3 and more, and
    # torch's float32 log_softmax in the sampler (instead of the shared logsumexp normaliser) gave 1 - 1.5e-5
    assert abs(result.loss_metrics["importance_ratio"] - 1) < 1e-5, result.loss_metrics
    assert abs(result.loss_metrics["mismatch_kl_k3"]) < 1e-6 and result.loss_metrics["masked"] == 0
