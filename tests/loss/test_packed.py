"""Applying a loss to packed micro-batches: per-sequence calls, whole-batch calls, global normalisation."""

import functools
import math

import pytest
import torch

from composer_prime.loss.dppo import dppo_loss
from composer_prime.loss.packed import packed_loss, segment_lengths
from composer_prime.loss.resolve import Loss
from composer_prime.loss.types import LossInputs, LossOutputs

DPPO_WHOLE = Loss(fn=functools.partial(dppo_loss, kl_coef=0.05), elementwise=True)
DPPO_PER_SEQUENCE = Loss(fn=functools.partial(dppo_loss, kl_coef=0.05), elementwise=False)


def packed_rows(lengths_per_row, seq_len, seed):
    """[rows, seq_len] tensors: samples of the given lengths back to back, then padding."""
    g = torch.Generator().manual_seed(seed)
    rows = len(lengths_per_row)
    pos = torch.zeros(rows, seq_len, dtype=torch.long)
    mask = torch.zeros(rows, seq_len, dtype=torch.bool)
    adv = torch.zeros(rows, seq_len, dtype=torch.float64)
    lp_inf = torch.zeros(rows, seq_len, dtype=torch.float64)
    for r, lengths in enumerate(lengths_per_row):
        start = 0
        for n in lengths:
            pos[r, start : start + n] = torch.arange(n)
            prompt = n // 3
            mask[r, start + prompt : start + n] = True
            adv[r, start : start + n] = torch.randn((), generator=g, dtype=torch.float64)
            start += n
        pos[r, start:] = torch.arange(seq_len - start)  # padding is one more segment
    lp_inf[mask] = -torch.rand(int(mask.sum()), generator=g, dtype=torch.float64) * 2
    adv[~mask] = 0.0
    lp_train = (lp_inf + torch.randn(rows, seq_len, generator=g, dtype=torch.float64) * 0.5).clamp(max=0.0)
    return lp_train, lp_inf, adv, mask, pos


def test_segment_lengths_follow_position_resets():
    pos = torch.tensor([[0, 1, 2, 0, 1, 0], [0, 1, 2, 3, 0, 1]])
    assert segment_lengths(pos) == [3, 2, 1, 4, 2]


def test_per_sequence_calls_sum_to_the_whole_batch_call():
    lp_train, lp_inf, adv, mask, pos = packed_rows([[9, 7, 12], [20, 5]], seq_len=32, seed=0)
    grads = []
    results = []
    for loss in (DPPO_WHOLE, DPPO_PER_SEQUENCE):
        lp = lp_train.clone().requires_grad_(True)
        total, outputs = packed_loss(loss, lp, lp_inf, adv, mask, pos)
        total.backward()
        grads.append(lp.grad)
        results.append((total.item(), outputs))
    (whole, whole_out), (per_seq, per_seq_out) = results
    assert len(whole_out) == 1 and len(per_seq_out) == 5  # padding segments hold no loss tokens: not called
    assert whole == pytest.approx(per_seq, rel=1e-12)
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-12, atol=1e-12)
    for key in whole_out[0].metrics:
        a = whole_out[0].metrics[key].mean().item()
        b = torch.cat([o.metrics[key] for o in per_seq_out]).mean().item()
        assert a == pytest.approx(b, rel=1e-12)


def test_custom_loss_sees_one_sample_per_call():
    lp_train, lp_inf, adv, mask, pos = packed_rows([[9, 7, 12], [20, 5]], seq_len=32, seed=1)
    seen = []

    def spy(inputs: LossInputs) -> LossOutputs:
        advantages = set(inputs.advantages[inputs.loss_mask].tolist())
        seen.append((len(inputs.loss_mask), int(inputs.loss_mask.sum()), advantages))
        return LossOutputs(loss=inputs.trainer_logprobs[inputs.loss_mask].sum(), metrics={})

    packed_loss(Loss(fn=spy, elementwise=False), lp_train, lp_inf, adv, mask, pos)
    assert [s[0] for s in seen] == [9, 7, 12, 20, 5]
    assert [s[1] for s in seen] == [n - n // 3 for n in (9, 7, 12, 20, 5)]
    assert all(len(s[2]) == 1 for s in seen), "one advantage per sample"


def test_normalising_by_the_global_count_weights_every_token_equally():
    """Two ranks holding 6 and 40 loss tokens: sum_rank loss_rank / N_global is the mean over all
    46 tokens, which differs from averaging the two ranks' own means."""
    rank_a = packed_rows([[8]], seq_len=8, seed=2)
    rank_b = packed_rows([[30, 30]], seq_len=60, seed=3)
    n_global = sum(int(r[3].sum()) for r in (rank_a, rank_b))
    assert n_global == 46
    per_rank = [packed_loss(DPPO_WHOLE, *r)[0].item() for r in (rank_a, rank_b)]
    normalised = sum(x / n_global for x in per_rank)

    per_token = []
    for lp_train, lp_inf, adv, mask, _ in (rank_a, rank_b):
        columns = (lp_train, lp_inf, adv, mask)
        for lp, lpi, a, m in zip(*(c.flatten().tolist() for c in columns)):
            if not m:
                continue
            r = math.exp(lp - lpi)
            dp = math.exp(lp) - math.exp(lpi)
            masked = (a > 0 and dp > 0.2) or (a <= 0 and dp < -0.2)
            per_token.append(-(0.0 if masked else 1.0) * a * r + 0.05 * math.log(r) ** 2)
    assert normalised == pytest.approx(sum(per_token) / len(per_token), rel=1e-12)
    mean_of_means = sum(x / int(r[3].sum()) for x, r in zip(per_rank, (rank_a, rank_b))) / 2
    assert normalised != pytest.approx(mean_of_means, rel=1e-6)


def test_backward_runs_when_nothing_is_trained_on():
    lp_train, lp_inf, adv, mask, pos = packed_rows([[6]], seq_len=6, seed=4)
    mask[:] = False
    lp = lp_train.clone().requires_grad_(True)
    total, outputs = packed_loss(DPPO_PER_SEQUENCE, lp, lp_inf, adv, mask, pos)
    total.backward()
    assert outputs == [] and total.item() == 0.0
    assert torch.count_nonzero(lp.grad) == 0
