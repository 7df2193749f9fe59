import math
import random

import pytest
import torch

from composer_prime.loss.jsd import generalized_jsd
from composer_prime.loss.taid import TAIDSchedule, TAIDState, entropy_gated_kl, taid_init, taid_loss, taid_update


def _logits(*shape, seed):
    return 3.0 * torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _softmax(row):
    top = max(row)
    exps = [math.exp(x - top) for x in row]
    return [e / sum(exps) for e in exps]


def _kl(p, q):
    return sum(pi * math.log(pi / qi) for pi, qi in zip(p, q))


def _entropy(p):
    return -sum(pi * math.log(pi) for pi in p)


@pytest.mark.parametrize("t", [0.4, 0.7, 1.0])
def test_taid_loss_matches_the_formula_written_out(t):
    student, teacher = _logits(5, 9, seed=0), _logits(5, 9, seed=1)
    expected = []
    for s_row, t_row in zip(student.tolist(), teacher.tolist()):
        target = _softmax([(1 - t) * s + t * z for s, z in zip(s_row, t_row)])
        expected.append(_kl(target, _softmax(s_row)))
    got = taid_loss(student, teacher, t, reduction="none")
    assert got.tolist() == pytest.approx(expected, rel=1e-12)


def test_taid_gradient_treats_the_interpolated_target_as_constant():
    student, teacher = _logits(4, 7, seed=2).requires_grad_(), _logits(4, 7, seed=3).requires_grad_()
    taid_loss(student, teacher, 0.6, reduction="sum").backward()
    for row in range(4):
        s_row, t_row = student[row].tolist(), teacher[row].tolist()
        p_student = _softmax(s_row)
        target = _softmax([0.4 * s + 0.6 * z for s, z in zip(s_row, t_row)])
        expected = [ps - pt for ps, pt in zip(p_student, target)]
        assert student.grad[row].tolist() == pytest.approx(expected, abs=1e-12)
    assert teacher.grad is None


def test_taid_endpoints():
    student, teacher = _logits(3, 8, seed=4).requires_grad_(), _logits(3, 8, seed=5)
    at_zero = taid_loss(student, teacher, 0.0)
    at_zero.backward()
    assert at_zero.item() == pytest.approx(0.0, abs=1e-14)
    assert student.grad.abs().max().item() < 1e-14
    at_one = taid_loss(student, teacher, 1.0, reduction="none")
    assert torch.allclose(at_one, generalized_jsd(student, teacher, beta=0.0, reduction="none"), atol=1e-14)


def test_taid_masks_tokens():
    student, teacher = _logits(4, 6, seed=6), _logits(4, 6, seed=7)
    mask = torch.tensor([True, False, True, False])
    per_token = taid_loss(student, teacher, 0.5, reduction="none")
    assert taid_loss(student, teacher, 0.5, mask=mask).item() == pytest.approx(per_token[mask].mean().item())


def test_schedule_first_update_only_records_the_loss():
    state = taid_init()
    assert state == TAIDState(t=0.4)
    state = taid_update(state, 3.0, step=1, total_steps=100)
    assert state.t == 0.4 and state.prev_loss == 3.0 and state.momentum == 0.0


def test_schedule_step_follows_the_momentum_rule():
    schedule = TAIDSchedule(t_start=0.4, t_end=1.0, step_size=0.1, momentum=0.9)
    state = TAIDState(t=0.5, prev_loss=2.0, momentum=0.05)
    new = taid_update(state, 1.5, step=1, total_steps=1000, schedule=schedule)
    relative_change = (2.0 - 1.5) / 2.0
    momentum = 0.9 * 0.05 + 0.1 * relative_change
    t = 0.5 + 0.1 * (1 / (1 + math.exp(-momentum))) * (1 - 0.5)
    assert new.momentum == pytest.approx(momentum, rel=1e-14)
    assert new.t == pytest.approx(t, rel=1e-14)
    assert new.prev_loss == 1.5
    # The linear schedule is a floor: late in training t jumps to it.
    late = taid_update(state, 1.5, step=900, total_steps=1000, schedule=schedule)
    assert late.t == pytest.approx(0.4 + 0.6 * 0.9)


def test_schedule_is_monotonic_and_stays_within_bounds():
    rng = random.Random(0)
    schedule = TAIDSchedule(t_start=0.4, t_end=1.0, step_size=5e-3)
    state, ts, total = taid_init(schedule), [], 300
    loss = 5.0
    for step in range(total + 20):
        loss = max(1e-3, loss * rng.uniform(0.8, 1.25))  # noisy, sometimes rising
        state = taid_update(state, loss, step, total, schedule)
        ts.append(state.t)
    assert all(b >= a for a, b in zip(ts, ts[1:]))
    assert all(schedule.t_start <= t <= schedule.t_end for t in ts)
    assert ts[total] == schedule.t_end


def test_schedule_advances_faster_while_the_loss_falls():
    schedule = TAIDSchedule(step_size=0.05)

    def run(factor):
        state, loss = taid_init(schedule), 1.0
        for step in range(20):
            state = taid_update(state, loss, step, 10_000, schedule)
            loss *= factor
        return state.t

    assert run(0.7) > run(1.0) > run(1.5)


def test_entropy_gated_kl_matches_the_rule_written_out():
    student = _logits(3, 6, seed=8)
    teacher = torch.tensor(
        [[9.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.1, 0.0, 0.2, 0.0, 0.1, 0.0], [3.0, 2.5, 0.0, 0.0, 0.0, 0.0]],
        dtype=torch.float64,
    )
    threshold = 1.0
    expected, gated = [], []
    for s_row, t_row in zip(student.tolist(), teacher.tolist()):
        p, q = _softmax(s_row), _softmax(t_row)
        high_entropy = _entropy(q) > threshold
        gated.append(high_entropy)
        expected.append(_kl(p, q) + (_kl(q, p) if high_entropy else 0.0))
    assert gated == [False, True, True]
    got = entropy_gated_kl(student, teacher, entropy_threshold=threshold, reduction="none")
    assert got.tolist() == pytest.approx(expected, rel=1e-12)


def test_entropy_gated_kl_thresholds_at_the_extremes():
    student, teacher = _logits(4, 10, seed=9), _logits(4, 10, seed=10)
    reverse = generalized_jsd(student, teacher, beta=1.0, temperature=2.0, reduction="none")
    forward = generalized_jsd(student, teacher, beta=0.0, temperature=2.0, reduction="none")
    never = entropy_gated_kl(student, teacher, entropy_threshold=math.log(10), temperature=2.0, reduction="none")
    always = entropy_gated_kl(student, teacher, entropy_threshold=0.0, temperature=2.0, reduction="none")
    assert torch.allclose(never, reverse, atol=1e-14)
    assert torch.allclose(always, reverse + forward, atol=1e-14)


def test_entropy_gated_kl_gradient_reaches_only_the_student():
    student, teacher = _logits(3, 5, seed=11).requires_grad_(), _logits(3, 5, seed=12).requires_grad_()
    entropy_gated_kl(student, teacher, entropy_threshold=0.5).backward()
    assert teacher.grad is None and student.grad.abs().sum() > 0
