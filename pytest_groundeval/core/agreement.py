"""Krippendorff's alpha for nominal values: how far several judges agree beyond chance (docs/judges.md, "Juries").

Sources: K. Krippendorff, "Computing Krippendorff's Alpha-Reliability" (Annenberg School for
Communication, University of Pennsylvania, 2011), sections "C. Nominal data, any number of
observers, missing data" and the coincidence matrix it builds; A. F. Hayes and K. Krippendorff,
"Answering the Call for a Standard Reliability Measure for Coding Data", Communication Methods
and Measures 1(1), 77-89 (2007).

The computation goes through the *coincidence matrix*: in a unit (here a paragraph) holding
``m_u >= 2`` values (here the verdicts of the judges that gave one), each ordered pair of values
from two different judges adds ``1 / (m_u - 1)`` to its cell ``o[c, k]``; a unit with fewer than
two values adds nothing (it is not *pairable*). With ``n_c = sum_k o[c, k]`` and ``n = sum_c n_c``
(the pairable values), the nominal alpha is::

    alpha = 1 - (n - 1) * sum_{c != k} o[c, k] / sum_{c != k} n_c * n_k

1 when every pairable unit's values agree, 0 when they agree as often as chance would have them,
below 0 when they disagree systematically. It is undefined when the values use one category only
(no disagreement is possible, the expected disagreement is 0) or when nothing is pairable.

The matrix is a sum over units, so the cells of several runs' (or xdist workers') paragraphs add
up; they are kept as exact fractions so the sums, and alpha, do not depend on the order.

Standard library only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import cast

__all__ = ["krippendorff_alpha", "nominal_alpha", "pattern_alpha", "unit_coincidences"]


def unit_coincidences(values: Sequence[str]) -> Counter[tuple[str, str]]:
    """The coincidence cells one unit adds: ``{(c, k): Fraction}``, empty when it holds fewer than two values.

    A unit holding ``m`` values, ``m_c`` of them ``c``, adds ``m_c * m_k / (m - 1)`` to ``(c, k)``
    for ``c != k`` and ``m_c * (m_c - 1) / (m - 1)`` to ``(c, c)`` (the pairs of values from two
    different observers, Krippendorff 2011). Zero cells are left out.

    Args:
        values: The values the unit's observers gave (one per observer that gave one), any order.
    """
    m = len(values)
    cells: dict[tuple[str, str], Fraction] = {}
    if m >= 2:
        counts = Counter(values)
        for c, m_c in counts.items():
            for k, m_k in counts.items():
                pairs = m_c * (m_c - 1) if c == k else m_c * m_k
                if pairs:
                    cells[(c, k)] = Fraction(pairs, m - 1)
    # A Counter, so the cells of several units add up with ``update`` and ``+``; its counts are fractions here
    # (typeshed types a Counter's counts as int).
    return cast("Counter[tuple[str, str]]", Counter(cells))


def krippendorff_alpha(coincidences: Mapping[tuple[str, str], Fraction | int]) -> float | None:
    """Krippendorff's nominal alpha of a coincidence matrix (module docstring).

    Args:
        coincidences: ``{(c, k): weight}`` summed over units (:func:`unit_coincidences`).

    Returns:
        Alpha in [-1, 1], computed exactly and then rounded to a float; None when it is undefined:
        nothing pairable, or every pairable value in one category.
    """
    totals: dict[str, Fraction] = {}
    for (c, _), weight in coincidences.items():
        totals[c] = totals.get(c, Fraction(0)) + weight
    n = sum(totals.values(), Fraction(0))
    observed = sum((weight for (c, k), weight in coincidences.items() if c != k), Fraction(0))
    expected = n * n - sum((n_c * n_c for n_c in totals.values()), Fraction(0))  # sum_{c != k} n_c n_k
    if n < 2 or expected == 0:
        return None
    return float(1 - (n - 1) * observed / expected)


def nominal_alpha(units: Iterable[Sequence[str]]) -> float | None:
    """Krippendorff's nominal alpha of reliability data given unit by unit.

    Args:
        units: Per unit, the values its observers gave (missing values left out).

    Returns:
        As :func:`krippendorff_alpha`.
    """
    total: Counter[tuple[str, str]] = Counter()
    for values in units:
        total.update(unit_coincidences(values))
    return krippendorff_alpha(total)


def pattern_alpha(
    patterns: Mapping[tuple[str, ...], int],
    cells: dict[tuple[str, ...], Counter[tuple[str, str]]] | None = None,
) -> float | None:
    """Krippendorff's nominal alpha of units counted by the values they hold.

    A unit's coincidences depend only on the multiset of its values, so a run's paragraphs
    can be held as ``{sorted values: units}``; this is alpha of the units that table
    counts, as :func:`nominal_alpha` of the units one by one would give. It is what the
    interval of ``judgeAlpha`` resamples: paragraphs, as a table of patterns
    (``core.intervals.table_bootstrap``; docs/statistics.md).

    Args:
        patterns: The sorted values of a unit -> how many units hold them (counts >= 0).
        cells: A cache of each pattern's :func:`unit_coincidences`, filled as patterns are met
            (a bootstrap asks about the same few patterns thousands of times).

    Returns:
        As :func:`krippendorff_alpha`.
    """
    known = {} if cells is None else cells
    total: Counter[tuple[str, str]] = Counter()
    for values, units in patterns.items():
        if units and len(values) >= 2:
            unit = known.get(values)
            if unit is None:
                unit = known[values] = unit_coincidences(values)
            for cell, weight in unit.items():
                total[cell] += weight * units
    return krippendorff_alpha(total)
