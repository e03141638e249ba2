"""What every item kind shares: the item base model, field types, and the ``Kind`` interface.

An item kind (docs/dataset.md) is one module of ``core.kinds`` holding its item
model, how it runs against a target (or offline), how it is judged, and what it
adds to the metrics; ``core.kinds`` registers the modules. This module imports
nothing else of the package except the wire base model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from fractions import Fraction
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import ConfigDict, Field, StringConstraints, field_validator

from ..contract import MARKER_NAME_PATTERN
from ..outcome import ItemOutcome
from ..wire import WireModel

if TYPE_CHECKING:
    from ..dataset import Dataset
    from ..runner import ItemRunner
    from ..scoring import EvidenceSearch

ID_PATTERN = r"^[A-Za-z0-9_-]+$"
"""Item ids: letters, digits, ``-`` and ``_`` so node ids, ``-k`` and IDE re-runs work (docs/dataset.md)."""

TAG_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
"""Tags become pytest markers, so they must be valid marker names."""

RESERVED_TAGS = frozenset({"skip", "skipif", "xfail", "parametrize", "usefixtures", "filterwarnings"})
"""pytest's built-in markers: a tag with one of these names would change how pytest runs the item."""

ItemId = Annotated[str, StringConstraints(pattern=ID_PATTERN)]
TagName = Annotated[str, StringConstraints(pattern=TAG_PATTERN)]
MarkerName = Annotated[str, StringConstraints(pattern=MARKER_NAME_PATTERN)]
NonEmpty = Annotated[str, StringConstraints(min_length=1)]

Op = Literal[">=", "<="]


def ratio(numerator: int | Fraction, denominator: int) -> float | None:
    """``numerator / denominator`` as a float computed exactly, or None when the denominator is 0.

    A metric with nothing to measure is None (n/a), never NaN, 0 or 1 (docs/gate.md).
    """
    return float(Fraction(numerator, denominator)) if denominator else None


class RuleError(ValueError):
    """A cross-field rule broken inside a model validator, carrying where it happened.

    Pydantic keeps the raised ``ValueError`` in the error's ``ctx``; the loader reads
    ``json_path`` from it because a model-level validator's ``loc`` points at the model.
    """

    def __init__(self, message: str, json_path: str | None = None) -> None:
        super().__init__(message)
        self.json_path = json_path


class JudgeError(Exception):
    """Judging an item failed for a reason of the dataset, not of the target (e.g. a mention
    pattern that timed out). The runner records the item as an error naming the cause, and
    it does not count toward the target's "N in a row" stop."""


def _check_tags(tags: list[str]) -> list[str]:
    for i, tag in enumerate(tags):
        if tag in RESERVED_TAGS:
            raise RuleError(
                f"tag {tag!r} is one of pytest's built-in markers and would change how the item runs; rename it",
                json_path=f"[{i}]",
            )
    return tags


class ItemBase(WireModel):
    """Fields every item has (docs/dataset.md).

    Items are frozen: a validated dataset item is read-only (assigning a field raises
    ``pydantic.ValidationError``), so the loader lets items of one shape share one set of
    given fields (``core.dataset.loader``).
    """

    model_config = ConfigDict(frozen=True)

    id: ItemId
    """Unique within the dataset; letters, digits, ``-``, ``_``."""
    tags: list[TagName] = Field(default_factory=list)
    """Names that become pytest markers on the item."""

    if TYPE_CHECKING:
        # Declared to the type checker only: each kind's model declares it as its own
        # ``Literal[<name>]`` (the manifest's union tag; ``core.kinds.register`` checks it).
        kind: str

    @field_validator("tags")
    @classmethod
    def _tags_not_reserved(cls, value: list[str]) -> list[str]:
        return _check_tags(value)


class RecordedAnswer(WireModel):
    """A recorded answer reviewed without calling a target."""

    answer: str
    """The answer text."""


@dataclass(frozen=True)
class MetricDirection:
    """How a bound on one metric reads."""

    op: Op
    """``">="`` for a floor (higher is better), ``"<="`` for a ceiling (lower is better)."""
    rate: bool
    """True for a rate in [0, 1]; otherwise the bound is any number >= 0."""
    unit: str = ""
    """Unit shown after the value: ``"ms"``, ``"tokens"`` or empty."""

    @property
    def kind(self) -> str:
        """``"floor"`` or ``"ceiling"``, as used in messages."""
        return "floor" if self.op == ">=" else "ceiling"


FLOOR = MetricDirection(">=", rate=True)
"""A rate in [0, 1] where higher is better."""
CEILING_RATE = MetricDirection("<=", rate=True)
"""A rate in [0, 1] where lower is better (a share of mistakes)."""
USD_CEILING = MetricDirection("<=", rate=False, unit="USD")
"""An amount of US dollars where lower is better (a cost, docs/gate.md "Cost")."""


@dataclass(frozen=True)
class MetricSpec:
    """One metric a kind measures (docs/gate.md).

    Attributes:
        field: The ``Metrics`` field name (snake_case); its wire name is camelCase.
        doc: What the metric is, with its denominator, for docs and ``Metrics``.
        direction: How a bound on it reads; None for a count that is not gate-able.
        default_bound: The bound applied when no floors file says otherwise, or None.
        type_: ``"rate"`` (float or None), ``"count"`` (int, 0 by default; None when
            ``nullable`` and nothing was measured) or ``"table"`` (a JSON object of
            counts, or None; reported, never gated: ``direction`` must be None).
        silent: For a metric that is None although its items ran: a function of the
            run's ``Metrics`` returning why that must FAIL a bound rather than SKIP
            it (a target that asserts nothing must not pass), or None.
        nullable: For a count: None (n/a) rather than 0 when nothing was measured
            (e.g. ``judgeErrors`` without a judge).
        armed_by: Wire names of metrics whose bound, when set, arms ``armed_bound`` on this
            metric unless the floors give it one of its own (a judge bound arms
            ``judgeErrors <= 0`` and ``unparseableRate <= 0.05``: docs/gate.md).
        armed_bound: The bound ``armed_by`` arms (0 for a count of errors).
        useless_at: For a ceiling rate: the value at which the run measured nothing (every
            paragraph sent to the judge came back unparseable: ``unparseableRate`` 1.0); the
            gate FAILs it even with no bound set, saying ``useless_reason``. None: no such value.
        useless_reason: Why ``useless_at`` FAILs, for the gate's reason.
        minimum: The lowest value a ``"rate"`` metric can take (0; -1 for a kappa). A
            report holding a value outside ``value_range`` is refused (docs/gate.md).
        only_when_measured: Left out of the report's ``metrics`` while None, so that runs which
            cannot measure it keep the report shape they always had (``passAtK`` and
            ``passHatK`` exist only under ``--eval-repeat N`` with N > 1).
        cells: What a ``"table"`` holds: ``"counts"`` (whole counts >= 0, one level of nesting
            allowed) or ``"figures"`` (per key, a number in [``minimum``, 1] or None: a kappa
            per judge model).
    """

    field: str
    doc: str
    direction: MetricDirection | None = FLOOR
    default_bound: float | None = None
    type_: Literal["rate", "count", "table"] = "rate"
    silent: Callable[[Any], str | None] | None = None
    nullable: bool = False
    armed_by: tuple[str, ...] = ()
    armed_bound: float = 0
    useless_at: float | None = None
    useless_reason: str = ""
    minimum: float = 0.0
    only_when_measured: bool = False
    cells: Literal["counts", "figures"] = "counts"

    @property
    def value_range(self) -> tuple[float, float | None]:
        """``(lowest, highest)`` a value of this metric can take; ``highest`` None when unbounded.

        A share (a rate the gate bounds in [0, 1], or a rate nothing bounds) is at most 1;
        a figure with a unit (ms, tokens) and a count have no upper limit. Never NaN or infinite.
        """
        if self.type_ == "rate" and (self.direction is None or self.direction.rate):
            return self.minimum, 1.0
        return self.minimum, None

    @property
    def wire(self) -> str:
        """The camelCase name used in reports, floors files and the summary."""
        head, *rest = self.field.split("_")
        return head + "".join(part.capitalize() for part in rest)


def _not_repeated(metrics: Any, name: str) -> str | None:
    """Why a bound on ``passAtK``/``passHatK`` FAILs when the run measured neither: its items ran once each."""
    if not metrics.items:
        return None
    return (
        f"{name} is measured over repeated attempts, but each item ran once: run with --eval-repeat N "
        "(N >= 2), or drop the bound (docs/gate.md, Repeats)"
    )


def _unpriced_text(role: str, models: dict[str, Any]) -> str:
    if role == "target" and list(models) == ["unknown"]:
        return (
            "the target's generate model is unknown (no /v1/info, no --eval-model-generate), so its "
            f"{models['unknown']} token(s) cannot be priced"
        )
    named = ", ".join(f"{model!r} ({tokens} token(s))" for model, tokens in models.items())
    return f"{role} model {named} not in the prices file: a model missing is never priced at 0"


def cost_unmeasured(metrics: Any, role: str) -> str | None:
    """Why ``judgeCostUsd`` (``role`` ``"judge"``) or ``targetCostUsd`` (``"target"``) is null although it
    could have been measured, so that a ceiling on it FAILs saying so (docs/gate.md, "Cost"); None when
    there was nothing to price (no judge asked in a run without citation items, no generate call).

    Reads only the run's metrics: ``judgeTokens`` / ``targetTokens`` and ``unpricedModels``.
    """
    tokens = metrics.judge_tokens if role == "judge" else metrics.target_tokens
    if tokens is None:
        if role == "judge" and metrics.judge_errors is not None:
            return "the judge's paragraph records carry no token usage (recorded before usage was): its cost is unknown"
        ran = metrics.items_by_kind.get("citation", 0)
        if role == "judge" and ran:
            return f"{ran} citation item(s) ran but no judge was asked, so there is no judge cost to measure"
        return None
    unpriced = metrics.unpriced_models
    if unpriced is None:
        return (
            "no prices: give --eval-prices FILE (JSON: model -> {input, output} US dollars per 1M tokens; "
            'docs/gate.md "Cost")'
        )
    reasons = []
    if unpriced.get(role):
        reasons.append(_unpriced_text(role, unpriced[role]))
    if role == "judge":
        unknown = sum(cell.get("repliesWithoutUsage", 0) for cell in tokens.values())
        if unknown:
            reasons.append(f"{unknown} judge reply(ies) reported no usage: their tokens, and so the cost, are unknown")
    elif tokens.get("callsWithoutUsage"):
        reasons.append(
            f"{tokens['callsWithoutUsage']} generate call(s) reported no usage: their tokens, and so the cost, "
            "are unknown"
        )
    return "; ".join(reasons) or None


COMMON_METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(
        "evidence_risk_score",
        "Mean evidence-risk score (docs/evidence-risk.md) over reviewed evidence blocks only (reviewed: true), "
        "whatever the item's kind.",
    ),
    MetricSpec(
        "latency_ms_p50",
        "Median client-side wall time of /v1/generate in ms, linear interpolation between closest ranks "
        "(numpy's default), over items with a generate call.",
        direction=MetricDirection("<=", rate=False, unit="ms"),
    ),
    MetricSpec(
        "latency_ms_p95",
        "95th percentile of the same latencies in ms, same interpolation.",
        direction=MetricDirection("<=", rate=False, unit="ms"),
    ),
    MetricSpec(
        "tokens_per_query",
        "Mean prompt + completion tokens over items whose generate call reported tokens (a missing half counts as 0).",
        direction=MetricDirection("<=", rate=False, unit="tokens"),
    ),
    MetricSpec(
        "target_tokens",
        "The target's tokens over its generate calls: {promptTokens, completionTokens, calls, callsWithoutUsage} "
        "(a call that reported no usage is counted there, never as 0 tokens); null without a generate call.",
        direction=None,
        type_="table",
    ),
    MetricSpec(
        "errors",
        "Items that could not be run (target down, timeout, malformed response).",
        direction=MetricDirection("<=", rate=False),
        default_bound=0,
        type_="count",
    ),
    MetricSpec(
        "pass_at_k",
        "Under --eval-repeat N (N > 1): items with at least one passing attempt / items (pass@k, "
        "docs/gate.md: Repeats); an errored attempt is a failed one. Absent without repeats.",
        silent=lambda metrics: _not_repeated(metrics, "passAtK"),
        only_when_measured=True,
    ),
    MetricSpec(
        "pass_hat_k",
        "Under --eval-repeat N (N > 1): items whose every attempt passed / items (pass^k, "
        "docs/gate.md: Repeats); at most passAtK. Absent without repeats.",
        silent=lambda metrics: _not_repeated(metrics, "passHatK"),
        only_when_measured=True,
    ),
    MetricSpec(
        "judge_cost_usd",
        "US dollars of the judge's tokens (judgeTokens) at the --eval-prices of each judge model; null without "
        'prices, or when a judge model is not priced or a reply reported no usage (docs/gate.md, "Cost").',
        direction=USD_CEILING,
        silent=lambda metrics: cost_unmeasured(metrics, "judge"),
    ),
    MetricSpec(
        "target_cost_usd",
        "US dollars of the target's tokens (targetTokens) at the --eval-prices of the lineage's generate model; "
        "null without prices, or when that model is not priced or a call reported no usage.",
        direction=USD_CEILING,
        silent=lambda metrics: cost_unmeasured(metrics, "target"),
    ),
    MetricSpec(
        "unpriced_models",
        "Models the prices file does not price, with their tokens: {judge: {model: tokens}, target: {model: "
        "tokens}}, empty when every model is priced; null without --eval-prices.",
        direction=None,
        type_="table",
    ),
)
"""Metrics every kind contributes to, printed after the kinds' own (``core.metrics`` builds
``Metrics`` from them; ``core.kinds.register`` refuses a kind whose metric takes one of their names)."""

RESERVED_METRIC_FIELDS: tuple[str, ...] = ("items", "items_by_kind", "not_run", "quality_bounds")
"""``Metrics`` fields that are no metric of a kind (the item counts) and the gate's own counts
(``notRun``, ``qualityBounds``): no kind's metric may take these names (``core.kinds.register``)."""


@dataclass
class Tally:
    """A kind's counters over outcomes; subclasses add integer (or ``Fraction``) fields.

    ``merge`` adds another tally field by field, so per-worker partial results give
    the same metrics as a plain run.
    """

    items: int = 0

    def merge(self, other: Tally) -> Tally:
        """Add ``other``'s counts into this tally; returns ``self``."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        return self


@dataclass(frozen=True)
class UnitTable:
    """A metric figured from a table of independent units rather than from items, for its interval.

    Citation paragraphs a judge labelled, counted by ``(expectedVerdict, label)``: judge
    agreement and Cohen's kappa are figures of that table, and their intervals resample
    paragraphs (docs/statistics.md, "Confidence intervals").
    """

    counts: Mapping[Any, int]
    """Cell -> units in it."""
    statistic: Callable[[Mapping[Any, int]], float | None]
    """The metric's value for a table of counts (the run's, or a bootstrap replicate's)."""
    success: Callable[[Any], bool] | None = None
    """For a metric that is the share of units whose cell is a success (agreement): which cells
    are; the interval is then Wilson's over the units. None: a bootstrap of ``statistic``."""


@dataclass
class ManifestIndex:
    """What a kind's manifest check can look up: corpus labels and document names."""

    labels: set[str] = field(default_factory=set)
    documents: set[str] = field(default_factory=set)

    @staticmethod
    def listing(values: set[str], limit: int = 20) -> str:
        """``values`` sorted and quoted for a message, at most ``limit`` of them."""
        ordered = sorted(values)
        shown = ", ".join(repr(v) for v in ordered[:limit])
        return (shown + f", … ({len(ordered) - limit} more)") if len(ordered) > limit else (shown or "none")


class Kind:
    """One item kind: its model, how it runs, how it is judged, what it adds to the metrics.

    Subclass it in a module of ``core.kinds`` and list that module in the registry
    (``core.kinds.KIND_MODULES``), or register it at run time (``core.kinds.register``);
    docs/architecture.md walks through adding one.
    """

    name: ClassVar[str]
    """The ``kind`` value in a manifest, also the pytest marker and the node id segment."""
    model: ClassVar[type[ItemBase]]
    """The pydantic model of one item (its ``kind`` field is ``Literal[name]``)."""
    metrics: ClassVar[tuple[MetricSpec, ...]] = ()
    """The metrics this kind measures, in the order the gate prints them."""
    tally_type: ClassVar[type[Tally]] = Tally
    """The counters ``tally`` folds outcomes into."""
    junit_figures: ClassVar[tuple[str, ...]] = ()
    """Wire keys of this kind's outcome (or of its ``extra``) recorded as JUnit properties of the
    item (``user_properties``) when not null, after its latency and before its trace id and tokens
    (docs/ci.md). Figures only: never a text of the answer."""
    drilldown_extra: ClassVar[frozenset[str]] = frozenset()
    """``extra`` keys ``drilldown_counts`` shows, so the HTML per-item view does not repeat them
    under "other figures"."""
    union_tags: ClassVar[frozenset[str]] = frozenset()
    """Tags of tagged unions inside this kind's model (e.g. temporal's ``query``): pydantic puts
    them in an error's location, and dataset error messages drop them from JSON paths."""
    pattern_explanations: ClassVar[Mapping[str, str]] = {}
    """String pattern of a field of this kind's model -> what a value must look like, said in a
    dataset error instead of pydantic's wording."""
    uses_baseline: ClassVar[bool] = False
    """Whether a baseline report's retrieval recall is taken over this kind's items (docs/gate.md:
    the baseline check); ``core.finalize`` collects their ids, ``core.gate.summarize_baseline`` reads them."""

    # -- the manifest

    def check_manifest(self, item: Any, where: str, index: ManifestIndex) -> None:
        """Cross-references of one item to the corpus; raise ``RuleError`` naming the field.

        Args:
            item: The validated item.
            where: Its JSON path in the manifest, e.g. ``items[3]``.
            index: The manifest's corpus labels and document names.
        """

    def check_corpus(self, item: Any, where: str, search: EvidenceSearch) -> None:
        """Rules of one item against the corpus's canonical text, checked once the corpus is read.

        Args:
            item: The validated item.
            where: Its JSON path in the manifest, e.g. ``items[3]``.
            search: Looks strings up in the canonical text as the scorer compares them.

        Raises:
            RuleError: a field the corpus cannot satisfy, with its JSON path.
        """

    # -- running

    def needs_target(self, item: Any) -> bool:
        """Whether running ``item`` calls the target (recorded answers do not)."""
        return True

    async def run(self, runner: ItemRunner, item: Any, dataset: Dataset) -> ItemOutcome:
        """Run ``item`` against ``runner``'s target and judge it.

        Raises:
            TargetError: a target call failed (the runner turns it into an errored outcome).
        """
        raise NotImplementedError

    def run_offline(self, item: Any, dataset: Dataset) -> ItemOutcome:
        """Judge an item that needs no target (``needs_target`` is False).

        Raises:
            TypeError: the item needs a target.
        """
        raise TypeError(f"{item.kind} item {item.id} needs a target")

    async def run_offline_async(self, runner: ItemRunner, item: Any, dataset: Dataset) -> ItemOutcome:
        """``run_offline`` on the runner's event loop, with what the runner carries besides a target.

        A kind that calls a model on recorded answers (citation: the judge and the coverage
        scorer, docs/citation.md) overrides this; the default is ``run_offline``.

        Raises:
            TypeError: the item needs a target.
        """
        return self.run_offline(item, dataset)

    def errored(self, item: Any, error: str) -> ItemOutcome:
        """The outcome of ``item`` when it could not be run (never dropped from a denominator)."""
        return ItemOutcome(
            id=item.id, kind=item.kind, passed=False, error=error, detail=error, extra={"tags": list(item.tags)}
        )

    def errored_id(self, item_id: str, error: str) -> ItemOutcome:
        """The errored outcome of an item of this kind known only by its id (the dataset is not at hand)."""
        return ItemOutcome(id=item_id, kind=self.name, passed=False, error=error, detail=error)

    # -- outputs

    def drilldown_counts(self, outcome: Mapping[str, Any]) -> dict[str, str]:
        """What the HTML per-item view lists under "counts" for one outcome of this kind.

        Args:
            outcome: The outcome's wire dict, as a saved report holds it (untrusted JSON).

        Returns:
            Label -> figure as shown, e.g. ``{"evidence found": "2/3"}``; empty by default.
        """
        return {}

    # -- metrics

    def new_tally(self) -> Tally:
        """Empty counters."""
        return self.tally_type()

    def tally(self, tally: Any, outcome: ItemOutcome) -> None:
        """Fold one outcome of this kind into ``tally`` (``tally.items`` is counted for you).

        Raises:
            ValueError: a figure of the outcome is out of range; the message names the item.
        """

    def tally_any(self, tally: Any, outcome: ItemOutcome) -> None:
        """Fold what an outcome of *any* kind carries for this kind's metrics (default: nothing).

        For figures that may travel on other kinds' outcomes, e.g. citation
        paragraph counts in ``extra``.
        """

    def results(self, tally: Any) -> Mapping[str, Any]:
        """The values of ``metrics`` (by field name) from ``tally``; a rate with no denominator is None."""
        return {}

    # -- confidence intervals (docs/statistics.md)

    def rate_parts(self, tally: Any) -> Mapping[str, tuple[int | Fraction, int]]:
        """``(numerator, denominator)`` of each ratio metric of ``tally``, by field name.

        The metric's value is ``numerator / denominator`` of the run's tally (``results``); the
        confidence interval calls this on a tally holding one item's outcome, so each item is
        one cluster of the metric (``core.confidence``). A metric left out gets no interval
        unless ``unit_tables`` gives one. Default: none.
        """
        return {}

    def unit_tables(self, tally: Any) -> Mapping[str, UnitTable]:
        """The metrics of the run's ``tally`` that are figures of a table of independent units
        (``UnitTable``), by field name; their intervals resample those units. Default: none."""
        return {}
