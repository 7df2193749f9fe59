import math

import pytest
import torch
from trl.experimental.gkd import GKDTrainer
from trl.experimental.sdpo.loss_utils import compute_topk_self_distillation_loss

from composer_prime.loss.jsd import (
    chunked_generalized_jsd,
    generalized_jsd,
    reduce_tokens,
    sdpo_importance_weights,
    sparse_generalized_jsd,
)
from composer_prime.loss.topk import TopKLogprobs, extract_topk

BETAS = [0.0, 0.5, 1.0]


def _logits(*shape, seed, dtype=torch.float64):
    generator = torch.Generator().manual_seed(seed)
    return 3.0 * torch.randn(*shape, generator=generator, dtype=dtype)


def _softmax(row, temperature):
    scaled = [x / temperature for x in row]
    top = max(scaled)
    exps = [math.exp(x - top) for x in scaled]
    total = sum(exps)
    return [e / total for e in exps]


def _kl(p, q):
    return sum(pi * math.log(pi / qi) for pi, qi in zip(p, q) if pi > 0)


def _hand_jsd(p, q, beta):
    """The generalised JSD of distributions p (student) and q (teacher), written out."""
    if beta == 0.0:
        return _kl(q, p)
    if beta == 1.0:
        return _kl(p, q)
    m = [(1 - beta) * pi + beta * qi for pi, qi in zip(p, q)]
    return beta * _kl(q, m) + (1 - beta) * _kl(p, m)


def _hand_per_token(student, teacher, beta, temperature):
    return [
        _hand_jsd(_softmax(s, temperature), _softmax(t, temperature), beta)
        for s, t in zip(student.tolist(), teacher.tolist())
    ]


@pytest.mark.parametrize("beta", [0.0, 0.3, 0.5, 1.0])
@pytest.mark.parametrize("temperature", [1.0, 2.0])
def test_full_form_matches_the_formula_written_out(beta, temperature):
    student, teacher = _logits(6, 11, seed=0), _logits(6, 11, seed=1)
    expected = _hand_per_token(student, teacher, beta, temperature)
    for form in (generalized_jsd, chunked_generalized_jsd):
        got = form(student, teacher, beta=beta, temperature=temperature, reduction="none")
        assert got.tolist() == pytest.approx(expected, rel=1e-12, abs=1e-14)


def test_endpoints_are_forward_and_reverse_kl_and_interior_is_bounded_by_log2():
    student, teacher = _logits(5, 9, seed=2), _logits(5, 9, seed=3)
    p, q = torch.softmax(student, -1), torch.softmax(teacher, -1)
    forward = (q * (q.log() - p.log())).sum(-1)
    reverse = (p * (p.log() - q.log())).sum(-1)
    assert torch.allclose(generalized_jsd(student, teacher, beta=0.0, reduction="none"), forward, atol=1e-14)
    assert torch.allclose(generalized_jsd(student, teacher, beta=1.0, reduction="none"), reverse, atol=1e-14)
    assert not torch.allclose(forward, reverse)
    interior = generalized_jsd(student, teacher, beta=0.5, reduction="none")
    assert (interior > 0).all() and (interior <= math.log(2)).all()


@pytest.mark.parametrize("beta", BETAS)
def test_matches_trl_gkd_generalized_jsd_loss(beta):
    student, teacher = _logits(3, 7, 13, seed=4), _logits(3, 7, 13, seed=5)
    labels = torch.randint(0, 13, (3, 7), generator=torch.Generator().manual_seed(6))
    labels[0, :2] = -100
    labels[2, 5:] = -100
    mask = labels != -100
    for reduction, trl_reduction in (("mean", "batchmean"), ("sum", "sum")):
        ours = generalized_jsd(student, teacher, beta=beta, temperature=1.5, mask=mask, reduction=reduction)
        trl = GKDTrainer.generalized_jsd_loss(
            student, teacher, labels=labels, beta=beta, temperature=1.5, reduction=trl_reduction
        )
        chunked = chunked_generalized_jsd(student, teacher, beta=beta, temperature=1.5, mask=mask, reduction=reduction)
        assert ours.item() == pytest.approx(trl.item(), rel=1e-12)
        assert chunked.item() == pytest.approx(trl.item(), rel=1e-12)
    # Without labels on [tokens, V], TRL's batchmean divides by the token count: our "mean".
    flat_s, flat_t = student.reshape(-1, 13), teacher.reshape(-1, 13)
    trl = GKDTrainer.generalized_jsd_loss(flat_s, flat_t, beta=beta, reduction="batchmean")
    assert generalized_jsd(flat_s, flat_t, beta=beta).item() == pytest.approx(trl.item(), rel=1e-12)


def _value_and_grad(form, student, teacher, **kwargs):
    student = student.clone().requires_grad_()
    value = form(student, teacher, **kwargs)
    weights = torch.linspace(0.5, 1.5, value.numel(), dtype=value.dtype).reshape(value.shape)
    (grad,) = torch.autograd.grad((value * weights).sum(), student)
    return value.detach(), grad


@pytest.mark.parametrize("beta", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("chunk_size", [1, 4, 9, 64])
def test_chunked_equals_unchunked_values_and_gradients(beta, chunk_size):
    student, teacher = _logits(2, 9, 50, seed=7), _logits(2, 9, 50, seed=8)
    mask = torch.rand(2, 9, generator=torch.Generator().manual_seed(9)) > 0.3
    for kwargs in (
        {"reduction": "none", "temperature": 0.7},
        {"reduction": "mean", "mask": mask},
        {"reduction": "sum", "mask": mask, "clamp": 0.5, "token_weights": torch.rand(2, 9, dtype=torch.float64)},
    ):
        full = _value_and_grad(generalized_jsd, student, teacher, beta=beta, **kwargs)
        chunked = _value_and_grad(chunked_generalized_jsd, student, teacher, beta=beta, chunk_size=chunk_size, **kwargs)
        assert torch.allclose(full[0], chunked[0], rtol=1e-10, atol=1e-12)
        assert torch.allclose(full[1], chunked[1], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("beta", BETAS)
def test_chunked_equals_unchunked_in_float32_to_1e6(beta):
    student, teacher = _logits(33, 300, seed=10, dtype=torch.float32), _logits(33, 300, seed=11, dtype=torch.float32)
    full = _value_and_grad(generalized_jsd, student, teacher, beta=beta, temperature=1.3)
    chunked = _value_and_grad(chunked_generalized_jsd, student, teacher, beta=beta, temperature=1.3, chunk_size=8)
    # chunks only reorder float32 sums: values ~5 (rtol 1e-5 applies) and gradients ~1e-2 moved <= 1e-8 here
    assert torch.allclose(full[0], chunked[0], atol=1e-6)
    assert torch.allclose(full[1], chunked[1], atol=1e-6)


@pytest.mark.parametrize("beta", BETAS)
def test_chunked_backward_passes_gradcheck(beta):
    teacher = _logits(5, 6, seed=12)
    student = _logits(5, 6, seed=13).requires_grad_()

    def per_token(logits):
        return chunked_generalized_jsd(logits, teacher, beta=beta, temperature=1.7, reduction="none", chunk_size=2)

    assert torch.autograd.gradcheck(per_token, (student,))


def test_chunked_backward_can_run_twice_with_retain_graph():
    student, teacher = _logits(7, 20, seed=14).requires_grad_(), _logits(7, 20, seed=15)
    loss = chunked_generalized_jsd(student, teacher, beta=0.5, chunk_size=3)
    loss.backward(retain_graph=True)
    once = student.grad.clone()
    loss.backward()
    assert torch.allclose(student.grad, 2 * once, atol=1e-15)


@pytest.mark.parametrize("beta", BETAS)
def test_topk_with_k_equal_vocab_equals_full(beta):
    student, teacher = _logits(2, 5, 17, seed=16), _logits(2, 5, 17, seed=17)
    side_channel = extract_topk(teacher, 17, temperature=1.4)
    full = _value_and_grad(generalized_jsd, student, teacher, beta=beta, temperature=1.4, reduction="none")
    sparse = _value_and_grad(
        sparse_generalized_jsd, student, side_channel, beta=beta, temperature=1.4, reduction="none"
    )
    assert torch.allclose(full[0], sparse[0], rtol=1e-12, atol=1e-15)
    assert torch.allclose(full[1], sparse[1], rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize("beta", BETAS)
def test_topk_plus_tail_matches_the_bucket_formula_written_out(beta):
    student, teacher, k = _logits(4, 12, seed=18), _logits(4, 12, seed=19), 3
    side_channel = extract_topk(teacher, k)
    expected = []
    for s_row, t_row, ids in zip(student.tolist(), teacher.tolist(), side_channel.ids.tolist()):
        p, q = _softmax(s_row, 1.0), _softmax(t_row, 1.0)
        p_buckets = [p[i] for i in ids] + [1 - sum(p[i] for i in ids)]
        q_buckets = [q[i] for i in ids] + [1 - sum(q[i] for i in ids)]
        expected.append(_hand_jsd(p_buckets, q_buckets, beta))
    got = sparse_generalized_jsd(student, side_channel, beta=beta, reduction="none")
    assert got.tolist() == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("beta", BETAS)
def test_topk_plus_tail_never_exceeds_the_full_divergence(beta):
    # Merging the vocabulary into k + 1 buckets can only lower an f-divergence (data processing).
    student, teacher = _logits(40, 30, seed=38), _logits(40, 30, seed=39)
    full = generalized_jsd(student, teacher, beta=beta, reduction="none")
    previous = torch.zeros_like(full)
    for k in (1, 4, 16, 24):
        sparse = sparse_generalized_jsd(student, extract_topk(teacher, k), beta=beta, reduction="none")
        assert (sparse <= full + 1e-12).all()
        assert (sparse >= previous - 1e-12).all()  # a larger k only splits buckets further
        previous = sparse


@pytest.mark.parametrize("beta", BETAS)
def test_sparse_matches_trl_sdpo_topk_with_tail_on_the_student_support(beta):
    student, teacher, k = _logits(6, 20, seed=20), _logits(6, 20, seed=21), 5
    ids = torch.topk(student, k, dim=-1).indices
    teacher_at_ids = torch.log_softmax(teacher, -1).gather(-1, ids)
    side_channel = TopKLogprobs(ids.to(torch.int32), teacher_at_ids)
    ours = sparse_generalized_jsd(student, side_channel, beta=beta, reduction="none")
    trl = compute_topk_self_distillation_loss(
        student, teacher, distillation_topk=k, distillation_alpha=beta, distillation_add_tail=True
    )
    assert torch.allclose(ours, trl, rtol=1e-10, atol=1e-14)


def test_extract_topk_side_channel_format():
    teacher = _logits(3, 40, seed=22, dtype=torch.float32)
    side_channel = extract_topk(teacher, 8, temperature=2.0)
    assert side_channel.ids.dtype == torch.int32 and side_channel.ids.shape == (3, 8)
    assert side_channel.logprobs.dtype == torch.float32
    full = torch.log_softmax(teacher / 2.0, -1)
    assert torch.equal(side_channel.logprobs, full.gather(-1, side_channel.ids.long()))
    assert (side_channel.logprobs[:, :-1] >= side_channel.logprobs[:, 1:]).all()
    assert torch.equal(side_channel.logprobs[:, 0], full.max(-1).values)
    with pytest.raises(ValueError):
        extract_topk(teacher, 41)


@pytest.mark.parametrize("form", [generalized_jsd, chunked_generalized_jsd])
def test_masked_tokens_do_not_count(form):
    student, teacher = _logits(8, 10, seed=23), _logits(8, 10, seed=24)
    mask = torch.tensor([True, False, True, True, False, True, False, True])
    changed = student.clone()
    changed[~mask] = _logits(3, 10, seed=25)
    value, grad = _value_and_grad(form, student, teacher, mask=mask)
    value_changed, _ = _value_and_grad(form, changed, teacher, mask=mask)
    per_token = generalized_jsd(student, teacher, reduction="none")
    assert value.item() == pytest.approx(value_changed.item(), rel=1e-14)
    assert value.item() == pytest.approx(per_token[mask].sum().item() / 5, rel=1e-14)
    assert (grad[~mask] == 0).all() and (grad[mask] != 0).any(dim=-1).all()
    none = form(student, teacher, mask=mask, reduction="none")
    assert (none[~mask] == 0).all()
    assert form(student, teacher, mask=mask.long()).item() == value.item()  # a 0/1 loss_mask works too


@pytest.mark.parametrize("form", [generalized_jsd, chunked_generalized_jsd])
def test_clamp_caps_each_token_and_stops_its_gradient(form):
    student, teacher = _logits(10, 10, seed=26), _logits(10, 10, seed=27)
    per_token = generalized_jsd(student, teacher, beta=1.0, reduction="none")
    cap = per_token.median().item()
    over = per_token > cap
    assert over.any() and (~over).any()
    clamped, grad = _value_and_grad(form, student, teacher, beta=1.0, clamp=cap, reduction="none")
    _, unclamped_grad = _value_and_grad(form, student, teacher, beta=1.0, reduction="none")
    assert torch.allclose(clamped, torch.minimum(per_token, torch.tensor(cap, dtype=torch.float64)))
    assert (grad[over] == 0).all()
    assert torch.allclose(grad[~over], unclamped_grad[~over])


def test_gradient_reaches_only_the_student():
    student, teacher = _logits(4, 16, seed=28).requires_grad_(), _logits(4, 16, seed=29).requires_grad_()
    losses = [
        generalized_jsd(student, teacher, beta=0.5),
        chunked_generalized_jsd(student, teacher, beta=0.5, chunk_size=3),
        sparse_generalized_jsd(student, TopKLogprobs(*extract_topk(teacher, 4)), beta=0.5),
    ]
    for loss in losses:
        assert teacher.requires_grad
        loss.backward()
        assert teacher.grad is None
        assert student.grad is not None and student.grad.abs().sum() > 0
        student.grad = None


@pytest.mark.parametrize("beta", BETAS)
def test_gradient_descent_moves_the_student_towards_the_teacher(beta):
    student, teacher = _logits(3, 12, seed=30).requires_grad_(), _logits(3, 12, seed=31)
    before = generalized_jsd(student, teacher, beta=beta).item()
    optimizer = torch.optim.SGD([student], lr=5.0)
    for _ in range(100):
        optimizer.zero_grad()
        chunked_generalized_jsd(student, teacher, beta=beta).backward()
        optimizer.step()
    assert generalized_jsd(student, teacher, beta=beta).item() < 0.1 * before


def test_reduce_tokens_rejects_unknown_reduction_and_beta_out_of_range():
    with pytest.raises(ValueError):
        reduce_tokens(torch.zeros(3), reduction="batchmean")
    with pytest.raises(ValueError):
        generalized_jsd(_logits(2, 3, seed=32), _logits(2, 3, seed=33), beta=1.5)


def test_mean_of_all_masked_batch_is_zero_not_nan():
    student = _logits(3, 5, seed=34).requires_grad_()
    loss = chunked_generalized_jsd(student, _logits(3, 5, seed=35), mask=torch.zeros(3, dtype=torch.bool))
    loss.backward()
    assert loss.item() == 0.0 and (student.grad == 0).all()


def test_sdpo_importance_weight_is_the_clipped_ratio_without_gradient():
    logprobs = torch.tensor([-1.0, -0.5, -3.0, 0.0, -0.1], dtype=torch.float64, requires_grad=True)
    old = torch.tensor([-1.0, -2.0, -1.0, -800.0, -0.2], dtype=torch.float64)
    weights = sdpo_importance_weights(logprobs, old)
    expected = [2.0 if a - b > math.log(2.0) else math.exp(a - b) for a, b in zip(logprobs.tolist(), old.tolist())]
    assert weights.tolist() == pytest.approx(expected, rel=1e-14)
    assert not weights.requires_grad
    student, teacher = _logits(5, 7, seed=36), _logits(5, 7, seed=37)
    weighted = generalized_jsd(student, teacher, token_weights=weights, reduction="none")
    assert torch.allclose(weighted, generalized_jsd(student, teacher, reduction="none") * weights)
