"""robust.check / robust.combine against independent float64 references (numpy), and fragment cutting."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from composer_prime.diloco.fragments import split_fragments
from composer_prime.diloco.robust import check, combine, coordinate_median


def _honest(n: int, dim: int = 200, seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    base = torch.randn(dim, generator=g)
    return {f"s{i}": base + 0.3 * torch.randn(dim, generator=g) for i in range(n)}


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_combination_rules_match_numpy(n):
    stacked = torch.randn(n, 50, generator=torch.Generator().manual_seed(n))
    ref = stacked.double().numpy()
    # float32 means of <= 5 values with |x| < 4: a few roundings of eps 1.2e-7 x 4 (1e-7 measured) < atol
    assert np.allclose(combine(list(stacked), "mean").numpy(), ref.mean(0), atol=1e-6)
    assert np.allclose(combine(list(stacked), "median").numpy(), np.median(ref, 0), atol=1e-6)
    assert np.allclose(coordinate_median(stacked).numpy(), np.median(ref, 0), atol=1e-6)
    trimmed = np.sort(ref, 0)[1:n - 1].mean(0) if n > 2 else np.median(ref, 0)
    assert np.allclose(combine(list(stacked), "trimmed_mean", trim=1).numpy(), trimmed, atol=1e-6)


@pytest.mark.parametrize("attack, reason", [
    (lambda pg: pg * 100, "norm"),
    (lambda pg: pg.index_fill(0, torch.tensor([3]), float("nan")), "non-finite"),
    (lambda pg: pg.index_fill(0, torch.tensor([3]), float("inf")), "non-finite"),
    (lambda pg: -pg, "direction"),
])
def test_each_attack_is_rejected_and_honest_sites_kept(attack, reason):
    pgs = _honest(4)
    pgs["evil"] = attack(pgs["s0"].clone())
    verdict = check(pgs, max_norm_ratio=3.0, min_cosine=0.0)
    assert verdict.rejected == {"evil": reason}
    assert verdict.accepted == ["s0", "s1", "s2", "s3"]
    # The cosine is an independent float64 computation against numpy's median of the in-norm set.
    if reason == "direction":
        arr = np.stack([pgs[s].double().numpy() for s in sorted(pgs)])
        med = np.median(arr, 0)
        evil = pgs["evil"].double().numpy()
        assert verdict.cosines["evil"] == pytest.approx(evil @ med / np.linalg.norm(evil) / np.linalg.norm(med))


def test_two_honest_one_attacker_the_smallest_guarded_run():
    pgs = _honest(2)
    for attack in (lambda pg: pg * 100, lambda pg: -pg):
        verdict = check({**pgs, "evil": attack(pgs["s0"].clone())}, 3.0, 0.0)
        assert verdict.accepted == ["s0", "s1"]


@pytest.mark.parametrize("max_norm_ratio", [3.0, 1e12, float("inf")])
def test_when_the_honest_median_norm_is_0_only_a_zero_pseudo_gradient_passes(max_norm_ratio):
    """Two idle honest sites (nothing learned this round) and one that sends anything: before, a median of 0 skipped
    the norm check and the zero reference scored every direction as agreeing (cosine 1), so it was applied."""
    evil = 1e-3 * torch.randn(200, generator=torch.Generator().manual_seed(0))
    verdict = check({"s0": torch.zeros(200), "s1": torch.zeros(200), "evil": evil}, max_norm_ratio, 0.0)
    assert verdict.rejected == {"evil": "norm"} and verdict.accepted == ["s0", "s1"]
    assert torch.equal(combine([torch.zeros(200)] * 2, "mean"), torch.zeros(200))


def test_no_direction_agrees_with_a_zero_coordinate_median():
    """Median norm 1 but a coordinate-wise median of 0 (numpy agrees): no direction can be judged, so none is applied."""
    units = {site: torch.eye(3)[i] for i, site in enumerate(["a", "b", "c"])}
    assert not np.median(np.stack([u.double().numpy() for u in units.values()]), 0).any()
    verdict = check(units, max_norm_ratio=3.0, min_cosine=-1.0)
    assert verdict.accepted == [] and verdict.rejected == {"a": "direction", "b": "direction", "c": "direction"}


def test_plain_mean_is_dragged_by_one_attacker_trimmed_mean_is_not():
    pgs = _honest(4)
    clean = combine(list(pgs.values()), "mean")
    poisoned = list(pgs.values()) + [pgs["s0"] * 100]
    assert (combine(poisoned, "mean") - clean).norm() > 10 * clean.norm()
    assert (combine(poisoned, "trimmed_mean", trim=1) - clean).norm() < 0.5 * clean.norm()


def test_fragments_partition_parameters_once_even_when_tied():
    emb = nn.Embedding(10, 8)
    model = nn.ModuleDict({"emb": emb, "mid": nn.Linear(8, 8), "head": nn.Linear(8, 10, bias=False)})
    model["head"].weight = emb.weight  # tied, as in the tiny Qwen3
    fragments = split_fragments(model, 2)
    ids = [id(p) for f in fragments for p in f.parameters()]
    assert sorted(ids) == sorted(id(p) for p in model.parameters()) and len(ids) == len(set(ids))
    with pytest.raises(ValueError):
        split_fragments(model, 10)
