"""Channel 2 in the trainer step: value against float64 references, alignment, side channels, liveness."""

import copy

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM

from composer_prime.batch import Array, HintSite, TrainBatch
from composer_prime.configs.trainer import DPPOLossConfig, HintLossConfig
from composer_prime.loss.resolve import resolve_loss
from composer_prime.loss.topk import extract_topk
from composer_prime.trainer.hint import HintChannel
from composer_prime.trainer.parallel import World
from composer_prime.trainer.step import train_step

CPU = World(rank=0, world_size=1, device=torch.device("cpu"))


def load(path, dtype=torch.float64):
    # float64 by default: these hint KLs are only 1e-3..1e-2, so float32 rounding of batched vs per-site
    # log-probs already reached rel 3e-5 of the rel 1e-4 tolerances below on one CPU.
    return AutoModelForCausalLM.from_pretrained(path, dtype=dtype, attn_implementation="sdpa")


def make_sites(seed: int, count: int) -> list[HintSite]:
    """Student prompt, a longer teacher prompt (the same plus hint tokens), one shared completion."""
    rng = np.random.default_rng(seed)
    sites = []
    for _ in range(count):
        prompt = rng.integers(1, 300, int(rng.integers(3, 8))).tolist()
        hint = rng.integers(1, 300, int(rng.integers(2, 6))).tolist()
        completion = rng.integers(1, 300, int(rng.integers(3, 9))).tolist()
        sites.append(HintSite(kind="wrong_answer", student_prompt_ids=prompt, teacher_prompt_ids=prompt + hint,
                              completion_ids=completion, completion_logprobs=[0.0] * len(completion)))
    return sites


def batch_with(helpers, sites: list[HintSite], step: int = 1) -> TrainBatch:
    samples = helpers.make_samples(seed=5, count=2)
    for s in samples:
        s["advantages"][:] = 0.0  # the policy-gradient channel pushes nowhere: only the hint channel moves weights
    return TrainBatch(
        step=step, rank=0, world_size=1, temperature=1.0, num_loss_tokens=int(sum(s["loss_mask"].sum() for s in samples)),
        micro_batches=helpers.pack(samples, 64, 2), min_policy_version=0, max_policy_version=0,
        hint_sites=sites, num_hint_tokens=sum(len(s.completion_ids) for s in sites),
    )


def reference_divergence(model, sites, beta: float, temperature: float) -> float:
    """Mean over completion tokens, each site scored by its own float64 forwards (no padding, no batching)."""
    total, count = 0.0, 0
    with torch.no_grad():
        for s in sites:
            def logprobs(prompt):
                ids = torch.tensor([prompt + s.completion_ids])
                logits = model(input_ids=ids).logits[0, len(prompt) - 1 : -1].double() / temperature
                return torch.log_softmax(logits, -1)
            ls, lt = logprobs(s.student_prompt_ids), logprobs(s.teacher_prompt_ids)
            ps, pt = ls.exp(), lt.exp()
            if beta == 1.0:
                per_token = (ps * (ls - lt)).sum(-1)
            elif beta == 0.0:
                per_token = (pt * (lt - ls)).sum(-1)
            else:
                lm = torch.log((1 - beta) * ps + beta * pt)
                per_token = beta * (pt * (lt - lm)).sum(-1) + (1 - beta) * (ps * (ls - lm)).sum(-1)
            total += per_token.sum().item()
            count += len(s.completion_ids)
    return total / count


def run_step(model, batch, config: HintLossConfig):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    return train_step(model, optimizer, batch, resolve_loss(DPPOLossConfig()), 0.0, 1e9, CPU,
                      [HintChannel(config, total_steps=10)])


@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0])
def test_hint_loss_equals_per_site_float64_reference(tiny_model_dir, helpers, beta):
    sites = make_sites(seed=1, count=5)
    model = load(tiny_model_dir)
    result = run_step(model, batch_with(helpers, sites), HintLossConfig(weight=1.0, beta=beta, temperature=0.8,
                                                                        sites_per_micro_batch=2))
    expected = reference_divergence(load(tiny_model_dir), sites, beta, 0.8)
    assert result.channel_losses["hint"] == pytest.approx(expected, rel=1e-4)
    assert result.loss == pytest.approx(result.channel_losses["pg"] + expected, rel=1e-4)
    assert result.loss_metrics["hint/sites"] == 5
    if beta == 1.0:  # the logged KL to the teacher is the reverse KL whatever the variant
        assert result.loss_metrics["hint/kl"] == pytest.approx(expected, rel=1e-4)


def test_topk_side_channel_with_k_equal_vocab_matches_full(tiny_model_dir, helpers):
    sites = make_sites(seed=2, count=3)
    full = run_step(load(tiny_model_dir), batch_with(helpers, sites), HintLossConfig(weight=1.0, beta=0.5))
    topk = run_step(load(tiny_model_dir), batch_with(helpers, sites),
                    HintLossConfig(weight=1.0, beta=0.5, side_channel="topk", top_k=300))
    assert topk.channel_losses["hint"] == pytest.approx(full.channel_losses["hint"], rel=1e-4)
    assert topk.grad_norm == pytest.approx(full.grad_norm, rel=1e-3)


def test_inference_side_topk_equals_trainer_side_topk(tiny_model_dir, helpers):
    """Sites carrying the teacher's top-k (laid out as the inference server sends it) give the trainer-side loss."""
    sites = make_sites(seed=3, count=3)
    model = load(tiny_model_dir)
    scored = []
    with torch.no_grad():
        for s in sites:
            ids = torch.tensor([s.teacher_prompt_ids + s.completion_ids])
            logits = model(input_ids=ids).logits[0, len(s.teacher_prompt_ids) - 1 : -1]
            top = extract_topk(logits, 16)
            scored.append(HintSite(**{**{f: getattr(s, f) for f in s.__struct_fields__},
                                      "teacher_topk_ids": Array.from_numpy(top.ids.numpy()),
                                      "teacher_topk_logprobs": Array.from_numpy(top.logprobs.numpy())}))
    config = HintLossConfig(weight=1.0, beta=1.0, side_channel="topk", top_k=16)
    trainer_side = run_step(load(tiny_model_dir), batch_with(helpers, sites), config)
    inference_side = run_step(load(tiny_model_dir), batch_with(helpers, scored), config)
    assert inference_side.channel_losses["hint"] == pytest.approx(trainer_side.channel_losses["hint"], rel=1e-5)


@pytest.mark.parametrize("variant", ["jsd", "taid", "entropy_gated"])
def test_training_on_the_hint_channel_lowers_kl_to_the_teacher(tiny_model_dir, helpers, variant):
    sites = make_sites(seed=4, count=4)
    model = load(tiny_model_dir, torch.float32)
    before = reference_divergence(copy.deepcopy(model).double(), sites, 1.0, 1.0)
    channels = [HintChannel(HintLossConfig(weight=1.0, variant=variant), total_steps=30)]
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for step in range(1, 31):
        result = train_step(model, optimizer, batch_with(helpers, sites, step), resolve_loss(DPPOLossConfig()), 3e-3,
                            1.0, CPU, channels)
        losses.append(result.channel_losses["hint"])
    assert all(loss > 0 for loss in losses)  # live on every step with sites
    after = reference_divergence(copy.deepcopy(model).double(), sites, 1.0, 1.0)
    assert after < 0.7 * before


def test_variants_that_need_full_logits_refuse_top_k(tiny_model_dir, helpers):
    from composer_prime.errors import UserError

    with pytest.raises(UserError, match="needs full teacher logits"):
        run_step(load(tiny_model_dir), batch_with(helpers, make_sites(0, 1)),
                 HintLossConfig(weight=1.0, variant="taid", side_channel="topk"))
