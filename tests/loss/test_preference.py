import math
from collections import defaultdict
from types import SimpleNamespace

import pytest
import torch
from trl import DPOTrainer
from trl.experimental.cpo import CPOTrainer

from composer_prime.loss.preference import add_chosen_nll, dpo_loss, sequence_logprobs, simpo_loss


def _randn(*shape, seed, scale=1.0):
    return scale * torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _log_sigmoid(x):
    return -math.log1p(math.exp(-x)) if x >= 0 else x - math.log1p(math.exp(x))


def _pairs(seed, batch=6):
    """Summed log-probs of chosen/rejected under policy and reference, some pairs ranked wrongly."""
    return [_randn(batch, seed=seed + i, scale=5.0) - 20.0 for i in range(4)]


def test_sequence_logprobs_sums_and_averages_masked_tokens():
    token_logprobs = -_randn(3, 5, seed=0).abs()
    mask = torch.tensor([[1, 1, 1, 0, 0], [0, 1, 1, 1, 1], [0, 0, 0, 0, 0]], dtype=torch.bool)
    token_logprobs[~mask] = float("nan")
    summed, averaged = sequence_logprobs(token_logprobs, mask)
    for b in range(3):
        values = [token_logprobs[b, t].item() for t in range(5) if mask[b, t]]
        assert summed[b].item() == pytest.approx(sum(values), rel=1e-14)
        assert averaged[b].item() == pytest.approx(sum(values) / len(values) if values else 0.0, rel=1e-14)
    assert torch.equal(sequence_logprobs(token_logprobs, mask.long())[0], summed)


def test_sequence_logprobs_matches_trl_get_batch_logps():
    logits = _randn(4, 9, 17, seed=1)
    labels = torch.randint(0, 17, (4, 9), generator=torch.Generator().manual_seed(2))
    labels[:, :3] = -100  # prompt
    labels[1, 7:] = -100  # padding
    # TRL shifts: the logits at position i predict label i + 1.
    targets, mask = labels[:, 1:], labels[:, 1:] != -100
    token_logprobs = torch.log_softmax(logits[:, :-1], -1).gather(-1, targets.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    summed, averaged = sequence_logprobs(token_logprobs, mask)
    assert torch.allclose(summed, CPOTrainer.get_batch_logps(logits, labels, average_log_prob=False), rtol=1e-12)
    assert torch.allclose(averaged, CPOTrainer.get_batch_logps(logits, labels, average_log_prob=True), rtol=1e-12)


@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
def test_dpo_matches_the_formula_written_out(label_smoothing):
    chosen, rejected, ref_chosen, ref_rejected = _pairs(seed=3)
    out = dpo_loss(chosen, rejected, ref_chosen, ref_rejected, beta=0.1, label_smoothing=label_smoothing)
    losses, chosen_rewards, rejected_rewards = [], [], []
    for w, lose, rw, rl in zip(chosen.tolist(), rejected.tolist(), ref_chosen.tolist(), ref_rejected.tolist()):
        h = 0.1 * ((w - rw) - (lose - rl))
        losses.append(-(1 - label_smoothing) * _log_sigmoid(h) - label_smoothing * _log_sigmoid(-h))
        chosen_rewards.append(0.1 * (w - rw))
        rejected_rewards.append(0.1 * (lose - rl))
    assert out.losses.tolist() == pytest.approx(losses, rel=1e-12)
    assert out.loss.item() == pytest.approx(sum(losses) / len(losses), rel=1e-12)
    assert out.chosen_rewards.tolist() == pytest.approx(chosen_rewards, rel=1e-12)
    assert out.rejected_rewards.tolist() == pytest.approx(rejected_rewards, rel=1e-12)
    margins = [c - r for c, r in zip(chosen_rewards, rejected_rewards)]
    assert out.margins.tolist() == pytest.approx(margins, rel=1e-12)
    accuracy = sum(m > 0 for m in margins) / len(margins)
    assert 0 < accuracy < 1
    assert out.accuracy.item() == pytest.approx(accuracy)


def _trl_dpo_sigmoid(per_token_logps, completion_mask, ref_chosen, ref_rejected, beta):
    """Run TRL's DPOTrainer._compute_loss with just the attributes the sigmoid path reads.

    The model stub returns per-token log-probs the way TRL's fused LM head does: zero where the
    label is masked, so that TRL's plain sum over the sequence is the masked sum.
    """
    metrics = {"eval": defaultdict(list)}
    outputs = SimpleNamespace(
        log_probs=per_token_logps.masked_fill(completion_mask[:, 1:] == 0, 0.0),
        entropy=torch.zeros_like(per_token_logps),
        mean_logits=torch.zeros_like(per_token_logps),
        is_top1=torch.zeros_like(per_token_logps, dtype=torch.bool),
    )
    trainer = SimpleNamespace(
        model=SimpleNamespace(training=False),
        accelerator=SimpleNamespace(device="cpu", gather_for_metrics=lambda x: x, gather=lambda x: x),
        aux_loss_enabled=False,
        ld_alpha=None,
        precompute_ref_logps=True,
        f_divergence_type="reverse_kl",
        loss_types=["sigmoid"],
        loss_weights=[1.0],
        use_weighting=False,
        beta=beta,
        _metrics=metrics,
        _total_train_tokens=0,
    )
    inputs = {
        "input_ids": torch.zeros(completion_mask.shape, dtype=torch.long),
        "completion_mask": completion_mask,
        "ref_chosen_logps": ref_chosen,
        "ref_rejected_logps": ref_rejected,
    }
    loss = DPOTrainer._compute_loss(trainer, lambda **_: outputs, inputs, return_outputs=False)
    return loss, metrics["eval"]


def test_dpo_matches_trl_dpo_trainer_sigmoid_loss():
    batch, length = 5, 8
    per_token = -_randn(2 * batch, length - 1, seed=10).abs()
    completion_mask = (torch.rand(2 * batch, length, generator=torch.Generator().manual_seed(11)) > 0.3).long()
    completion_mask[:, 1] = 1
    ref_chosen, ref_rejected = _randn(batch, seed=12) - 3.0, _randn(batch, seed=13) - 3.0
    trl_loss, trl_metrics = _trl_dpo_sigmoid(per_token, completion_mask, ref_chosen, ref_rejected, beta=0.1)

    summed, _ = sequence_logprobs(per_token, completion_mask[:, 1:].bool())
    chosen, rejected = summed.chunk(2)  # TRL's batch is [chosen..., rejected...]
    out = dpo_loss(chosen, rejected, ref_chosen, ref_rejected, beta=0.1)
    assert out.loss.item() == pytest.approx(trl_loss.item(), rel=1e-12)
    assert out.chosen_rewards.mean().item() == pytest.approx(trl_metrics["rewards/chosen"][0], rel=1e-12)
    assert out.rejected_rewards.mean().item() == pytest.approx(trl_metrics["rewards/rejected"][0], rel=1e-12)
    assert out.margins.mean().item() == pytest.approx(trl_metrics["rewards/margins"][0], rel=1e-12)
    assert out.accuracy.item() == pytest.approx(trl_metrics["rewards/accuracies"][0])


def _trl_cpo(loss_type, beta, label_smoothing, simpo_gamma, chosen, rejected):
    trainer = SimpleNamespace(
        alpha=0.0,
        beta=beta,
        label_smoothing=label_smoothing,
        loss_type=loss_type,
        simpo_gamma=simpo_gamma,
        accelerator=SimpleNamespace(device="cpu"),
    )
    return CPOTrainer.cpo_loss(trainer, chosen, rejected)


def test_conservative_dpo_matches_trl_smoothed_sigmoid_on_log_ratios():
    # TRL's CPO "sigmoid" loss with label smoothing, fed DPO's log-ratios, is conservative DPO.
    chosen, rejected, ref_chosen, ref_rejected = _pairs(seed=20)
    out = dpo_loss(chosen, rejected, ref_chosen, ref_rejected, beta=0.3, label_smoothing=0.15)
    trl_losses, _, _ = _trl_cpo("sigmoid", 0.3, 0.15, None, chosen - ref_chosen, rejected - ref_rejected)
    assert torch.allclose(out.losses, trl_losses, rtol=1e-12)


@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_simpo_matches_the_formula_and_trl_cpo_simpo(label_smoothing):
    chosen_avg, rejected_avg = -_randn(7, seed=30).abs(), -_randn(7, seed=31).abs()
    out = simpo_loss(chosen_avg, rejected_avg, beta=2.5, gamma=0.8, label_smoothing=label_smoothing)
    expected = []
    for w, lose in zip(chosen_avg.tolist(), rejected_avg.tolist()):
        x = 2.5 * (w - lose) - 0.8
        expected.append(-(1 - label_smoothing) * _log_sigmoid(x) - label_smoothing * _log_sigmoid(-x))
    assert out.losses.tolist() == pytest.approx(expected, rel=1e-12)
    trl_losses, trl_chosen, trl_rejected = _trl_cpo("simpo", 2.5, label_smoothing, 0.8, chosen_avg, rejected_avg)
    assert torch.allclose(out.losses, trl_losses, rtol=1e-12)
    assert torch.allclose(out.chosen_rewards, trl_chosen, rtol=1e-12)
    assert torch.allclose(out.rejected_rewards, trl_rejected, rtol=1e-12)


def test_simpo_margin_gamma_demands_a_gap():
    tied = torch.full((3,), -1.0, dtype=torch.float64)
    assert simpo_loss(tied, tied, gamma=0.0).loss.item() == pytest.approx(math.log(2))
    assert simpo_loss(tied, tied, gamma=1.0).loss.item() > math.log(2)


def test_gradients_raise_chosen_and_lower_rejected():
    chosen, rejected, ref_chosen, ref_rejected = (x.requires_grad_() for x in _pairs(seed=40))
    dpo_loss(chosen, rejected, ref_chosen, ref_rejected).loss.backward()
    assert (chosen.grad < 0).all() and (rejected.grad > 0).all()
    chosen_avg = (-_randn(4, seed=50).abs()).requires_grad_()
    rejected_avg = (-_randn(4, seed=60).abs()).requires_grad_()
    simpo_loss(chosen_avg, rejected_avg).loss.backward()
    assert (chosen_avg.grad < 0).all() and (rejected_avg.grad > 0).all()


def test_diagnostics_are_detached_and_label_smoothing_is_checked():
    chosen, rejected, ref_chosen, ref_rejected = (x.requires_grad_() for x in _pairs(seed=70))
    out = dpo_loss(chosen, rejected, ref_chosen, ref_rejected)
    assert out.loss.requires_grad
    assert not any(t.requires_grad for t in (out.chosen_rewards, out.rejected_rewards, out.margins, out.accuracy))
    with pytest.raises(ValueError):
        dpo_loss(chosen, rejected, ref_chosen, ref_rejected, label_smoothing=0.5)


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0])
def test_rpo_adds_the_chosen_length_normalised_nll_to_each_pair(alpha):
    chosen, rejected, ref_chosen, ref_rejected = _pairs(seed=80)
    token_logprobs = -_randn(6, 7, seed=81).abs()
    mask = torch.arange(7)[None] < torch.tensor([3, 7, 1, 5, 2, 4])[:, None]
    _, chosen_avg = sequence_logprobs(token_logprobs, mask)
    base = dpo_loss(chosen, rejected, ref_chosen, ref_rejected, beta=0.1)
    out = add_chosen_nll(base, chosen_avg, alpha)
    for i in range(6):
        tokens = [token_logprobs[i, t].item() for t in range(7) if mask[i, t]]
        h = (chosen[i] - ref_chosen[i] - rejected[i] + ref_rejected[i]).item()
        expected = -_log_sigmoid(0.1 * h) - alpha * sum(tokens) / len(tokens)
        assert out.losses[i].item() == pytest.approx(expected, rel=1e-12)
    assert out.loss.item() == pytest.approx(out.losses.mean().item(), rel=1e-14)
    assert torch.equal(out.margins, base.margins) and torch.equal(out.accuracy, base.accuracy)


def test_rpo_pulls_the_chosen_answer_up_even_when_the_pair_is_saturated():
    # A pair already ranked by a huge margin gives DPO no gradient; the NLL term still raises chosen.
    chosen_avg = torch.tensor([-2.0], dtype=torch.float64, requires_grad=True)
    base = dpo_loss(torch.tensor([0.0]), torch.tensor([-1e4]), torch.tensor([0.0]), torch.tensor([0.0]))
    add_chosen_nll(base, chosen_avg, 1.0).loss.backward()
    assert chosen_avg.grad.item() == pytest.approx(-1.0)
    with pytest.raises(ValueError):
        add_chosen_nll(base, chosen_avg, -0.1)
