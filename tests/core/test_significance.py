"""The paired significance tools against hand-computed values (docs/statistics.md, "Paired comparison")."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from pytest_groundeval.core.significance import (
    EXACT_LIMIT,
    REPLICATES,
    bootstrap,
    format_p,
    mcnemar_p,
    paired_ratio_p,
    percentile_interval,
    sign_flip_p,
    significance_text,
    smallest_p,
)


@pytest.mark.parametrize(
    ("b", "c", "p"),
    [
        (1, 0, 1.0),  # 2 * (1/2), capped at 1
        (10, 0, 2 / 1024),  # 2 * (1/2)^10 = 0.001953125
        (7, 2, 0.1796875),  # 2 * (C(9,0) + C(9,1) + C(9,2)) / 2^9 = 2 * 46 / 512
        (2, 7, 0.1796875),  # two-sided: the same either way
        (5, 0, 0.0625),
        (6, 0, 0.03125),
        (4, 4, 1.0),
        (0, 0, 1.0),  # no flips: nothing to test
    ],
)
def test_mcnemar_matches_hand_computed_values(b, c, p):
    assert mcnemar_p(b, c) == p


def _exact_by_hand(b: int, c: int) -> float:
    n, k = b + c, min(b, c)
    term = total = 1
    for i in range(1, k + 1):  # C(n, i) from C(n, i - 1), in exact integers
        term = term * (n - i + 1) // i
        total += term
    assert term == math.comb(n, k)
    return float(min(Fraction(1), 2 * Fraction(total, 2**n)))


@pytest.mark.parametrize(("b", "c"), [(2600, 2450), (2501, 2500), (2700, 2400)])
def test_mcnemar_in_log_space_agrees_with_exact_integers(b, c):
    assert b + c > EXACT_LIMIT  # the log-space branch
    assert mcnemar_p(b, c) == pytest.approx(_exact_by_hand(b, c), rel=1e-8)


def test_mcnemar_takes_a_million_flips_and_refuses_negative_counts():
    p = mcnemar_p(500_000, 501_500)
    assert 0.0 < p < 1.0 and math.isfinite(p)
    assert mcnemar_p(500_000, 520_000) < 1e-40  # a large imbalance: tiny, never NaN or negative
    with pytest.raises(ValueError, match="flip counts must be >= 0"):
        mcnemar_p(-1, 3)


def test_sign_flip_on_zero_one_figures_is_the_exact_mcnemar_test():
    # 7 items lose their one expected string, 2 gain it, 100 agree: only the 9 that differ are swapped.
    pairs = [(1, 1, 0, 1)] * 7 + [(0, 1, 1, 1)] * 2 + [(1, 1, 1, 1)] * 100
    assert paired_ratio_p(pairs) == (0.1796875, True)
    assert paired_ratio_p([(1, 1, 0, 1)] * 10) == (2 / 1024, True)
    # One item flipped among many: no swap of one item can be less extreme than itself.
    assert paired_ratio_p([(2, 2, 0, 2)] + [(2, 2, 2, 2)] * 368) == (1.0, True)
    assert paired_ratio_p([(2, 2, 2, 2)] * 5) == (1.0, True)


def test_sign_flip_by_monte_carlo_is_close_to_the_exact_value_and_never_zero():
    pairs = [(1, 1, 0, 1)] * 30 + [(0, 1, 1, 1)] * 12  # 42 differ: too many to enumerate
    p, exact = paired_ratio_p(pairs)
    assert not exact and abs(p - mcnemar_p(30, 12)) < 0.01
    p, exact = paired_ratio_p([(1, 1, 0, 1)] * 60)  # only 2 of 2^60 swaps are as extreme: none drawn
    assert not exact and p == 1 / (REPLICATES + 1)  # (0 + 1) / (R + 1), never 0


def test_sign_flip_of_any_statistic_counts_undefined_swaps_as_less_extreme():
    # A statistic undefined on every swap but the identity: only the observed change counts.
    p, exact = sign_flip_p(0.5, 3, lambda mask: 0.5 if not any(mask) else None)
    assert (p, exact) == (1 / 8, True)


def test_smallest_p_says_when_no_change_can_be_significant():
    assert smallest_p(1) == 1.0 and smallest_p(5) == 0.0625 and smallest_p(6) == 0.03125
    assert smallest_p(5) > 0.05 > smallest_p(6)


def test_bootstrap_is_reproducible_with_its_seed_and_keeps_the_pairing():
    draws = bootstrap(50, list, replicates=20)
    assert draws == bootstrap(50, list, replicates=20)
    assert draws != bootstrap(50, list, replicates=20, seed=22)
    assert all(len(d) == 50 and all(0 <= i < 50 for i in d) for d in draws)
    assert len({tuple(d) for d in draws}) == 20  # each replicate is its own draw


def test_percentile_interval_of_known_replicates():
    values = [float(v) for v in range(101)]
    assert percentile_interval(values, 0.95) == pytest.approx((2.5, 97.5))
    assert percentile_interval(values, 0.5) == pytest.approx((25.0, 75.0))
    # Replicates where the change is undefined are left out.
    assert percentile_interval([None, 1.0, None, 3.0], 0.5) == pytest.approx((1.5, 2.5))
    assert percentile_interval([None], 0.95) is None
    with pytest.raises(ValueError, match="confidence must be in"):
        percentile_interval(values, 1.0)


def test_bootstrap_interval_of_a_planted_drop_excludes_zero():
    lost = set(range(40))

    def delta(draw):
        return -sum(1 for i in draw if i in lost) / len(draw)

    low, high = percentile_interval(bootstrap(369, delta, replicates=500))
    assert low < -40 / 369 < high < 0


def test_the_wording_every_comparison_prints():
    assert significance_text(0.0312, 0.05) == "significant (p=0.0312)"
    assert significance_text(1.0, 0.05) == "not significant (p=1.0000)"
    assert significance_text(0.05, 0.05) == "not significant (p=0.0500)"  # p < alpha, strictly
    assert format_p(0.00001234) == "1.2e-05"
