import itertools
from fractions import Fraction
from math import comb

import pytest

from composer_prime.heldout.evaluate import pass_at_k


@pytest.mark.parametrize(("n", "c", "k"), [(1, 0, 1), (1, 1, 1), (5, 2, 1), (5, 2, 3), (10, 3, 4), (10, 0, 10),
                                           (200, 7, 10), (8, 8, 2)])
def test_pass_at_k_is_one_minus_the_chance_that_k_draws_all_fail(n, c, k):
    expected = 1.0 - comb(n - c, k) / comb(n, k)  # Chen et al. (2021), written out
    assert pass_at_k(n, c, k) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_pass_at_k_matches_enumerating_every_draw():
    n, c, k = 6, 2, 3
    outcomes = [True] * c + [False] * (n - c)
    draws = list(itertools.combinations(range(n), k))
    exact = Fraction(sum(any(outcomes[i] for i in d) for d in draws), len(draws))
    assert pass_at_k(n, c, k) == pytest.approx(float(exact), rel=1e-12)


def test_pass_at_1_is_the_fraction_correct():
    assert pass_at_k(8, 3, 1) == pytest.approx(3 / 8, rel=1e-12)


@pytest.mark.parametrize(("n", "c", "k"), [(4, 5, 1), (4, 1, 5), (4, -1, 1), (4, 1, 0)])
def test_impossible_counts_are_refused(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)
