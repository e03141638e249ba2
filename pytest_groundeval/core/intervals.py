"""Confidence intervals for a run's rates, in plain Python (docs/statistics.md, "Confidence intervals").

Two intervals, both at a confidence level in (0, 1):

- ``wilson``: the Wilson score interval of a proportion of independent trials
  (each item, or each paragraph, a pass or a fail);
- ``cluster_bootstrap``: a seeded percentile bootstrap of a ratio of sums
  (``sum numerators / sum denominators``) in which the resampled unit is a
  cluster (an item, whatever it counts inside), and ``table_bootstrap``, the same
  over a table of independent units (paragraphs by label) for any statistic of
  the table, such as Cohen's kappa.

Resampling ``n`` clusters with replacement gives each distinct cluster value a
count drawn from a multinomial distribution; clusters with equal
``(numerator, denominator)`` are interchangeable for a ratio of sums, so a run is
held as ``{(numerator, denominator): clusters}`` and each replicate draws one
multinomial over the distinct values (one binomial draw each), not ``n`` indices.
A run of 50,000 qa items has a few dozen distinct values: 2,000 replicates cost
milliseconds (docs/statistics.md gives the measured cost). When nearly every
cluster is distinct (continuous scores) the replicate draws ``n`` indices instead,
whichever is cheaper; both are the same resampling distribution.

Everything here is deterministic given its seed: the random stream is
``random.Random(seed)`` (Mersenne Twister, stable across Python versions) used only
through ``random()``, with our own binomial sampler, so the same input gives the
same interval byte for byte.
"""

from __future__ import annotations

import math
import operator
import random
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from fractions import Fraction
from itertools import repeat
from statistics import NormalDist
from typing import Literal, TypeVar

__all__ = [
    "BOOTSTRAP_REPLICATES",
    "DEFAULT_CONFIDENCE",
    "GATE_ON",
    "GateOn",
    "binomial",
    "check_level",
    "cluster_bootstrap",
    "multinomial",
    "resamples",
    "table_bootstrap",
    "wilson",
    "z_value",
]

DEFAULT_CONFIDENCE = 0.95
"""The confidence level of every interval unless ``--eval-confidence`` says otherwise."""

GateOn = Literal["point", "lower-bound"]

GATE_ON: tuple[GateOn, ...] = ("point", "lower-bound")
"""What a bound is compared with (``--eval-gate-on``): the metric's value, or the end of its
interval on the failing side (the low end for a floor, the high end for a ceiling)."""

BOOTSTRAP_REPLICATES = 2000
"""Bootstrap replicates per interval. Efron & Tibshirani (1993, ch. 19) advise at least 1000 for a
percentile interval's end points; 2000 keeps the Monte Carlo error of each end point near a tenth
of the interval's standard error, at a cost that stays in milliseconds per metric (docs/statistics.md)."""

_DIRECT_COST = 8
"""How many index draws of the direct resampling cost about as much as one binomial draw (measured,
benchmarks in docs/statistics.md): above ``_DIRECT_COST`` distinct clusters per ``n``, draw indices."""

Number = int | Fraction | float
Cell = TypeVar("Cell", bound=Hashable)


def check_level(level: float) -> float:
    """``level`` when it is a confidence level: a number strictly between 0 and 1.

    Raises:
        ValueError: it is not (the message says what is valid).
    """
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0.0 < level < 1.0:
        raise ValueError(f"{level!r} is not a confidence level: expected a number strictly between 0 and 1, e.g. 0.95")
    return float(level)


def z_value(level: float) -> float:
    """The standard normal quantile of a two-sided interval at ``level``: 1.959964 for 0.95.

    Raises:
        ValueError: ``level`` is not in (0, 1).
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"a confidence level must be in (0, 1), got {level!r}")
    return NormalDist().inv_cdf(0.5 + level / 2.0)


def wilson(successes: int, trials: int, level: float) -> tuple[float, float]:
    """The Wilson score interval of ``successes`` out of ``trials`` independent trials.

    Wilson, E. B. (1927). Probable inference, the law of succession, and statistical
    inference. Journal of the American Statistical Association 22(158): 209-212. With
    ``p = successes / trials``, ``n = trials`` and ``z`` the normal quantile of ``level``::

        centre = (p + z²/(2n)) / (1 + z²/n)
        half   = z / (1 + z²/n) * sqrt(p(1 - p)/n + z²/(4n²))

    Unlike the normal (Wald) interval it stays inside [0, 1] and is not empty at
    ``p`` 0 or 1: 10 of 10 at 0.95 gives [0.7225, 1].

    Args:
        successes: Trials that succeeded, ``0 <= successes <= trials``.
        trials: Independent trials, ``> 0``.
        level: Confidence level in (0, 1), e.g. 0.95.

    Returns:
        ``(low, high)``, ``0 <= low <= successes/trials <= high <= 1``.

    Raises:
        ValueError: no trials, successes out of range, or ``level`` outside (0, 1).
    """
    if trials <= 0 or not 0 <= successes <= trials:
        raise ValueError(f"Wilson needs 0 <= successes <= trials and trials > 0, got {successes}/{trials}")
    z = z_value(level)
    n = trials
    p = successes / n
    z2 = z * z
    scale = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / scale
    half = z / scale * math.sqrt(p * (1.0 - p) / n + z2 / (4 * n * n))
    low = 0.0 if successes == 0 else max(0.0, min(p, centre - half))
    high = 1.0 if successes == trials else min(1.0, max(p, centre + half))
    return low, high


# --- random variates ----------------------------------------------------------------------------


def _binomial_inversion(rng: random.Random, n: int, p: float) -> int:
    """Binomial(n, p) for ``n p < 10`` by sequential inversion of the distribution function
    (BINV: Kachitvichyanukul, V. & Schmeiser, B. W. (1988). Binomial random variate generation.
    Communications of the ACM 31(2): 216-222)."""
    q = 1.0 - p
    s = p / q
    a = (n + 1) * s
    first = q**n
    while True:
        u = rng.random()
        r = first
        x = 0
        while u > r:
            u -= r
            x += 1
            if x > n:
                break  # rounding left u above the whole distribution: draw again
            r *= a / x - s
        else:
            return x


def _binomial_rejection(rng: random.Random, n: int, p: float) -> int:
    """Binomial(n, p) for ``n p >= 10``, ``p <= 0.5``, by transformed rejection with squeeze
    (BTRS: Hörmann, W. (1993). The generation of binomial random variates. Journal of Statistical
    Computation and Simulation 46(1-2): 101-110)."""
    q = 1.0 - p
    spq = math.sqrt(n * p * q)
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = n * p + 0.5
    v_r = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * spq
    lpq = math.log(p / q)
    m = math.floor((n + 1) * p)
    h = math.lgamma(m + 1) + math.lgamma(n - m + 1)
    while True:
        u = rng.random() - 0.5
        v = rng.random()
        us = 0.5 - abs(u)
        k = math.floor((2.0 * a / us + b) * u + c)
        if k < 0 or k > n:
            continue
        if us >= 0.07 and v <= v_r:
            return k
        v = v * alpha / (a / (us * us) + b)
        if math.log(v) <= h - math.lgamma(k + 1) - math.lgamma(n - k + 1) + (k - m) * lpq:
            return k


def binomial(rng: random.Random, n: int, p: float) -> int:
    """One Binomial(``n``, ``p``) variate from ``rng``: inversion for small means, BTRS otherwise.

    Our own sampler (``random.binomialvariate`` is Python 3.12+ only), so a seed gives the
    same draws on every supported Python.

    Raises:
        ValueError: ``n < 0`` or ``p`` outside [0, 1].
    """
    if n < 0 or not 0.0 <= p <= 1.0:
        raise ValueError(f"binomial needs n >= 0 and p in [0, 1], got n={n}, p={p}")
    if n == 0 or p == 0.0:
        return 0
    if p == 1.0:
        return n
    if p > 0.5:
        return n - binomial(rng, n, 1.0 - p)
    if n * p < 10:
        return _binomial_inversion(rng, n, p)
    return _binomial_rejection(rng, n, p)


def multinomial(rng: random.Random, n: int, counts: Sequence[int]) -> list[int]:
    """How many of ``n`` draws with replacement fall on each category, category ``j`` having
    weight ``counts[j]``: one multinomial variate, by sequential conditional binomials.

    This is what resampling ``n`` units with replacement does to a population holding
    ``counts[j]`` units of each kind (the bootstrap's resample, Efron & Tibshirani 1993, ch. 6).

    Raises:
        ValueError: a weight is negative, or ``n > 0`` with no weight.
    """
    if any(c < 0 for c in counts):
        raise ValueError("multinomial weights must be >= 0")
    remaining_weight = sum(counts)
    if n > 0 and remaining_weight <= 0:
        raise ValueError("multinomial needs a positive weight to draw from")
    drawn: list[int] = []
    left = n
    for count in counts:
        if left == 0 or count == remaining_weight:
            x = left if count == remaining_weight else 0
        else:
            x = binomial(rng, left, count / remaining_weight)
        drawn.append(x)
        left -= x
        remaining_weight -= count
    return drawn


# --- bootstrap intervals ------------------------------------------------------------------------

_SMALL = 256
"""Up to this many units, a replicate's draws are random bytes (``_small_resamples``)."""


def _small_streams(rng: random.Random, counts: Sequence[int], replicates: int) -> Iterator[bytes]:
    """``replicates`` bootstrap resamples of ``n = sum(counts) <= 256`` units, each as ``n`` bytes:
    the category of every unit drawn.

    Each random byte below ``256 - 256 % n`` picks unit ``byte % n`` (uniform over the units;
    the other bytes are dropped), and ``bytes.translate`` turns units into their categories in C
    for every replicate at once: the same resampling as ``multinomial``, at a few µs a replicate.
    """
    n = sum(counts)
    categories = [j for j, count in enumerate(counts) for _ in range(count)]
    limit = 256 - 256 % n
    table = bytes(categories[b % n] if b < limit else 0 for b in range(256))
    dropped = bytes(range(limit, 256))
    need = n * replicates
    stream = bytearray()
    while len(stream) < need:
        size = (need - len(stream)) * 256 // limit + 64
        stream += rng.getrandbits(8 * size).to_bytes(size, "little").translate(table, dropped)
    for start in range(0, need, n):
        yield bytes(stream[start : start + n])


def resamples(rng: random.Random, counts: Sequence[int], replicates: int) -> Iterator[list[int]]:
    """``replicates`` bootstrap resamples of a population holding ``counts[j]`` units of category ``j``:
    how many of the ``n = sum(counts)`` draws with replacement fall on each category.

    Random bytes for ``n <= 256`` (``_small_streams``), else one ``multinomial`` per replicate;
    both draw exactly the bootstrap's resampling distribution (Efron & Tibshirani 1993, ch. 6).
    """
    n = sum(counts)
    if 0 < n <= _SMALL:
        kinds = range(len(counts))
        for drawn in _small_streams(rng, counts, replicates):
            yield [drawn.count(k) for k in kinds]
        return
    for _ in range(replicates):
        yield multinomial(rng, n, counts)


def _quantile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile (``q`` in [0, 1]) of non-empty ``ordered`` values by linear interpolation between
    closest ranks: ``core.metrics.percentile``'s rule (numpy's default), here so that this module imports
    nothing of the package (``plugin/options.py`` reads its constants without loading pydantic)."""
    rank = (len(ordered) - 1) * q
    lower = math.floor(rank)
    upper = min(lower + 1, len(ordered) - 1)
    return ordered[lower] + (rank - lower) * (ordered[upper] - ordered[lower])


def _percentile_interval(replicates: list[float], level: float) -> tuple[float, float]:
    """The percentile interval of sorted-in-place ``replicates`` (Efron & Tibshirani 1993, ch. 13.3)."""
    replicates.sort()
    tail = (1.0 - level) / 2.0
    return _quantile(replicates, tail), _quantile(replicates, 1.0 - tail)


def cluster_bootstrap(
    clusters: Mapping[tuple[Number, Number], int],
    level: float,
    seed: str,
    replicates: int = BOOTSTRAP_REPLICATES,
) -> tuple[float, float]:
    """The percentile-bootstrap interval of a ratio of sums, resampling whole clusters (items).

    The statistic is ``sum(numerator) / sum(denominator)`` over clusters; each replicate
    draws as many clusters as there are, with replacement, and recomputes it (Efron, B. &
    Tibshirani, R. J. (1993). An Introduction to the Bootstrap. Chapman & Hall, ch. 6 and
    13; resampling clusters rather than the units inside them: Davison, A. C. & Hinkley,
    D. V. (1997). Bootstrap Methods and their Application. Cambridge University Press,
    §3.8). The end points are the ``(1 - level)/2`` and ``(1 + level)/2`` percentiles of the
    replicates (linear interpolation between closest ranks, as ``core.metrics.percentile``).

    Args:
        clusters: ``(numerator, denominator)`` of one cluster -> how many clusters have it;
            every denominator > 0 (a cluster measuring nothing is no part of the metric).
        level: Confidence level in (0, 1).
        seed: Seeds ``random.Random``; the same clusters and seed give the same interval.
        replicates: Bootstrap replicates (``BOOTSTRAP_REPLICATES``).

    Returns:
        ``(low, high)``.

    Raises:
        ValueError: no clusters, a denominator <= 0, a count < 1, or ``level`` outside (0, 1).
    """
    z_value(level)  # checks the level
    keys = sorted(clusters)
    if not keys:
        raise ValueError("a bootstrap needs at least one cluster")
    if any(den <= 0 for _, den in keys) or any(clusters[key] < 1 for key in keys):
        raise ValueError("every cluster needs a denominator > 0 and a count >= 1")
    # Largest groups first: the later binomial draws then have few clusters left to share.
    keys.sort(key=lambda key: -clusters[key])
    counts = [clusters[key] for key in keys]
    n = sum(counts)
    rng = random.Random(seed)
    values: list[float] = []
    if len(keys) == 1:
        num, den = keys[0]
        values = [float(num) / float(den)] * replicates
    elif n <= _SMALL and n < 10 * len(keys):
        # Few units, many distinct: add the drawn clusters' values (numerator + denominator j) in C.
        points = [complex(float(num), float(den)) for num, den in keys]
        for drawn in _small_streams(rng, counts, replicates):
            total = sum(map(points.__getitem__, drawn))
            values.append(total.real / total.imag)
    elif n <= _SMALL or len(keys) * _DIRECT_COST <= n:
        nums = [float(num) for num, _ in keys]
        dens = [float(den) for _, den in keys]
        for drawn_counts in resamples(rng, counts, replicates):
            values.append(sum(map(operator.mul, drawn_counts, nums)) / sum(map(operator.mul, drawn_counts, dens)))
    else:
        # Nearly every cluster distinct: n index draws per replicate cost less than a binomial per
        # cluster. Each cluster as one complex number (numerator + denominator j), so that one
        # C-level sum adds both.
        flat = [complex(float(num), float(den)) for (num, den), c in zip(keys, counts) for _ in range(c)]
        draw, floor = rng.random, math.floor
        for _ in range(replicates):
            total = sum([flat[floor(draw() * n)] for _ in repeat(None, n)])
            values.append(total.real / total.imag)
    return _percentile_interval(values, level)


def table_bootstrap(
    table: Mapping[Cell, int],
    statistic: Callable[[Mapping[Cell, int]], float | None],
    level: float,
    seed: str,
    replicates: int = BOOTSTRAP_REPLICATES,
) -> tuple[float, float] | None:
    """The percentile-bootstrap interval of a statistic of a table of independent units.

    ``table`` counts units (paragraphs) by cell (e.g. ``(expected label, judge's label)``);
    each replicate resamples as many units with replacement (a multinomial over the cells)
    and applies ``statistic`` to the resampled table (Efron & Tibshirani 1993, ch. 6 and 13).

    Args:
        table: Cell -> units, the total > 0.
        statistic: The figure of a table; a replicate for which it is None is dropped.
        level: Confidence level in (0, 1).
        seed: Seeds ``random.Random``.
        replicates: Bootstrap replicates.

    Returns:
        ``(low, high)``, or None when every replicate's statistic was None.

    Raises:
        ValueError: an empty table, or ``level`` outside (0, 1).
    """
    z_value(level)
    cells = sorted(table, key=lambda cell: (-table[cell], repr(cell)))
    counts = [table[cell] for cell in cells]
    n = sum(counts)
    if n <= 0:
        raise ValueError("a bootstrap needs at least one unit")
    rng = random.Random(seed)
    values: list[float] = []
    for drawn in resamples(rng, counts, replicates):
        value = statistic({cell: x for cell, x in zip(cells, drawn) if x})
        if value is not None:
            values.append(value)
    return _percentile_interval(values, level) if values else None
