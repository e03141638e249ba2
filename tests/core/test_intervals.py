"""Tests for pytest_groundeval.core.intervals (docs/statistics.md): Wilson's interval against hand
computation, our binomial and multinomial samplers against their exact moments, and the seeded
cluster and table bootstraps (reproducible, holding the estimate, narrowing with more data)."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest

from pytest_groundeval.core import intervals
from pytest_groundeval.core.intervals import (
    binomial,
    cluster_bootstrap,
    multinomial,
    table_bootstrap,
    wilson,
    z_value,
)

# --- Wilson -----------------------------------------------------------------------------------


def test_z_value_is_the_two_sided_normal_quantile():
    assert z_value(0.95) == pytest.approx(1.959964, abs=1e-6)
    assert z_value(0.90) == pytest.approx(1.644854, abs=1e-6)
    for bad in (0.0, 1.0, -0.5, 1.5, math.nan):
        with pytest.raises(ValueError, match="confidence level must be in"):
            z_value(bad)


@pytest.mark.parametrize(
    ("successes", "trials", "level", "low", "high"),
    [
        # By hand from Wilson (1927): z = 1.959964, z² = 3.841459, n = 10, p = 0.8:
        # centre = (0.8 + 0.192073) / 1.384146 = 0.716740; half = 1.416009 * sqrt(0.016 + 0.009604) = 0.226577.
        (8, 10, 0.95, 0.4902, 0.9433),
        # p = 0: centre = 0.192073 / 1.384146 = 0.138767 = half, so [0, 0.277535].
        (0, 10, 0.95, 0.0, 0.2775),
        # p = 1: the mirror image, [1 - 0.277535, 1].
        (10, 10, 0.95, 0.7225, 1.0),
        # z = 1.644854, z² = 2.705543: centre = 0.935277 / 1.270554 = 0.736118,
        # half = 1.294594 * sqrt(0.016 + 0.006764) = 0.195325.
        (8, 10, 0.90, 0.5408, 0.9314),
        # n = 1, x = 1: centre = (1 + 1.920730) / 4.841459 = 0.603275, half = 0.404829 * 0.979982 = 0.396725.
        (1, 1, 0.95, 0.2065, 1.0),
    ],
)
def test_wilson_matches_hand_computed_values(successes, trials, level, low, high):
    got = wilson(successes, trials, level)
    assert got == (pytest.approx(low, abs=5e-5), pytest.approx(high, abs=5e-5))


def test_wilson_edges_are_exact_and_the_estimate_is_inside():
    assert wilson(0, 10, 0.95)[0] == 0.0
    assert wilson(10, 10, 0.95)[1] == 1.0
    for n in (1, 2, 7, 50, 1000):
        for x in range(0, n + 1, max(1, n // 7)):
            low, high = wilson(x, n, 0.95)
            assert 0.0 <= low <= x / n <= high <= 1.0


def test_wilson_narrows_with_more_trials_and_widens_with_the_level():
    widths = [wilson(8 * k, 10 * k, 0.95) for k in (1, 10, 100)]
    assert [h - lo for lo, h in widths] == sorted((h - lo for lo, h in widths), reverse=True)
    assert widths[-1][1] - widths[-1][0] < 0.05
    narrow, wide = wilson(8, 10, 0.80), wilson(8, 10, 0.99)
    assert wide[0] < narrow[0] and wide[1] > narrow[1]


@pytest.mark.parametrize(("x", "n"), [(0, 0), (-1, 5), (6, 5)])
def test_wilson_refuses_impossible_counts(x, n):
    with pytest.raises(ValueError, match="Wilson needs"):
        wilson(x, n, 0.95)


# --- random variates --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "p"),
    [(20, 0.3), (30, 0.01), (1000, 0.4), (1000, 0.93), (50_000, 0.5), (7, 0.9)],
    ids=["inversion", "inversion-rare", "rejection", "rejection-flipped", "rejection-large", "inversion-flipped"],
)
def test_binomial_draws_have_the_binomial_mean_and_variance(n, p):
    rng = random.Random(f"binomial {n} {p}")
    draws = [binomial(rng, n, p) for _ in range(20_000)]
    assert all(0 <= x <= n for x in draws)
    mean = sum(draws) / len(draws)
    variance = sum((x - mean) ** 2 for x in draws) / (len(draws) - 1)
    exact_variance = n * p * (1 - p)
    # The mean within 5 standard errors; the variance within 5% (its relative error here is ~1%).
    assert abs(mean - n * p) < 5 * math.sqrt(exact_variance / len(draws))
    assert variance == pytest.approx(exact_variance, rel=0.05)


def test_binomial_small_case_matches_the_exact_distribution():
    rng = random.Random(7)
    n, p, draws = 12, 0.35, 40_000
    seen = Counter(binomial(rng, n, p) for _ in range(draws))
    for k in range(n + 1):
        exact = math.comb(n, k) * p**k * (1 - p) ** (n - k)
        assert abs(seen[k] / draws - exact) < 5 * math.sqrt(exact * (1 - exact) / draws) + 1e-4, k


def test_binomial_edges_and_refusals():
    rng = random.Random(1)
    assert binomial(rng, 0, 0.5) == 0 and binomial(rng, 9, 0.0) == 0 and binomial(rng, 9, 1.0) == 9
    for n, p in ((-1, 0.5), (3, 1.5), (3, -0.1)):
        with pytest.raises(ValueError):
            binomial(rng, n, p)


def test_multinomial_shares_every_draw_and_follows_the_weights():
    rng = random.Random(3)
    totals = [0, 0, 0, 0]
    for _ in range(2000):
        drawn = multinomial(rng, 100, [50, 0, 30, 20])
        assert sum(drawn) == 100 and drawn[1] == 0
        totals = [t + d for t, d in zip(totals, drawn)]
    assert [t / 2000 for t in totals] == [pytest.approx(v, abs=1.0) for v in (50, 0, 30, 20)]
    assert multinomial(rng, 0, [1, 2]) == [0, 0]
    with pytest.raises(ValueError):
        multinomial(rng, 3, [0, 0])
    with pytest.raises(ValueError):
        multinomial(rng, 3, [1, -1])


# --- bootstrap --------------------------------------------------------------------------------


def _qa_like(items: int, seed: int = 5) -> Counter:
    """Clusters of a qa-like recall: 1-4 expected strings per item, each found with probability 0.9."""
    rng = random.Random(seed)
    clusters: Counter = Counter()
    for _ in range(items):
        expected = rng.randint(1, 4)
        clusters[(sum(rng.random() < 0.9 for _ in range(expected)), expected)] += 1
    return clusters


def _ratio(clusters: Counter) -> float:
    return sum(n * c for (n, _), c in clusters.items()) / sum(d * c for (_, d), c in clusters.items())


def test_the_cluster_bootstrap_is_reproducible_byte_for_byte():
    clusters = _qa_like(300)
    first = cluster_bootstrap(clusters, 0.95, "seed:retrievalRecall")
    shuffled = Counter(dict(reversed(list(clusters.items()))))
    assert repr(cluster_bootstrap(shuffled, 0.95, "seed:retrievalRecall")) == repr(first)
    assert cluster_bootstrap(clusters, 0.95, "seed:other") != first


def test_the_cluster_bootstrap_holds_the_estimate_and_narrows_with_more_items():
    widths = []
    for items in (40, 400, 4000):
        clusters = _qa_like(items)
        low, high = cluster_bootstrap(clusters, 0.95, "s")
        assert low < _ratio(clusters) < high
        widths.append(high - low)
    assert widths[0] > widths[1] > widths[2]
    # Standard errors shrink as 1/sqrt(n): ten times the items, about a third of the width.
    assert widths[1] / widths[0] == pytest.approx(math.sqrt(0.1), rel=0.35)


def test_the_cluster_bootstrap_of_single_trials_agrees_with_the_normal_interval():
    # 2000 items of one trial each, 600 passing: the bootstrap's percentile interval is, for this
    # size, the normal interval p ± z sqrt(p(1-p)/n) = 0.3 ± 0.0201 (Efron & Tibshirani 1993, ch. 13).
    low, high = cluster_bootstrap(Counter({(1, 1): 600, (0, 1): 1400}), 0.95, "s")
    half = 1.959964 * math.sqrt(0.3 * 0.7 / 2000)
    assert low == pytest.approx(0.3 - half, abs=0.003) and high == pytest.approx(0.3 + half, abs=0.003)


def test_both_resampling_paths_draw_the_same_distribution(monkeypatch):
    # A multinomial over distinct clusters, or n index draws: one resampling distribution, two costs.
    clusters = _qa_like(600)
    monkeypatch.setattr(intervals, "_DIRECT_COST", 0)
    by_multinomial = cluster_bootstrap(clusters, 0.95, "s", replicates=4000)
    monkeypatch.setattr(intervals, "_DIRECT_COST", 10**9)
    by_index = cluster_bootstrap(clusters, 0.95, "s", replicates=4000)
    assert by_index != by_multinomial  # different random streams...
    assert by_index == (pytest.approx(by_multinomial[0], abs=0.004), pytest.approx(by_multinomial[1], abs=0.004))


def test_the_cluster_bootstrap_of_one_value_is_that_value():
    assert cluster_bootstrap(Counter({(3, 4): 10}), 0.95, "s") == (0.75, 0.75)


@pytest.mark.parametrize(
    "clusters",
    [Counter(), Counter({(1, 0): 2}), Counter({(1, 2): 0})],
    ids=["empty", "zero-denominator", "zero-count"],
)
def test_the_cluster_bootstrap_refuses_what_is_no_cluster(clusters):
    with pytest.raises(ValueError):
        cluster_bootstrap(clusters, 0.95, "s")


def test_the_table_bootstrap_resamples_units():
    table = {("a", "a"): 40, ("a", "b"): 10, ("b", "b"): 30, ("b", "a"): 20}

    def share_agreeing(counts):
        total = sum(counts.values())
        return sum(n for (x, y), n in counts.items() if x == y) / total if total else None

    low, high = table_bootstrap(table, share_agreeing, 0.95, "s")
    assert low < 0.7 < high
    assert (low, high) == table_bootstrap(dict(reversed(list(table.items()))), share_agreeing, 0.95, "s")
    bigger = {cell: 10 * n for cell, n in table.items()}
    big_low, big_high = table_bootstrap(bigger, share_agreeing, 0.95, "s")
    assert big_high - big_low < (high - low) / 2
    assert table_bootstrap(table, lambda counts: None, 0.95, "s") is None
    with pytest.raises(ValueError):
        table_bootstrap({}, share_agreeing, 0.95, "s")


def test_the_percentile_rule_is_the_metrics_one():
    # intervals.py keeps its own copy of the rule so that it imports nothing of the package.
    from pytest_groundeval.core.metrics import percentile

    rng = random.Random(9)
    for size in (1, 2, 5, 40):
        values = sorted(rng.random() for _ in range(size))
        for q in (0.0, 0.025, 0.5, 0.975, 1.0):
            assert intervals._quantile(values, q) == percentile(values, q * 100)


def test_the_module_imports_nothing_of_the_package():
    # plugin/options.py reads DEFAULT_CONFIDENCE and GATE_ON from it without loading pydantic.
    import ast
    from pathlib import Path

    tree = ast.parse(Path(intervals.__file__).read_text(encoding="utf-8"))
    relative = [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level]
    assert relative == []
