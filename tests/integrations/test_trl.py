"""composer_prime/integrations/trl.py: TRL's GRPOTrainer with the hint and preference channels.

The channel losses are checked in float64 against composer-prime's own trainer channels
(trainer/hint.py, trainer/preference.py) on one fixed batch, then TRL trains a few steps on the
quickstart's warm-started tiny model with all three channels live.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import torch

pytest.importorskip("trl")

from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402
from trl import GRPOConfig  # noqa: E402

from composer_prime.batch import HintSite  # noqa: E402
from composer_prime.errors import UserError  # noqa: E402
from composer_prime.integrations.trl import (  # noqa: E402
    ComposerChannelsConfig,
    ComposerGRPOTrainer,
    HintChannelConfig,
    PreferenceChannelConfig,
    ReplayPairs,
    hint_loss_sum,
    left_pad,
    teacher_prompt_ids,
)
from composer_prime.chat import Action, ChatMessage  # noqa: E402
from composer_prime.configs.rollout import EnvConfig  # noqa: E402
from composer_prime.rollout.envs import load_environment  # noqa: E402
from composer_prime.pairs import PreferencePair, Provenance, write_pairs  # noqa: E402
from composer_prime.configs.trainer import HintLossConfig, PreferenceLossConfig  # noqa: E402
from composer_prime.trainer.hint import HintChannel, HintTensors  # noqa: E402
from composer_prime.trainer.preference import PreferenceChannel  # noqa: E402

WARMSTART = Path(__file__).parents[2] / "configs" / "composed" / "warmstart"
SYSTEM = "Reverse the letters."
CPU = torch.device("cpu")


def _prompt(letters: str) -> list[dict]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": letters}]


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(WARMSTART)


@pytest.fixture
def pairs_file(tmp_path) -> Path:
    """A pairs.jsonl as `uv run replay` writes it (pairs.write_pairs): chosen = the reversal, rejected = a copy."""
    words = ["a b c", "q w e r", "z x", "m n o p q", "h e l l o"]
    pairs = [
        PreferencePair(
            id=f"pair-{i}",
            state=[ChatMessage(role="system", content=SYSTEM), ChatMessage(role="user", content=w)],
            chosen=Action(content=" ".join(reversed(w.split()))),
            rejected=Action(content=w),
            provenance=Provenance(source="test", format="composer-prime", trace_id=f"t{i}", step=0, k=2, n=2),
        )
        for i, w in enumerate(words)
    ]
    path = tmp_path / "pairs.jsonl"
    write_pairs(path, pairs)
    return path


def _fixed_hint_batch(tokenizer):
    prompts = [_prompt("a b c"), _prompt("q w e r"), _prompt("z x")]
    texts = ["c a b", "r e w", "x z"]
    completions = [[{"role": "assistant", "content": t}] for t in texts]
    rewards = [0.25, 0.5, 1.0]  # the last one is right: no site
    feedback = ["expected 'c b a', got 'c a b'", "expected 'r e w q', got 'r e w'", None]
    prompt_ids = [tokenizer.apply_chat_template(p, add_generation_prompt=True, tokenize=True, return_dict=False)
                  for p in prompts]
    completion_ids = [tokenizer.encode(t, add_special_tokens=False) + [tokenizer.eos_token_id] for t in texts]
    return prompts, completions, rewards, feedback, prompt_ids, completion_ids


def test_teacher_context_carries_the_detected_error_and_its_hint(tokenizer):
    prompts, completions, rewards, feedback, prompt_ids, _ = _fixed_hint_batch(tokenizer)
    teachers = teacher_prompt_ids(tokenizer, prompts, completions, rewards, [False] * 3, HintChannelConfig(weight=1.0),
                                  feedback)
    assert teachers[2] is None
    text = tokenizer.decode(teachers[0])
    assert "Hint: Your answer is wrong: expected 'c b a', got 'c a b'." in text
    # The student's context comes first, then the hint turn, then the generation prompt.
    assert teachers[0][: len(prompt_ids[0]) - 3] == prompt_ids[0][:-3]
    assert text.endswith("<|im_start|>assistant\n")
    # A cut-off answer is a site even when its reward clears the threshold.
    cut = teacher_prompt_ids(tokenizer, prompts[2:], completions[2:], [1.0], [True], HintChannelConfig(weight=1.0))
    assert "cut off at the token limit" in tokenizer.decode(cut[0])


@pytest.mark.parametrize(("beta", "top_k"), [(1.0, None), (0.5, None), (0.0, 16)])
def test_hint_loss_equals_composer_trainer_channel_in_float64(tokenizer, beta, top_k):
    model = AutoModelForCausalLM.from_pretrained(WARMSTART, torch_dtype=torch.float64)
    prompts, completions, rewards, feedback, prompt_ids, completion_ids = _fixed_hint_batch(tokenizer)
    config = HintChannelConfig(weight=1.0, beta=beta, top_k=top_k)
    teachers = teacher_prompt_ids(tokenizer, prompts, completions, rewards, [False] * 3, config, feedback)
    rows = [i for i, t in enumerate(teachers) if t is not None]

    sites = [HintSite(kind="wrong_answer", student_prompt_ids=prompt_ids[i], teacher_prompt_ids=teachers[i],
                      completion_ids=completion_ids[i], completion_logprobs=[0.0] * len(completion_ids[i]))
             for i in rows]
    channel = HintChannel(HintLossConfig(weight=1.0, beta=beta, side_channel="full" if top_k is None else "topk",
                                         top_k=top_k or 64), total_steps=1)
    ours, _ = channel.loss(model, HintTensors.from_sites(sites, CPU))

    pad = tokenizer.pad_token_id
    p_ids, p_mask = left_pad([prompt_ids[i] for i in rows], pad)
    t_ids, t_mask = left_pad([teachers[i] for i in rows], pad)
    width = max(len(completion_ids[i]) for i in rows)
    c_ids = torch.full((len(rows), width), pad, dtype=torch.long)
    c_mask = torch.zeros((len(rows), width), dtype=torch.long)
    for r, i in enumerate(rows):
        c_ids[r, : len(completion_ids[i])] = torch.tensor(completion_ids[i])
        c_mask[r, : len(completion_ids[i])] = 1
    theirs = hint_loss_sum(model, p_ids, p_mask, t_ids, t_mask, c_ids, c_mask, config)

    tokens = int(c_mask.sum())
    assert ours.dtype == theirs.dtype == torch.float64
    assert ours.item() / tokens > 1e-4  # the hint moves the teacher: a live channel
    assert abs(ours.item() / tokens - theirs.item() / tokens) < 1e-6
    theirs.backward()
    assert all(p.grad is None or torch.isfinite(p.grad).all() for p in model.parameters())


@pytest.mark.parametrize(("variant", "nll_weight"), [("dpo", 0.0), ("dpo", 1.0), ("simpo", 0.0)])
def test_preference_loss_equals_composer_trainer_channel_in_float64(tokenizer, pairs_file, tmp_path, variant,
                                                                    nll_weight):
    reference = AutoModelForCausalLM.from_pretrained(WARMSTART, torch_dtype=torch.float64)
    policy = AutoModelForCausalLM.from_pretrained(WARMSTART, torch_dtype=torch.float64)
    with torch.no_grad():  # a policy that has moved away from its reference, as after some training
        generator = torch.Generator().manual_seed(0)
        for p in policy.parameters():
            p.add_(torch.randn(p.shape, generator=generator, dtype=p.dtype) * 0.02)

    ours_channel = PreferenceChannel(
        PreferenceLossConfig(weight=1.0, variant=variant, pairs=pairs_file, eval_fraction=0.0, nll_weight=nll_weight),
        tokenizer, tmp_path / "run", seed=0)
    ours_channel.prepare_reference(reference, CPU, write=False)
    replay = ReplayPairs(PreferenceChannelConfig(weight=1.0, variant=variant, pairs=pairs_file, nll_weight=nll_weight),
                         tokenizer, reference, CPU)
    assert [p.id for p in replay.pairs] == [p.id for p in ours_channel.train]

    ours, _ = ours_channel.loss(policy, ours_channel.train, CPU)
    theirs = replay.loss(policy, replay.pairs)
    n = len(replay.pairs)
    assert theirs.loss.dtype == torch.float64
    assert abs(ours.item() / n - theirs.loss.item()) < 1e-6
    if variant == "dpo" and nll_weight == 0.0:
        assert abs(theirs.loss.item() - torch.log(torch.tensor(2.0)).item()) > 1e-3  # not the untrained log 2


def test_preference_channel_without_pairs_is_a_one_line_error(tokenizer):
    model = AutoModelForCausalLM.from_pretrained(WARMSTART)
    with pytest.raises(UserError, match="needs preference.pairs"):
        ReplayPairs(PreferenceChannelConfig(weight=1.0), tokenizer, model, CPU)


def test_grpo_trainer_runs_with_all_three_channels_live(tokenizer, pairs_file, tmp_path):
    from datasets import Dataset

    env = load_environment(EnvConfig(id="reverse-text", args={"num_examples": 16}))
    examples = env.examples("train")

    async def reverse_text_reward(prompts, completions, example_index, **kwargs):
        # The environment's own grading, exactly as composer-prime's orchestrator scores a completion.
        scores = await asyncio.gather(*(env.score(examples[i], c[0]["content"])
                                        for i, c in zip(example_index, completions)))
        return [s.reward for s in scores]

    def feedback(prompts, completions):
        lookup = {e.prompt[-1]["content"]: e for e in examples}
        return [asyncio.run(env.score(lookup[p[-1]["content"]], c[0]["content"])).feedback
                for p, c in zip(prompts, completions)]

    dataset = Dataset.from_list([{"prompt": e.prompt, "example_index": i} for i, e in enumerate(examples)])
    model = AutoModelForCausalLM.from_pretrained(WARMSTART)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    args = GRPOConfig(output_dir=str(tmp_path / "grpo"), max_steps=3, per_device_train_batch_size=4, num_generations=4,
                      gradient_accumulation_steps=2, max_completion_length=16, learning_rate=1e-4, use_cpu=True,
                      report_to=[], logging_steps=1, save_strategy="no", seed=0, temperature=1.0)
    channels = ComposerChannelsConfig(hint=HintChannelConfig(weight=0.5),
                                      preference=PreferenceChannelConfig(weight=0.5, pairs=pairs_file, pairs_per_step=2))
    trainer = ComposerGRPOTrainer(model=model, reward_funcs=reverse_text_reward, args=args, train_dataset=dataset,
                                  processing_class=tokenizer, channels=channels, feedback_func=feedback)
    trainer.train()

    logs = [entry for entry in trainer.state.log_history if "loss/hint" in entry]
    assert len(logs) == 3
    assert all(entry["loss/hint"] > 0 and entry["loss/preference"] > 0 for entry in logs)
    assert all(entry["hint/sites"] >= 1 for entry in logs)
    assert any(not torch.equal(before[n], p.detach()) for n, p in model.named_parameters())
