"""Token log-probs: the fused selected log-softmax, the shift, and packed rows == samples alone."""

import math

import pytest
import torch
from transformers import AutoModelForCausalLM

from composer_prime.inference.sampling import sample
from composer_prime.trainer.logprobs import forward_logprobs, selected_log_softmax, token_logprobs


def test_selected_log_softmax_value_and_gradient_float64():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(6, 11, generator=g, dtype=torch.float64, requires_grad=True)
    targets = torch.randint(0, 11, (6,), generator=g)
    T = 0.7
    out = selected_log_softmax(logits, targets, T)
    for i in range(6):
        row = [x / T for x in logits[i].tolist()]
        lse = math.log(sum(math.exp(x) for x in row))
        assert out[i].item() == pytest.approx(row[targets[i]] - lse, rel=1e-13)
    # d out_i / d x_ij = ([j == y_i] - softmax(x_i / T)_j) / T, by hand:
    weights = torch.randn(6, generator=g, dtype=torch.float64)
    (out * weights).sum().backward()
    for i in range(6):
        row = [x / T for x in logits[i].tolist()]
        z = sum(math.exp(x) for x in row)
        for j in range(11):
            expected = weights[i].item() * ((1.0 if j == targets[i] else 0.0) - math.exp(row[j]) / z) / T
            assert logits.grad[i, j].item() == pytest.approx(expected, rel=1e-10, abs=1e-14)
    leaf = logits.detach().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda x: selected_log_softmax(x, targets, 1.3), (leaf,))


def test_bf16_logits_give_float32_logprobs_without_bf16_rounding():
    g = torch.Generator().manual_seed(1)
    logits = (torch.randn(4, 5000, generator=g) * 3).bfloat16()
    targets = torch.randint(0, 5000, (4,), generator=g)
    out = selected_log_softmax(logits, targets)
    reference = torch.log_softmax(logits.double(), -1).gather(1, targets[:, None]).squeeze(1)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out.double(), reference, rtol=0, atol=1e-5)  # bf16 rounding of the lse would be ~0.06


def test_token_logprobs_score_each_token_with_the_previous_position():
    g = torch.Generator().manual_seed(2)
    logits = torch.randn(2, 5, 7, generator=g, dtype=torch.float64)
    ids = torch.randint(0, 7, (2, 5), generator=g)
    out = token_logprobs(logits, ids, temperature=2.0)
    for r in range(2):
        assert out[r, 0].item() == 0.0
        for t in range(1, 5):
            row = [x / 2.0 for x in logits[r, t - 1].tolist()]
            expected = row[ids[r, t]] - math.log(sum(math.exp(x) for x in row))
            assert out[r, t].item() == pytest.approx(expected, rel=1e-13)


def test_packed_rows_score_like_samples_alone(tiny_model_dir):
    """No attention mask: position_ids resets must keep packed samples from seeing each other."""
    # float64: packed and alone are different batch shapes, which reorder float32 sums (~5e-7 here); the
    # atol is kept for HF's RMSNorm, which still rounds to float32. A leak across samples moves >1e-3.
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float64, attn_implementation="sdpa")
    g = torch.Generator().manual_seed(3)
    samples = [torch.randint(1, 300, (n,), generator=g) for n in (9, 5, 13, 7)]
    rows = [samples[:2], samples[2:]]  # two rows of two samples, plus padding
    seq_len = 24
    ids = torch.zeros(2, seq_len, dtype=torch.long)
    pos = torch.zeros(2, seq_len, dtype=torch.long)
    for r, row in enumerate(rows):
        start = 0
        for s in row:
            ids[r, start : start + len(s)] = s
            pos[r, start : start + len(s)] = torch.arange(len(s))
            start += len(s)
        pos[r, start:] = torch.arange(seq_len - start)
    with torch.no_grad():
        packed = forward_logprobs(model, ids, pos, temperature=0.8)
        for r, row in enumerate(rows):
            start = 0
            for s in row:
                alone = forward_logprobs(model, s[None], torch.arange(len(s))[None], temperature=0.8)[0]
                # token 0 of a sample has no context of its own: never a loss token
                torch.testing.assert_close(packed[r, start + 1 : start + len(s)], alone[1:], rtol=0, atol=1e-5)
                start += len(s)
        crossed = forward_logprobs(model, ids, torch.arange(seq_len).expand(2, -1), temperature=0.8)
    assert (crossed[0, 10:14] - packed[0, 10:14]).abs().max() > 1e-3, "without resets the second sample sees the first"


@pytest.mark.gpu
def test_selected_log_softmax_on_cuda_bf16_matches_float64():
    g = torch.Generator().manual_seed(4)
    logits64 = (torch.randn(64, 32000, generator=g, dtype=torch.float64) * 4)
    logits = logits64.bfloat16().cuda().requires_grad_(True)
    targets = torch.randint(0, 32000, (64,), generator=g).cuda()
    out = selected_log_softmax(logits, targets, 0.8)
    out.sum().backward()
    exact = logits.detach().double().requires_grad_(True)
    reference = torch.log_softmax(exact / 0.8, -1).gather(1, targets[:, None]).squeeze(1)
    reference.sum().backward()
    torch.testing.assert_close(out.double(), reference, rtol=0, atol=1e-4)
    torch.testing.assert_close(logits.grad.double(), exact.grad, rtol=2e-2, atol=1e-3)  # grad stored in bf16


def test_top_p_renormalises_over_the_nucleus_as_the_sampler_reports_it():
    """With top_p < 1 the sampler reports log-probs renormalised over the nucleus it drew from (vLLM's processed
    log-probs and ours alike); the trainer scores the same distribution, so an on-policy ratio is 1, where the
    plain log-softmax gave ratio = nucleus mass < 1 on every token. Value and gradient against float64 by hand."""
    g = torch.Generator().manual_seed(3)
    logits = (torch.randn(8, 13, generator=g, dtype=torch.float64) * 2).requires_grad_(True)
    temperature, top_p = 0.8, 0.7
    tokens, sampler_logprobs = sample(logits.detach().float(), torch.full((8,), temperature),
                                      torch.zeros(8, dtype=torch.long), torch.full((8,), top_p),
                                      torch.rand(8, generator=g))
    out = selected_log_softmax(logits, tokens, temperature, top_p)
    torch.testing.assert_close(out.detach().float(), sampler_logprobs, rtol=0, atol=1e-6)  # on policy: ratio 1
    weights = torch.randn(8, generator=g, dtype=torch.float64)
    (out * weights).sum().backward()
    for i in range(8):
        row = [x / temperature for x in logits[i].tolist()]
        order = sorted(range(13), key=lambda j: -row[j])
        z = sum(math.exp(x) for x in row)
        kept, mass = set(), 0.0
        for j in order:  # the smallest prefix, in decreasing probability, whose mass reaches top_p
            if mass >= top_p:
                break
            kept.add(j)
            mass += math.exp(row[j]) / z
        zk = sum(math.exp(row[j]) for j in kept)
        assert out[i].item() == pytest.approx(row[tokens[i]] - math.log(zk), rel=1e-12)
        for j in range(13):
            p = math.exp(row[j]) / zk if j in kept else 0.0
            expected = weights[i].item() * ((1.0 if j == tokens[i] else 0.0) - p) / temperature
            assert logits.grad[i, j].item() == pytest.approx(expected, rel=1e-10, abs=1e-14)
    plain = selected_log_softmax(logits.detach(), tokens, temperature)
    assert (plain < out.detach() - 1e-3).all()  # what the trainer used to compute: a ratio below 1 on every token
    leaf = logits.detach().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda x: selected_log_softmax(x, tokens, 1.1, 0.6), (leaf,))
