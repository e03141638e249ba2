"""Paired significance for comparing two runs item by item (docs/statistics.md, "Paired comparison").

Three tools, each small and exact where it can be, with no dependency beyond the
standard library:

- ``mcnemar_p``: the exact McNemar test of pass/fail flips (McNemar 1947, in its
  exact binomial form: Fagerland, Lydersen & Laake 2013);
- ``sign_flip_ps``: the paired sign-flip (randomisation) test of a change in any
  statistic of the two runs (Fisher 1935), exact by enumeration when the items that
  differ are few, else Monte Carlo with the ``(k + 1) / (R + 1)`` p-value (Phipson &
  Smyth 2010);
- ``bootstrap`` and ``percentile_interval``: the paired bootstrap of the change
  and its percentile interval (Efron & Tibshirani 1993).

Everything random draws from ``random.Random(SEED)``: the same two runs always give
the same intervals and p-values. This module imports nothing of the package.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Hashable, Mapping, Sequence
from itertools import product, repeat, starmap
from typing import TypeVar

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")

SEED = 21
"""The seed of every draw (issue 21 asked for the paired comparison): a fixed, documented
seed makes a comparison reproducible, run after run and machine after machine."""

REPLICATES = 2000
"""Bootstrap replicates (and Monte Carlo sign-flip draws) by default. Efron & Tibshirani
(1993) advise about 1000 or more for a percentile interval; 2000 keeps the Monte
Carlo error of a p-value near 0.05 under 0.005."""

DEFAULT_ALPHA = 0.05
"""Significance level a drop must reach to count as a regression (``--alpha``, ``--eval-alpha``)."""

DEFAULT_CONFIDENCE = 0.95
"""Confidence level of the paired bootstrap interval of a change."""

EXACT_LIMIT = 5000
"""Discordant pairs up to which ``mcnemar_p`` sums exact integers; above it, log space."""

_ONE = {"0": 0, "1": 1}.__getitem__

_TIE = 1e-9
"""Relative tolerance for "at least as extreme": float rounding must not split equal changes."""


def _lower_tail_exact(n: int, k: int) -> float:
    """``P(X <= k)`` for ``X ~ Binomial(n, 1/2)``, summed in exact integers then divided once."""
    term = total = 1
    for i in range(1, k + 1):
        term = term * (n - i + 1) // i
        total += term
    return total / (1 << n)  # int / int is correctly rounded, even for huge operands


def _lower_tail_log(n: int, k: int) -> float:
    """``P(X <= k)`` for ``X ~ Binomial(n, 1/2)``, ``k <= n / 2``, summed in log space.

    Terms are added from the largest (``i = k``) down, each a ratio ``i / (n - i + 1)`` of the
    one before, and the sum stops once a term cannot change it; the largest term is
    ``exp(lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1) - n log 2)``.
    """
    log_top = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) - n * math.log(2)
    relative, total = 1.0, 1.0
    for i in range(k, 0, -1):
        relative *= i / (n - i + 1)
        total += relative
        if relative < 1e-17 * total:
            break
    return math.exp(log_top + math.log(total))


def mcnemar_p(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value of ``b`` pass→fail and ``c`` fail→pass flips.

    Under the null hypothesis that a flip is as likely either way, the number of
    pass→fail flips among the ``n = b + c`` discordant pairs is ``Binomial(n, 1/2)``
    (McNemar 1947, Psychometrika 12:153-157; the exact conditional form: Fagerland,
    Lydersen & Laake 2013, BMC Med Res Methodol 13:91). The two-sided p-value is
    ``min(1, 2 * P(X <= min(b, c)))``. Pairs that agree carry no information and are
    not used.

    Exact integers are summed up to ``EXACT_LIMIT`` discordant pairs, log space above
    it (relative error near 1e-10), so a million flips take milliseconds.

    Examples: ``mcnemar_p(1, 0) == 1.0``; ``mcnemar_p(10, 0) == 2 / 1024``;
    ``mcnemar_p(7, 2) == 0.1796875``.

    Raises:
        ValueError: ``b`` or ``c`` is negative.
    """
    if b < 0 or c < 0:
        raise ValueError(f"flip counts must be >= 0, got b={b}, c={c}")
    n, k = b + c, min(b, c)
    if 2 * k >= n:  # b == c (or no flips): the observed split is the most likely one
        return 1.0
    tail = _lower_tail_exact(n, k) if n <= EXACT_LIMIT else _lower_tail_log(n, k)
    return min(1.0, 2.0 * tail)


def smallest_p(pairs: int) -> float:
    """The smallest two-sided p-value a sign-flip test over ``pairs`` items can give: ``2 / 2**pairs``.

    When it is above the significance level, no change of those items can be significant
    (five items at 0.05), and the comparison keeps its fixed margin (docs/statistics.md).
    """
    return 1.0 if pairs <= 1 else 2.0 / 2.0**pairs


def _at_least(value: float | None, observed: float) -> bool:
    return value is not None and abs(value) >= abs(observed) - _TIE * max(1.0, abs(observed))


def sign_flip_ps(
    observed: Mapping[K, float],
    discordant: int,
    delta_of: Callable[[Sequence[int]], Mapping[K, float | None]],
    *,
    replicates: int = REPLICATES,
    seed: int = SEED,
) -> tuple[dict[K, float], bool]:
    """Two-sided p-values of the paired sign-flip test of changes between two runs, one per statistic.

    Under the null hypothesis that, item by item, run A's and run B's figures are
    exchangeable, swapping them within any set of items gives a change as likely as the
    one observed; the p-value is the share of swaps whose change is at least as large in
    absolute value (Fisher 1935, The Design of Experiments, ch. III; Good 2005, Permutation,
    Parametric and Bootstrap Tests of Hypotheses). Only items whose figures
    differ (``discordant``) can change anything, so only they are swapped. With at most
    ``log2(replicates)`` of them every swap is enumerated and the p-value is exact; else
    ``replicates`` random swaps are drawn and ``p = (k + 1) / (replicates + 1)``, which is
    never below the exact p-value's level (Phipson & Smyth 2010, Stat Appl Genet Mol Biol
    9(1):39). On 0/1 figures the enumeration is the exact McNemar test.

    Why this test and not the bootstrap's own p-value (the share of replicates on the
    other side of 0): the bootstrap approximates the spread of the change and is too
    small with few differing items (five items that all lose evidence give a bootstrap
    p near 0.013, the exact test 0.0625), which is where a false alarm costs a build.

    Args:
        observed: Each statistic's change B − A as measured.
        discordant: How many items have figures that differ between the runs.
        delta_of: Each statistic's change when the items marked 1 in a mask of
            ``discordant`` 0/1 values are swapped; None where it is not defined (a
            denominator of 0), which counts as less extreme.
        replicates: Random swaps drawn when enumeration would take more.
        seed: Seed of the draws.

    Returns:
        ``(p by statistic, exact)``; every p is 1.0 (exact) when no item differs.
    """
    if discordant == 0:
        return dict.fromkeys(observed, 1.0), True
    hits = dict.fromkeys(observed, 0)

    def count(deltas: Mapping[K, float | None]) -> None:
        for key, value in observed.items():
            hits[key] += _at_least(deltas.get(key), value)

    if 2**discordant <= replicates:
        masks = list(product((0, 1), repeat=discordant))
        for mask in masks:
            count(delta_of(mask))
        return {key: n / len(masks) for key, n in hits.items()}, True
    rng = random.Random(seed)
    for _ in range(replicates):
        # One random bit per discordant item: 1 swaps it.
        count(delta_of(list(map(_ONE, format(rng.getrandbits(discordant), f"0{discordant}b")))))
    return {key: (n + 1) / (replicates + 1) for key, n in hits.items()}, False


def sign_flip_p(
    observed: float,
    discordant: int,
    delta_of: Callable[[Sequence[int]], float | None],
    *,
    replicates: int = REPLICATES,
    seed: int = SEED,
) -> tuple[float, bool]:
    """``sign_flip_ps`` of one statistic: ``(p, exact)``."""
    ps, exact = sign_flip_ps(
        {0: observed}, discordant, lambda mask: {0: delta_of(mask)}, replicates=replicates, seed=seed
    )
    return ps[0], exact


def bootstrap(
    items: int,
    statistic: Callable[[Sequence[int]], T],
    *,
    replicates: int = REPLICATES,
    seed: int = SEED,
) -> list[T]:
    """The paired bootstrap distribution of a statistic of two runs (Efron & Tibshirani 1993, ch. 6 and 13).

    Each replicate draws ``items`` indices with replacement from the paired items (an
    item brings its figures from both runs, so the pairing is kept) and asks
    ``statistic`` for its value on that sample: the change B − A of a metric recomputed
    on the resample (for a ratio metric, the ratio of each run's resampled sums), or
    several such changes at once.

    Args:
        items: Paired items (at least 1).
        statistic: The statistic of a resample given as its drawn indices.
        replicates: Resamples drawn.
        seed: Seed of the draws.

    Returns:
        The statistic of each replicate, in draw order.
    """
    rng = random.Random(seed)
    return [statistic(_draw(rng, items)) for _ in range(replicates)]


def _draw(rng: random.Random, items: int) -> list[int]:
    """``items`` positions drawn uniformly with replacement: ``floor(items * U)`` for uniform ``U`` in [0, 1),
    as ``random.choices`` draws them, without a Python-level loop."""
    return list(map(int, map(float(items).__mul__, starmap(rng.random, repeat((), items)))))


def percentile_interval(
    deltas: Sequence[float | None], confidence: float = DEFAULT_CONFIDENCE
) -> tuple[float, float] | None:
    """The bootstrap percentile interval: the ``(1 ± confidence) / 2`` quantiles of the replicates.

    Efron & Tibshirani 1993, ch. 13; quantiles by linear interpolation between closest
    ranks (numpy's default, as ``core.metrics.percentile``). Replicates where the change
    is not defined (None: the resample held no item measuring it) are left out; None when
    none is left.

    Raises:
        ValueError: ``confidence`` is not in (0, 1).
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    ordered = sorted(d for d in deltas if d is not None)
    if not ordered:
        return None

    def quantile(q: float) -> float:
        rank = (len(ordered) - 1) * q
        low = math.floor(rank)
        high = min(low + 1, len(ordered) - 1)
        return ordered[low] + (rank - low) * (ordered[high] - ordered[low])

    tail = (1.0 - confidence) / 2.0
    return quantile(tail), quantile(1.0 - tail)


def paired_ratio_p(
    pairs: Sequence[tuple[int, int, int, int]], *, replicates: int = REPLICATES, seed: int = SEED
) -> tuple[float, bool]:
    """``sign_flip_p`` of the change of a ratio of sums, item by item.

    Args:
        pairs: Per paired item ``(numerator in A, denominator in A, numerator in B,
            denominator in B)``; the statistic of a run is ``sum(numerators) / sum(denominators)``
            (retrieval recall: evidence found / evidence expected).

    Returns:
        ``(p, exact)`` as ``sign_flip_p``; ``(1.0, True)`` when a run's denominator is 0.
    """
    num_a = sum(p[0] for p in pairs)
    den_a = sum(p[1] for p in pairs)
    num_b = sum(p[2] for p in pairs)
    den_b = sum(p[3] for p in pairs)
    if not den_a or not den_b:
        return 1.0, True
    observed = num_b / den_b - num_a / den_a
    differing = [p for p in pairs if (p[0], p[1]) != (p[2], p[3])]
    moves = [(p[2] - p[0], p[3] - p[1]) for p in differing]

    def delta_of(mask: Sequence[int]) -> float | None:
        d_num = sum(m[0] for m, swap in zip(moves, mask) if swap)
        d_den = sum(m[1] for m, swap in zip(moves, mask) if swap)
        a_den, b_den = den_a + d_den, den_b - d_den
        if not a_den or not b_den:
            return None
        return (num_b - d_num) / b_den - (num_a + d_num) / a_den

    return sign_flip_p(observed, len(moves), delta_of, replicates=replicates, seed=seed)


def format_p(p: float) -> str:
    """A p-value as printed: four decimals, or two significant digits below 0.0001."""
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"


def significance_text(p: float, alpha: float) -> str:
    """``significant (p=…)`` when ``p < alpha``, else ``not significant (p=…)``: the wording every comparison prints."""
    return f"{'significant' if p < alpha else 'not significant'} (p={format_p(p)})"
