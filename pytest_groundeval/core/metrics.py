"""Session metrics aggregated from per-item outcomes (docs/gate.md: metrics).

Each item kind (``core.kinds``) declares the metrics it measures and folds its
outcomes into a tally of its own; this module adds the metrics every kind shares
(evidence risk, latency, tokens, errors, item counts) and builds ``Metrics``,
the report's ``metrics`` object, from the registry: kind metrics in registry
order, then the shared ones.

``MetricsAccumulator`` keeps counters (and one ``array('d')`` of latencies), so
memory stays flat per item; accumulators merge, so per-worker partial results
can be combined under pytest-xdist and give the same metrics as a plain run.
``compute_metrics`` is the one-shot form.

Denominators: an item that errored still counts where the dataset fixes the
denominator (its expected evidence is not found, its falsehood is not rejected,
its temporal check failed). A metric whose denominator is 0 is ``None`` (shown
as n/a) — never NaN, 0 or 1.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AfterValidator, Field, create_model, model_serializer

from .kinds import KIND_NAMES, all_kinds, generation, on_change
from .kinds.base import COMMON_METRICS, Kind, MetricDirection, MetricSpec, ratio
from .outcome import ItemOutcome
from .wire import WireModel


def metric_specs() -> tuple[MetricSpec, ...]:
    """Every metric: each kind's in registry order, then ``COMMON_METRICS``."""
    return tuple(spec for kind in all_kinds() for spec in kind.metrics) + COMMON_METRICS


def _table_counts(value: Any) -> Any:
    """A table metric: an object of whole counts >= 0, or of such objects (one level down)."""
    if value is None:
        return value
    for key, count in value.items():
        cells = count.items() if isinstance(count, Mapping) else [(None, count)]
        for column, n in cells:
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                where = key if column is None else f"{key}.{column}"
                raise ValueError(f"{where}: expected a whole count >= 0, got {n!r}")
    return value


def _table_figures(lowest: float) -> Callable[[Any], Any]:
    """A table of figures: an object of numbers in [``lowest``, 1] or None (a kappa per judge model)."""

    def check(value: Any) -> Any:
        if value is None:
            return value
        for key, figure in value.items():
            if figure is None:
                continue
            if (
                isinstance(figure, bool)
                or not isinstance(figure, (int, float))
                or not math.isfinite(figure)
                or not lowest <= figure <= 1
            ):
                raise ValueError(f"{key}: expected a number in [{lowest:g}, 1] or null, got {figure!r}")
        return value

    return check


MetricValue = float | int | dict[str, Any] | None
"""A metric's value as read from ``Metrics``: a rate or figure, a count, a table of counts, or None (n/a)."""


class MetricsBase(WireModel):
    """What every ``Metrics`` model is, as the type checker sees it.

    ``Metrics`` is built at import time from the registry of kinds
    (``_build_metrics_model``), so its fields cannot be spelt in the source. This
    base declares to the type checker the fields every run has (the common metrics
    and the item counts, with their run-time types); any other attribute is a
    kind's own metric, read as a ``MetricValue``. At run time the class adds no
    field, validator or setting: the built model is exactly what it would be
    over ``WireModel``, except that metrics declared ``only_when_measured``
    (``passAtK``, ``passHatK``) are left out of its dump while None.
    """

    @model_serializer(mode="wrap")
    def _omit_unmeasured(self, handler: Any) -> dict[str, Any]:
        dumped = handler(self)
        return {name: value for name, value in dumped.items() if value is not None or name not in _ONLY_WHEN_MEASURED}

    if TYPE_CHECKING:
        evidence_risk_score: float | None
        latency_ms_p50: float | None
        latency_ms_p95: float | None
        tokens_per_query: float | None
        errors: int
        items: int
        items_by_kind: dict[str, int]

        def __getattr__(self, name: str) -> MetricValue: ...


_COUNT = Field(strict=True, ge=0)
"""A count: a whole number >= 0 (``true`` and ``5.0`` are not counts)."""


def _build_metrics_model() -> type[MetricsBase]:
    fields: dict[str, Any] = {}
    for spec in metric_specs():
        if spec.type_ == "count" and spec.nullable:
            fields[spec.field] = (Annotated[int, _COUNT] | None, Field(None, description=spec.doc))
        elif spec.type_ == "count":
            fields[spec.field] = (Annotated[int, _COUNT], Field(0, description=spec.doc))
        elif spec.type_ == "table":
            cells = _table_figures(spec.minimum) if spec.cells == "figures" else _table_counts
            fields[spec.field] = (
                Annotated[dict[str, Any], AfterValidator(cells)] | None,
                Field(None, description=spec.doc),
            )
        else:
            lowest, highest = spec.value_range
            number = Field(strict=True, ge=lowest, le=highest, allow_inf_nan=False)
            fields[spec.field] = (Annotated[float, number] | None, Field(None, description=spec.doc))
    fields["items"] = (
        Annotated[int, _COUNT],
        Field(0, description="Items that ran or errored (every outcome aggregated)."),
    )
    fields["items_by_kind"] = (
        dict[str, Annotated[int, _COUNT]],
        Field(
            default_factory=lambda: dict.fromkeys(KIND_NAMES, 0),
            description="Outcomes per item kind; every kind is present, 0 when absent.",
        ),
    )
    model = create_model("Metrics", __base__=MetricsBase, **fields)
    model.__doc__ = (
        "Every metric of a run (docs/gate.md), one field per ``metric_specs()`` entry plus the item "
        "counts. A rate with nothing to measure is None. Validation refuses what no run can produce: "
        "a count that is not a whole number >= 0 (``true`` is not a number), a figure that is NaN or "
        "infinite, or a rate outside its ``MetricSpec.value_range`` (a share above 1)."
    )
    model.__module__ = __name__
    return model


if TYPE_CHECKING:
    Metrics = MetricsBase
else:
    Metrics = _build_metrics_model()
"""The metrics of a run: a pydantic model built from the kinds' and the common metric specs.

It follows the registry of kinds: when a kind is registered or removed its fields are rebuilt in
place (``refresh``), so every module that imported ``Metrics`` keeps the current class."""


class LiveNameSet(AbstractSet[str]):
    """A read-only view of a set of metric names that ``refresh`` rebuilds in place."""

    def __init__(self) -> None:
        self._names: set[str] = set()

    def _replace(self, names: Iterable[str]) -> None:
        self._names.clear()
        self._names.update(names)

    def __contains__(self, value: object) -> bool:
        return value in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    @classmethod
    def _from_iterable(cls, values: Iterable[Any]) -> frozenset[Any]:
        # ``|``, ``&`` and ``-`` give a plain frozenset, a snapshot.
        return frozenset(values)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({sorted(self._names)!r})"


_directions: dict[str, MetricDirection] = {}

METRIC_DIRECTIONS: Mapping[str, MetricDirection] = MappingProxyType(_directions)
"""Every gate-able metric (wire name) and whether its bound is a floor or a ceiling, in print order.

A live view: it follows the registry of kinds (``refresh``)."""

WHOLE_NUMBER_METRICS: AbstractSet[str] = LiveNameSet()
"""Gate-able counts (``errors``, ``judgeErrors``, …) and the gate's own counts, printed as whole numbers."""

GATED_COUNTS: AbstractSet[str] = LiveNameSet()
"""Gate-able metrics that count items (``errors``, ``judgeErrors``, …): their bound is a whole number."""

TABLE_METRICS: AbstractSet[str] = LiveNameSet()
"""Metrics whose value is a JSON object of counts (``verdictDistribution``, …): reported, never gated."""

_ONLY_WHEN_MEASURED: set[str] = set()
"""Field and wire names of the metrics left out of a dump while None (``MetricSpec.only_when_measured``)."""

_built = [-1]
"""The registry generation (``core.kinds.generation``) the derived tables were built for."""


def refresh() -> None:
    """Rebuild ``Metrics``, ``METRIC_DIRECTIONS`` and the metric name sets for the kinds registered now.

    Called when the registry of kinds changes (``core.kinds.on_change``); a no-op when they
    are current, so modules deriving tables from these (the gate, the report) call it first.
    ``Metrics`` keeps its identity: its fields are replaced and its validator rebuilt, in
    registry order, so a run with only the built-in kinds gets the same model as ever.
    """
    if _built[0] == generation():
        return
    specs = metric_specs()
    if _built[0] != -1:
        fresh = _build_metrics_model()
        Metrics.__pydantic_fields__ = dict(fresh.__pydantic_fields__)
        Metrics.model_rebuild(force=True)
    _directions.clear()
    _directions.update({spec.wire: spec.direction for spec in specs if spec.direction is not None})
    counts = {spec.wire for spec in specs if spec.type_ == "count" and spec.direction is not None}
    GATED_COUNTS._replace(counts)  # type: ignore[attr-defined]
    WHOLE_NUMBER_METRICS._replace({"items", "notRun", "qualityBounds"} | counts)  # type: ignore[attr-defined]
    TABLE_METRICS._replace(spec.wire for spec in specs if spec.type_ == "table")  # type: ignore[attr-defined]
    _ONLY_WHEN_MEASURED.clear()
    _ONLY_WHEN_MEASURED.update(name for spec in specs if spec.only_when_measured for name in (spec.field, spec.wire))
    _built[0] = generation()


refresh()
on_change(refresh)


def format_table(value: Mapping[str, Any]) -> str:
    """A table metric on one line: non-zero counts as ``label n``, a nested table as ``row→column n``.

    Example: ``{"supported": 3, "partial": 0, "unparseable": 1}`` → ``supported 3, unparseable 1``;
    ``{"supported": {"partial": 2}}`` → ``supported→partial 2``; nothing counted → ``none``. A table of
    figures shows every key: ``{"judge-a": 0.75, "judge-b": None}`` → ``judge-a 0.7500, judge-b n/a``.
    """
    parts: list[str] = []
    for key, count in value.items():
        if isinstance(count, Mapping):
            parts.extend(f"{key}→{column} {n}" for column, n in count.items() if n)
        elif isinstance(count, float) or count is None:  # a table of figures: each one shown
            parts.append(f"{key} {'n/a' if count is None else f'{count:.4f}'}")
        elif count:
            parts.append(f"{key} {count}")
    return ", ".join(parts) or "none"


def format_value(metric: str, value: float | Mapping[str, Any] | None) -> str:
    """A metric value as printed: rates to 4 decimals, ms and tokens to 1, counts whole, None as n/a.

    A table metric (``TABLE_METRICS``) is printed by ``format_table``.
    """
    if value is None:
        return "n/a"
    if isinstance(value, Mapping):
        return format_table(value)
    direction = METRIC_DIRECTIONS.get(metric)
    if metric in WHOLE_NUMBER_METRICS:
        return str(int(value))
    if direction is None or direction.rate:
        return f"{value:.4f}"
    if direction.unit == "USD":  # a run's cost is often cents: six decimals, to the micro-dollar
        return f"{value:.6f} USD"
    return f"{value:.1f}" + (f" {direction.unit}" if direction.unit else "")


def percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile by linear interpolation between closest ranks.

    Matches numpy's default (``method="linear"``): rank ``h = (n - 1) * q / 100``,
    value ``x[floor(h)] + (h - floor(h)) * (x[floor(h) + 1] - x[floor(h)])``.

    Args:
        sorted_values: Values in ascending order.
        q: Percentile in [0, 100].

    Returns:
        The percentile, or None for no values.

    Raises:
        ValueError: ``q`` is outside [0, 100].
    """
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile must be in [0, 100], got {q!r}")
    n = len(sorted_values)
    if n == 0:
        return None
    rank = (n - 1) * q / 100.0
    lower = math.floor(rank)
    upper = min(lower + 1, n - 1)
    fraction = rank - lower
    return sorted_values[lower] + fraction * (sorted_values[upper] - sorted_values[lower])


@dataclass(frozen=True)
class _Dispatch:
    own: dict[str, Any]
    """Kind name -> kind."""
    any: tuple[Any, ...]
    """The kinds whose ``tally_any`` does something (it is called for every outcome)."""


def _dispatch() -> _Dispatch:
    kinds = all_kinds()
    return _Dispatch(
        own={kind.name: kind for kind in kinds},
        any=tuple(kind for kind in kinds if type(kind).tally_any is not Kind.tally_any),
    )


@dataclass
class MetricsAccumulator:
    """Incremental metrics: ``add`` outcomes one at a time, ``merge`` partial results, ``result``.

    Holds each kind's tally, shared counters and one ``array('d')`` of latencies
    (8 bytes per generate call), so 100k items fit in well under a megabyte.
    Score sums are exact ``Fraction``s so that the result does not depend on the
    order in which outcomes (or xdist workers' partial results) arrive.

    Under ``--eval-repeat N`` an item's outcome carries its attempts: each attempt is
    folded as an outcome of its own (so ``items``, ``itemsByKind``, ``errors`` and every
    kind metric count attempts), and the item once more for ``passAtK``/``passHatK``
    (docs/gate.md, "Repeats").
    """

    items: int = 0
    errors: int = 0
    reviews: int = 0
    review_score_sum: Fraction = Fraction(0)
    token_calls: int = 0
    token_sum: int = 0
    target_calls: int = 0
    """Generate calls (outcomes with a latency or token counts): ``targetTokens.calls``."""
    target_calls_without_usage: int = 0
    """Of them, calls that reported no tokens at all: ``targetTokens.callsWithoutUsage``."""
    target_prompt_tokens: int = 0
    target_completion_tokens: int = 0
    latencies_ms: array[float] = field(default_factory=lambda: array("d"))
    tallies: dict[str, Any] = field(default_factory=lambda: {kind.name: kind.new_tally() for kind in all_kinds()})
    repeated_items: int = 0
    """Items whose outcome carries attempts (``--eval-repeat N``, N > 1); ``passAtK`` is None while 0."""
    whole_items: int = 0
    """Items added (an item with attempts once): the denominator of ``passAtK`` and ``passHatK``."""
    items_some_passed: int = 0
    """Items with at least one passing attempt (an item without attempts: when it passed)."""
    items_all_passed: int = 0
    """Items whose every attempt passed (an item without attempts: when it passed)."""
    _kinds: _Dispatch = field(default_factory=_dispatch, repr=False, compare=False)

    def add(self, outcome: ItemOutcome) -> None:
        """Fold one item's outcome into the counters: each of its attempts when it has them.

        Raises:
            ValueError: A latency is negative or not finite, or a figure in
                ``outcome.extra`` has the wrong type; the message names the item.
        """
        attempts = outcome.attempts
        self.whole_items += 1
        if attempts is None:
            self.items_some_passed += outcome.passed
            self.items_all_passed += outcome.passed
            self._fold(outcome)
            return
        self.repeated_items += 1
        self.items_some_passed += any(attempt.passed for attempt in attempts)
        self.items_all_passed += all(attempt.passed for attempt in attempts)
        for attempt in attempts:
            self._fold(attempt)

    def _fold(self, outcome: ItemOutcome) -> None:
        """Fold one outcome (an item's, or one attempt's) into the metrics' counters."""
        self.items += 1
        self.errors += outcome.errored
        kinds = self._kinds
        own = kinds.own.get(outcome.kind)
        if own is not None:
            tally = self.tallies[outcome.kind]
            tally.items += 1
            own.tally(tally, outcome)
        for kind in kinds.any:
            kind.tally_any(self.tallies[kind.name], outcome)
        review = outcome.evidence_review
        if review is not None and review.reviewed:
            self.reviews += 1
            self.review_score_sum += Fraction(review.score)
        latency = outcome.latency_ms
        if latency is not None:
            if not math.isfinite(latency) or latency < 0:
                raise ValueError(f"item {outcome.id!r}: latencyMs must be a finite number >= 0, got {latency!r}")
            self.latencies_ms.append(latency)
        if outcome.prompt_tokens is not None or outcome.completion_tokens is not None:
            self.token_calls += 1
            self.token_sum += (outcome.prompt_tokens or 0) + (outcome.completion_tokens or 0)
            self.target_prompt_tokens += outcome.prompt_tokens or 0
            self.target_completion_tokens += outcome.completion_tokens or 0
            self.target_calls += 1
        elif latency is not None:
            # A generate call that reported no usage: its tokens are unknown, never 0 (docs/gate.md, "Cost").
            self.target_calls += 1
            self.target_calls_without_usage += 1

    def merge(self, other: MetricsAccumulator) -> MetricsAccumulator:
        """Add another accumulator's counts into this one (xdist workers); returns ``self``."""
        self.items += other.items
        self.errors += other.errors
        self.reviews += other.reviews
        self.review_score_sum += other.review_score_sum
        self.token_calls += other.token_calls
        self.token_sum += other.token_sum
        self.target_calls += other.target_calls
        self.target_calls_without_usage += other.target_calls_without_usage
        self.target_prompt_tokens += other.target_prompt_tokens
        self.target_completion_tokens += other.target_completion_tokens
        self.latencies_ms.extend(other.latencies_ms)
        for name, tally in other.tallies.items():
            self.tallies[name].merge(tally)
        self.repeated_items += other.repeated_items
        self.whole_items += other.whole_items
        self.items_some_passed += other.items_some_passed
        self.items_all_passed += other.items_all_passed
        return self

    def result(self) -> Metrics:
        """The ``Metrics`` of everything added so far (docs/gate.md)."""
        latencies = sorted(self.latencies_ms)
        values: dict[str, Any] = {}
        for kind in all_kinds():
            values.update(kind.results(self.tallies[kind.name]))
        values.update(
            evidence_risk_score=ratio(self.review_score_sum, self.reviews),
            latency_ms_p50=percentile(latencies, 50),
            latency_ms_p95=percentile(latencies, 95),
            tokens_per_query=ratio(self.token_sum, self.token_calls),
            target_tokens=self._target_tokens(),
            errors=self.errors,
            items=self.items,
            items_by_kind={name: tally.items for name, tally in self.tallies.items()},
        )
        if self.repeated_items:
            values.update(
                pass_at_k=ratio(self.items_some_passed, self.whole_items),
                pass_hat_k=ratio(self.items_all_passed, self.whole_items),
            )
        return Metrics(**values)

    def _target_tokens(self) -> dict[str, int] | None:
        """``targetTokens``, or None when no generate call was made."""
        if not self.target_calls:
            return None
        return {
            "promptTokens": self.target_prompt_tokens,
            "completionTokens": self.target_completion_tokens,
            "calls": self.target_calls,
            "callsWithoutUsage": self.target_calls_without_usage,
        }


def compute_metrics(outcomes: Iterable[ItemOutcome | dict[str, Any]]) -> Metrics:
    """``Metrics`` of a run from its outcomes (docs/gate.md).

    Args:
        outcomes: ``ItemOutcome``s, or their wire dicts (as read back from
            an item's report), in any order.

    Returns:
        The metrics; identical for any order or partition of the same outcomes.
    """
    accumulator = MetricsAccumulator()
    for outcome in outcomes:
        accumulator.add(outcome if isinstance(outcome, ItemOutcome) else ItemOutcome.model_validate(outcome))
    return accumulator.result()
