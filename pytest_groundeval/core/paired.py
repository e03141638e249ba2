"""Two runs paired on item ids (docs/statistics.md, "Paired comparison").

``pair_runs`` matches the items of run A and run B by id: items in only one run are
listed, not paired; for the paired ones it finds the pass/fail flips and their exact
McNemar p-value. ``compare_metrics`` then compares every rate or figure metric both runs
measured over the paired items: the change B − A, its paired bootstrap interval, and
the p-value of the paired sign-flip test (``core.significance``).

A metric is recomputed on a resample from the items' own counters, with the formulas
of ``core.metrics`` and the kinds: each item's outcome is folded into a
``MetricsAccumulator`` of its own, whose counters are then summed over the resample, so
a ratio metric is the ratio of the resampled sums (a kind's ``results`` of the summed
tally), and a percentile the percentile of the resampled latencies. The counters fall
into groups, one per set of metrics that depend on the same counters (recall on the
evidence counts of the qa tally, the claim metrics on its claim counts, tokens per query
on two of the accumulator's counters, the latency percentiles on the latencies); only the
items whose figures of a group differ between the runs are swapped by that group's
sign-flip test, so a test over few differing items is exact. A kind whose tally holds
something other than counts (whole numbers, ``Fraction``s, ``Counter``s) has no paired
form: its metrics are reported untested.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, fields
from fractions import Fraction
from itertools import accumulate, repeat
from operator import mul
from typing import Any

from .kinds import all_kinds, get
from .kinds.base import ratio
from .metrics import METRIC_DIRECTIONS, MetricsAccumulator, compute_metrics, metric_specs, percentile
from .outcome import ItemOutcome
from .significance import (
    DEFAULT_CONFIDENCE,
    REPLICATES,
    SEED,
    bootstrap,
    mcnemar_p,
    percentile_interval,
    sign_flip_ps,
    smallest_p,
)


class PairingError(ValueError):
    """Two runs that cannot be paired: an item id appears twice in one run (the message names it)."""


@dataclass(frozen=True)
class Pairing:
    """Which items two runs share, and how their pass/fail changed."""

    ids: tuple[str, ...]
    """Ids of the items both runs hold, sorted."""
    only_in_a: tuple[str, ...]
    """Ids only run A holds, sorted: listed, not paired."""
    only_in_b: tuple[str, ...]
    """Ids only run B holds, sorted."""
    pass_to_fail: tuple[str, ...]
    """Paired ids that passed in A and did not in B (an error is a fail)."""
    fail_to_pass: tuple[str, ...]
    """Paired ids that did not pass in A and passed in B."""

    @property
    def mcnemar_p(self) -> float:
        """The exact McNemar p-value of the flips (``core.significance.mcnemar_p``)."""
        return mcnemar_p(len(self.pass_to_fail), len(self.fail_to_pass))


@dataclass(frozen=True)
class MetricTest:
    """One metric of two runs compared over their paired items."""

    metric: str
    """The metric's wire name."""
    a: float | None
    """Run A's value over the paired items."""
    b: float | None
    """Run B's value over the paired items."""
    items: int
    """Paired items with a figure this metric's counters hold (in either run)."""
    discordant: int = 0
    """Of them, items whose figures differ between the runs: the only ones the sign-flip test swaps."""
    low: float | None = None
    """Lower end of the paired bootstrap interval of B − A; None when not tested."""
    high: float | None = None
    """Upper end of that interval."""
    p_value: float | None = None
    """Two-sided p-value of the paired sign-flip test; None when not tested (``note`` says why)."""
    exact: bool = False
    """Whether ``p_value`` is exact (every swap enumerated) rather than a Monte Carlo estimate."""
    note: str | None = None
    """Why the metric was not tested, when it was not."""

    @property
    def delta(self) -> float | None:
        """B − A over the paired items, or None when either run did not measure it."""
        return None if self.a is None or self.b is None else self.b - self.a

    @property
    def tested(self) -> bool:
        """Whether a p-value was computed."""
        return self.p_value is not None

    def powerless(self, alpha: float) -> bool:
        """Whether no change of this metric's items could be significant at ``alpha`` (too few items)."""
        return smallest_p(self.items) >= alpha


def _index(outcomes: Iterable[ItemOutcome], run: str) -> dict[str, ItemOutcome]:
    found: dict[str, ItemOutcome] = {}
    for outcome in outcomes:
        if outcome.id in found:
            raise PairingError(f"{run} holds item {outcome.id!r} twice: items are paired by id")
        found[outcome.id] = outcome
    return found


def pair_runs(
    a: Iterable[ItemOutcome], b: Iterable[ItemOutcome], names: tuple[str, str] = ("run A", "run B")
) -> tuple[Pairing, list[ItemOutcome], list[ItemOutcome]]:
    """Pair two runs' outcomes on item ids.

    Args:
        a: Run A's outcomes.
        b: Run B's outcomes.
        names: How the runs are named in an error (their files, say).

    Returns:
        The ``Pairing`` and the paired outcomes of A and of B, in ``Pairing.ids`` order.

    Raises:
        PairingError: An id appears twice in one run.
    """
    by_a, by_b = _index(a, names[0]), _index(b, names[1])
    ids = tuple(sorted(by_a.keys() & by_b.keys()))
    pairing = Pairing(
        ids=ids,
        only_in_a=tuple(sorted(by_a.keys() - by_b.keys())),
        only_in_b=tuple(sorted(by_b.keys() - by_a.keys())),
        pass_to_fail=tuple(i for i in ids if by_a[i].passed and not by_b[i].passed),
        fail_to_pass=tuple(i for i in ids if not by_a[i].passed and by_b[i].passed),
    )
    return pairing, [by_a[i] for i in ids], [by_b[i] for i in ids]


# --- the counters of each item, in groups ---------------------------------------------------------

Number = int | Fraction
Column = tuple[Any, ...]
"""A counter's place: ``(field,)``, or ``(field, key)`` for an entry of a ``Counter`` field."""

COMMON_RATIOS: Mapping[str, tuple[str, str]] = {
    "evidence_risk_score": ("review_score_sum", "reviews"),
    "tokens_per_query": ("token_sum", "token_calls"),
}
"""Common metrics that are a ratio of two ``MetricsAccumulator`` counters, as ``MetricsAccumulator.result``
computes them: metric field -> (numerator field, denominator field)."""

LATENCY_PERCENTILES: Mapping[str, float] = {"latency_ms_p50": 50.0, "latency_ms_p95": 95.0}
"""Common metrics that are a percentile of the items' latencies (``core.metrics.percentile``)."""


def _flatten(obj: Any) -> dict[Column, Number]:
    """A tally as ``{column: number}``: its whole numbers, ``Fraction``s, and each ``Counter``'s entries."""
    flat: dict[Column, Number] = {}
    for f in fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, Counter):
            for key, count in value.items():
                flat[(f.name, key)] = count
        elif isinstance(value, (int, Fraction)) and not isinstance(value, bool):
            flat[(f.name,)] = value
        else:
            raise TypeError(f"{type(obj).__name__}.{f.name} is not a counter ({type(value).__name__})")
    return flat


@dataclass(frozen=True)
class _Item:
    """One outcome's counters: each group's, and its latency."""

    counters: dict[str, dict[Column, Number]]
    latency: float | None

    @classmethod
    def of(cls, outcome: ItemOutcome, kinds: AbstractSet[str]) -> _Item:
        """The counters of ``outcome`` for the tallies of ``kinds`` and the common ratios."""
        acc = MetricsAccumulator()
        acc.add(outcome)
        counters = {name: _flatten(tally) for name, tally in acc.tallies.items() if name in kinds}
        for metric, (num, den) in COMMON_RATIOS.items():
            counters[metric] = {(num,): getattr(acc, num), (den,): getattr(acc, den)}
        return cls(counters, acc.latencies_ms[0] if acc.latencies_ms else None)


class _Group:
    """The figures of the metrics that depend on the same counters, over the paired items of both runs.

    Subclasses say how the metrics are computed from the group's sums; the sign-flip test
    swaps only the ``discordant`` items, the bootstrap resamples every paired item.
    """

    specs: list[tuple[str, str]]
    """``(field, wire name)`` of the metrics computed from this group."""
    items: int
    """Paired items with a figure of this group (a counter not 0, or a latency), in either run."""
    discordant: list[int]
    """Positions of the paired items whose figures of this group differ between the runs."""

    def observed(self) -> tuple[dict[str, float | None], dict[str, float | None]]:
        """Each run's values over every paired item."""
        raise NotImplementedError

    def swapped(self, mask: Sequence[int]) -> dict[str, float | None]:
        """B − A with the discordant items marked 1 in ``mask`` swapped between the runs."""
        raise NotImplementedError

    def resampled(self, draw: Sequence[int], weights: Sequence[int]) -> dict[str, float | None]:
        """B − A on a resample: ``draw`` the drawn positions, ``weights`` how often each position was drawn."""
        raise NotImplementedError


def _delta(a: Mapping[str, float | None], b: Mapping[str, float | None]) -> dict[str, float | None]:
    return {k: None if a[k] is None or b[k] is None else b[k] - a[k] for k in a}  # type: ignore[operator]


class _Counters(_Group):
    """Metrics of summed counters: a kind's tally, or a common ratio.

    Items with the same figures in both runs form one type, so a resample's sums are
    a few products per column whatever the number of items.
    """

    def __init__(
        self,
        name: str,
        specs: list[tuple[str, str]],
        a: Sequence[_Item],
        b: Sequence[_Item],
        columns: list[Column] | None = None,
    ) -> None:
        self.name, self.specs = name, specs
        if columns is None:
            seen: dict[Column, None] = {}
            for item in (*a, *b):
                seen.update(dict.fromkeys(k for k, v in item.counters.get(name, {}).items() if v))
            columns = list(seen)
        self.columns = columns
        types: dict[tuple[tuple[Number, ...], tuple[Number, ...]], list[int]] = {}
        moving: dict[tuple[tuple[Number, ...], tuple[Number, ...]], list[int]] = {}
        self.discordant = []
        for i, (x, y) in enumerate(zip(a, b)):
            ca, cb = x.counters.get(name, {}), y.counters.get(name, {})
            va = tuple(ca.get(c, 0) for c in self.columns)
            vb = tuple(cb.get(c, 0) for c in self.columns)
            if any(va) or any(vb):
                types.setdefault((va, vb), []).append(i)
            if va != vb:
                moving.setdefault((va, vb), []).append(len(self.discordant))
                self.discordant.append(i)
        self.items = sum(map(len, types.values()))
        self.members = list(types.values())
        """Per type of item, the paired positions of its items."""
        self.singles = [m[0] for m in self.members] if all(len(m) == 1 for m in self.members) else None
        """Each type's one position, when every type has one item (figures that differ item by item)."""
        width = range(len(self.columns))
        self.by_type_a = [[va[c] for va, _ in types] for c in width]
        """Per column, its value in run A for each type of item."""
        self.by_type_b = [[vb[c] for _, vb in types] for c in width]
        self.moves = [(tuple(q - p for p, q in zip(va, vb)), idx) for (va, vb), idx in moving.items()]
        sizes = list(map(len, types.values()))
        self.total_a = [sum(map(mul, sizes, col)) for col in self.by_type_a]
        self.total_b = [sum(map(mul, sizes, col)) for col in self.by_type_b]

    def measure(self, sums: Sequence[Number]) -> dict[str, float | None]:
        """The group's metrics from its columns' sums."""
        if self.name in COMMON_RATIOS:
            num, den = (sums[self.columns.index((f,))] if (f,) in self.columns else 0 for f in COMMON_RATIOS[self.name])
            return {wire: ratio(num, den) for _, wire in self.specs}  # type: ignore[arg-type]
        kind = get(self.name)
        tally = kind.new_tally()
        counters: dict[str, Counter[Any]] = {}
        total: Any
        for column, total in zip(self.columns, sums):
            if len(column) == 2:
                counter = counters.setdefault(column[0], Counter())
                if total:
                    counter[column[1]] = total
            else:
                setattr(tally, column[0], total)
        for field_name, counter in counters.items():
            setattr(tally, field_name, counter)
        results = kind.results(tally)
        return {wire: results.get(field) for field, wire in self.specs}

    def observed(self) -> tuple[dict[str, float | None], dict[str, float | None]]:
        return self.measure(self.total_a), self.measure(self.total_b)

    def swapped(self, mask: Sequence[int]) -> dict[str, float | None]:
        shift: list[Number] = [0] * len(self.columns)
        for move, idx in self.moves:
            count = sum(map(mask.__getitem__, idx))
            if count:
                shift = [s + count * m for s, m in zip(shift, move)]
        sums_a = [t + s for t, s in zip(self.total_a, shift)]
        sums_b = [t - s for t, s in zip(self.total_b, shift)]
        return _delta(self.measure(sums_a), self.measure(sums_b))

    def resampled(self, draw: Sequence[int], weights: Sequence[int]) -> dict[str, float | None]:
        if self.singles is not None:
            drawn = list(map(weights.__getitem__, self.singles))
        else:
            drawn = [sum(map(weights.__getitem__, members)) for members in self.members]
        sums_a = [sum(map(mul, drawn, col)) for col in self.by_type_a]
        sums_b = [sum(map(mul, drawn, col)) for col in self.by_type_b]
        return _delta(self.measure(sums_a), self.measure(sums_b))


def _weighted_percentile(ordered: Sequence[float], weights: Iterable[int], q: float) -> float | None:
    """``core.metrics.percentile`` of the multiset holding ``ordered[k]`` ``weights[k]`` times, not expanded."""
    cumulative = list(accumulate(weights))
    total = cumulative[-1] if cumulative else 0
    if not total:
        return None
    rank = (total - 1) * q / 100.0
    lower = math.floor(rank)
    low = ordered[bisect_right(cumulative, lower)]
    high = ordered[bisect_right(cumulative, min(lower + 1, total - 1))]
    return low + (rank - lower) * (high - low)


def _no_none(value: float | None) -> float:
    return math.inf if value is None else value


class _Latency(_Group):
    """Latency percentiles: each item has at most one latency (its generate call)."""

    def __init__(self, specs: list[tuple[str, str]], a: Sequence[_Item], b: Sequence[_Item]) -> None:
        self.specs = specs
        self.a = [x.latency for x in a]
        self.b = [y.latency for y in b]
        self.items = sum(1 for x, y in zip(self.a, self.b) if x is not None or y is not None)
        self.discordant = [i for i, (x, y) in enumerate(zip(self.a, self.b)) if x != y]
        held = set(self.discordant)
        self.fixed_a = [x for i, x in enumerate(self.a) if x is not None and i not in held]
        self.fixed_b = [y for i, y in enumerate(self.b) if y is not None and i not in held]
        self.moved_a = [self.a[i] for i in self.discordant]
        self.moved_b = [self.b[i] for i in self.discordant]
        self.order_a = [i for x, i in sorted((x, i) for i, x in enumerate(self.a) if x is not None)]
        self.order_b = [i for y, i in sorted((y, i) for i, y in enumerate(self.b) if y is not None)]
        """Positions of the items with a latency, fastest first."""
        self.sorted_a = [x for x in sorted(self.a, key=_no_none) if x is not None]
        self.sorted_b = [y for y in sorted(self.b, key=_no_none) if y is not None]

    def measure(self, latencies: Sequence[float]) -> dict[str, float | None]:
        """The percentiles of ``latencies`` (sorted here)."""
        ordered = sorted(latencies)
        return {wire: percentile(ordered, LATENCY_PERCENTILES[field]) for field, wire in self.specs}

    def observed(self) -> tuple[dict[str, float | None], dict[str, float | None]]:
        return self.measure(self.sorted_a), self.measure(self.sorted_b)

    def swapped(self, mask: Sequence[int]) -> dict[str, float | None]:
        pairs = list(zip(self.moved_a, self.moved_b, mask))
        lat_a = self.fixed_a + [y if bit else x for x, y, bit in pairs if (y if bit else x) is not None]
        lat_b = self.fixed_b + [x if bit else y for x, y, bit in pairs if (x if bit else y) is not None]
        return _delta(self.measure(lat_a), self.measure(lat_b))  # type: ignore[arg-type]

    def resampled(self, draw: Sequence[int], weights: Sequence[int]) -> dict[str, float | None]:
        w_a = list(map(weights.__getitem__, self.order_a))
        w_b = list(map(weights.__getitem__, self.order_b))
        value_a = {wire: _weighted_percentile(self.sorted_a, w_a, LATENCY_PERCENTILES[f]) for f, wire in self.specs}
        value_b = {wire: _weighted_percentile(self.sorted_b, w_b, LATENCY_PERCENTILES[f]) for f, wire in self.specs}
        return _delta(value_a, value_b)


def _groups(a: Sequence[ItemOutcome], b: Sequence[ItemOutcome]) -> tuple[list[_Group], list[str]]:
    """The groups of the paired outcomes' metrics, and the rate metrics no group computes (not tested)."""
    countable = set()
    for kind in all_kinds():
        try:
            _flatten(kind.new_tally())
            countable.add(kind.name)
        except TypeError:
            pass  # not a tally of counts: its metrics have no paired form
    items_a, items_b = [_Item.of(o, countable) for o in a], [_Item.of(o, countable) for o in b]
    kind_of = {spec.field: kind.name for kind in all_kinds() for spec in kind.metrics if kind.name in countable}
    by_group: dict[str, list[tuple[str, str]]] = {}
    unknown = []
    for spec in metric_specs():
        if spec.type_ != "rate":
            continue  # counts and tables are reported, not compared
        if spec.field in kind_of:
            by_group.setdefault(kind_of[spec.field], []).append((spec.field, spec.wire))
        elif spec.field in COMMON_RATIOS:
            by_group[spec.field] = [(spec.field, spec.wire)]
        elif spec.field in LATENCY_PERCENTILES:
            by_group.setdefault("latency", []).append((spec.field, spec.wire))
        else:
            unknown.append(spec.wire)
    groups: list[_Group] = []
    for name, specs in by_group.items():
        if name == "latency":
            groups.append(_Latency(specs, items_a, items_b))
        else:
            groups.extend(_by_dependence(_Counters(name, specs, items_a, items_b), items_a, items_b))
    return [g for g in groups if g.items], unknown


def _by_dependence(group: _Counters, a: Sequence[_Item], b: Sequence[_Item]) -> list[_Group]:
    """``group`` split so that each part holds the metrics that depend on the same counters, and only those.

    A metric depends on a counter when adding 1 to it changes the metric at a point where
    every counter is large and distinct (so no denominator is 0 and no ratio is degenerate).
    Then the items that differ only in counters a metric ignores (qa claims, for recall) are
    neither counted as differing nor swapped by its sign-flip test, which stays exact when few
    items differ in what it measures. A kind whose metrics cannot be probed stays whole.
    """
    if len(group.specs) == 1 or not group.columns:
        return [group]
    base: list[Number] = [1000 + 7 * j for j in range(len(group.columns))]
    try:
        at_base = group.measure(base)
        moved = [group.measure([v + (j == k) for j, v in enumerate(base)]) for k in range(len(base))]
    except (ArithmeticError, TypeError, ValueError, KeyError):
        return [group]
    uses: dict[tuple[int, ...], list[tuple[str, str]]] = {}
    for spec in group.specs:
        wire = spec[1]
        needed = tuple(k for k, values in enumerate(moved) if values[wire] != at_base[wire])
        uses.setdefault(needed or tuple(range(len(base))), []).append(spec)
    if len(uses) == 1:
        return [group]
    return [_Counters(group.name, specs, a, b, [group.columns[k] for k in needed]) for needed, specs in uses.items()]


def _untested(wire: str, a: float | None, b: float | None, items: int) -> MetricTest:
    if a is None and b is None:
        note = "neither run measured it"
    else:
        note = f"run {'A' if a is None else 'B'} did not measure it over the paired items"
    return MetricTest(wire, a, b, items, note=note)


def compare_metrics(
    a: Sequence[ItemOutcome],
    b: Sequence[ItemOutcome],
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    replicates: int = REPLICATES,
    seed: int = SEED,
) -> dict[str, MetricTest]:
    """Every rate or figure metric of two runs' paired outcomes, compared (docs/statistics.md).

    For each metric: both runs' values over the paired items, the change B − A, its
    paired bootstrap percentile interval (``replicates`` resamples of the paired items,
    one set of draws for every metric) and the p-value of the paired sign-flip test
    (exact when at most ``log2(replicates)`` items differ in the metric's figures).

    Args:
        a: Run A's paired outcomes (``pair_runs``), in the same order as ``b``.
        b: Run B's paired outcomes.
        confidence: Level of the paired bootstrap interval of each change.
        replicates: Bootstrap replicates and Monte Carlo sign-flip draws.
        seed: Seed of every draw (``core.significance.SEED``): the same runs give the same output.

    Returns:
        Metric wire name -> ``MetricTest``, in ``METRIC_DIRECTIONS`` order (then the
        rates nothing bounds); a metric neither run measured is left out, one only one
        run measured has no p-value (``MetricTest.note``).

    Raises:
        ValueError: ``a`` and ``b`` differ in length or in ids at some position.
    """
    if len(a) != len(b) or any(x.id != y.id for x, y in zip(a, b)):
        raise ValueError("compare_metrics takes paired outcomes: the same ids in the same order (pair_runs)")
    if not a:
        return {}
    groups, unknown = _groups(a, b)
    found: dict[str, MetricTest] = {}
    pending: list[tuple[_Group, dict[str, float | None], dict[str, float | None], dict[str, float]]] = []
    for group in groups:
        value_a, value_b = group.observed()
        observed = {k: d for k, d in _delta(value_a, value_b).items() if d is not None}
        for _, wire in group.specs:
            if wire not in observed and (value_a[wire] is not None or value_b[wire] is not None):
                found[wire] = _untested(wire, value_a[wire], value_b[wire], group.items)
        if observed:
            pending.append((group, value_a, value_b, observed))

    def statistic(draw: Sequence[int]) -> list[dict[str, float | None]]:
        counts = Counter(draw)
        weights = list(map(counts.get, range(len(a)), repeat(0)))
        return [group.resampled(draw, weights) for group, *_ in pending]

    replicated = bootstrap(len(a), statistic, replicates=replicates, seed=seed) if pending else []
    for g, (group, value_a, value_b, observed) in enumerate(pending):
        p_values, exact = sign_flip_ps(observed, len(group.discordant), group.swapped, replicates=replicates, seed=seed)
        for wire in observed:
            interval = percentile_interval([r[g][wire] for r in replicated], confidence)
            low, high = interval if interval is not None else (None, None)
            found[wire] = MetricTest(
                wire,
                value_a[wire],
                value_b[wire],
                group.items,
                discordant=len(group.discordant),
                low=low,
                high=high,
                p_value=p_values[wire],
                exact=exact,
            )
    if unknown:
        whole_a, whole_b = compute_metrics(a).to_wire(), compute_metrics(b).to_wire()
        for wire in unknown:
            note = "no paired form is known for this metric"
            found[wire] = MetricTest(wire, whole_a.get(wire), whole_b.get(wire), 0, note=note)
    order = dict.fromkeys([*METRIC_DIRECTIONS, *found])
    return {name: found[name] for name in order if name in found and _measured(found[name])}


def _measured(test: MetricTest) -> bool:
    return test.a is not None or test.b is not None
