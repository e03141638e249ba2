"""Whether run B regresses from run A (docs/statistics.md, "Paired comparison"; docs/history.md).

``groundeval compare A.json B.json`` and ``groundeval history compare A B`` decide in
one way, here: a metric regresses when it drops beyond the margin **and** the drop is
significant.

1. *Beyond the margin* is the fixed rule (``fixed_regressions``): a bounded metric of B
   fails its floor or ceiling while A's met it, was not measured, or was better; or, with
   the same dataset version and model lineage, B's ``retrievalRecall`` is below A's minus
   ``retrievalRecallMargin`` (A acts as the baseline, as in the gate).
2. *Significant* is the paired test of ``core.paired`` over the items both runs hold: the
   two-sided p-value of the change is below ``alpha`` and the change is a drop.

A metric the fixed rule flags but the paired test cannot judge keeps the fixed rule and
the output says why: the checks that count what could not be measured (``errors``,
``judgeErrors``, ``scorerErrors``, ``citationUncitedAnswers``, ``unparseableRate``: no quality
figure to test), a run that lists no items (a recorded summary), a metric only one run measured
over the paired items, or too few paired items for any p-value to reach ``alpha`` (``smallest_p``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ConfigDict

from .floors import RECALL_MARGIN_KEY
from .gate import DEFAULT_RECALL_MARGIN, NOT_QUALITY
from .metrics import METRIC_DIRECTIONS
from .paired import MetricTest, Pairing
from .significance import DEFAULT_ALPHA, format_p, significance_text, smallest_p
from .wire import WireModel


@dataclass(frozen=True)
class Candidate:
    """A drop beyond the margin by the fixed rule, before the paired test."""

    metric: str | None
    """The metric's wire name; None for a flag of the run itself (no finish time, interrupted)."""
    reason: str
    """The fixed rule's reason, in plain language."""


def fixed_regressions(
    a_metrics: Mapping[str, Any] | None,
    b_metrics: Mapping[str, Any] | None,
    floors: Mapping[str, float | None],
    comparable: bool,
) -> list[Candidate]:
    """The drops of run B beyond the margin by the fixed rule (the module docstring, step 1).

    Args:
        a_metrics: Run A's metrics (wire names), as recorded.
        b_metrics: Run B's metrics.
        floors: Complete bounds (``gate.parse_floors`` output), metric -> bound, with
            ``retrievalRecallMargin``.
        comparable: Whether the runs share dataset version and model lineage, both known:
            only then is recall compared with A's minus the margin.
    """
    av, bv = numeric_metrics(a_metrics), numeric_metrics(b_metrics)
    found = []
    for name, direction in METRIC_DIRECTIONS.items():
        bound = floors.get(name)
        if name == "errors" and bound is None:
            bound = 0
        b_value, a_value = bv.get(name), av.get(name)
        if bound is None or b_value is None:
            continue
        fails = b_value < bound if direction.op == ">=" else b_value > bound
        if not fails:
            continue
        a_met = a_value is None or (a_value >= bound if direction.op == ">=" else a_value <= bound)
        worse = a_value is not None and (b_value < a_value if direction.op == ">=" else b_value > a_value)
        if a_met or worse:
            shown_a = "n/a" if a_value is None else f"{a_value:.4g}"
            found.append(
                Candidate(
                    name,
                    f"{name} {b_value:.4g} fails its {direction.kind} {direction.op} {bound:.4g} (run A: {shown_a})",
                )
            )
    margin = floors.get(RECALL_MARGIN_KEY)
    margin = DEFAULT_RECALL_MARGIN if margin is None else margin
    a_recall, b_recall = av.get("retrievalRecall"), bv.get("retrievalRecall")
    if comparable and a_recall is not None and b_recall is not None and b_recall < round(a_recall - margin, 12):
        found.append(
            Candidate(
                "retrievalRecall",
                f"retrievalRecall {b_recall:.4f} < run A's {a_recall:.4f} - margin {margin:.4f} "
                "(same dataset version and model lineage)",
            )
        )
    return found


def numeric_metrics(metrics: Mapping[str, Any] | None) -> dict[str, float | None]:
    """The metrics that are numbers (or null) as floats, by wire name; tables and other values left out."""
    out: dict[str, float | None] = {}
    for name, value in (metrics or {}).items():
        if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
            out[name] = None if value is None else float(value)
    return out


def is_drop(metric: str, delta: float) -> bool:
    """Whether a change B − A of ``metric`` is for the worse: down for a floor, up for a ceiling."""
    direction = METRIC_DIRECTIONS.get(metric)
    return delta > 0 if direction is not None and direction.op == "<=" else delta < 0


@dataclass
class Verdict:
    """The fixed rule's flags, each judged by the paired test."""

    regressions: list[str] = field(default_factory=list)
    """Why B regresses: each a drop beyond the margin that is significant, or that the test could not judge
    (the reason says which); ``compare`` exits 1 when any."""
    not_regressions: list[str] = field(default_factory=list)
    """Drops beyond the margin that the paired test did not find significant: printed, no exit 1."""

    @property
    def regressed(self) -> bool:
        """True when B regresses."""
        return bool(self.regressions)


def judge(
    candidates: list[Candidate],
    tests: Mapping[str, MetricTest] | None,
    *,
    alpha: float = DEFAULT_ALPHA,
    why_unpaired: str = "the runs share no items",
) -> Verdict:
    """Each drop beyond the margin judged by the paired test (the module docstring, step 2).

    Args:
        candidates: ``fixed_regressions`` (and any flag of the run itself, metric None).
        tests: ``core.paired.compare_metrics`` of the paired items; None when the runs could
            not be paired (``why_unpaired`` says why, e.g. a run lists no items).
        alpha: The significance level.
        why_unpaired: Why ``tests`` is None, for the output.

    Returns:
        The verdict: each candidate's reason followed by ``; significant (p=…)``,
        ``; not significant (p=…): not a regression`` or ``; fixed margin: <why not tested>``.
    """
    verdict = Verdict()
    for candidate in candidates:
        metric, reason = candidate.metric, candidate.reason
        if metric is None:
            verdict.regressions.append(reason)
        elif metric in NOT_QUALITY:
            verdict.regressions.append(f"{reason}; not tested: it counts what could not be measured")
        elif tests is None:
            verdict.regressions.append(f"{reason}; fixed margin: {why_unpaired}")
        elif (test := tests.get(metric)) is None or test.p_value is None or test.delta is None:
            why = test.note if test is not None and test.note else "not measured over the paired items"
            verdict.regressions.append(f"{reason}; fixed margin: {why}")
        elif test.powerless(alpha):
            verdict.regressions.append(
                f"{reason}; fixed margin: {test.items} paired item{'s' if test.items != 1 else ''} cannot reach "
                f"alpha {alpha:g} (smallest p {format_p(smallest_p(test.items))})"
            )
        elif test.p_value < alpha and is_drop(metric, test.delta):
            verdict.regressions.append(f"{reason}; {significance_text(test.p_value, alpha)}")
        elif test.p_value < alpha:
            verdict.not_regressions.append(
                f"{reason}; {significance_text(test.p_value, alpha)} but not a drop over the paired items: "
                "not a regression"
            )
        else:
            verdict.not_regressions.append(f"{reason}; {significance_text(test.p_value, alpha)}: not a regression")
    return verdict


# --- the JSON form (groundeval compare --json) ---------------------------------------------------


class MetricComparison(WireModel):
    """One metric of two runs compared over their paired items (``core.paired.MetricTest``)."""

    model_config = ConfigDict(allow_inf_nan=False)

    metric: str
    """The metric's wire name."""
    a: float | None
    """Run A's value over the paired items."""
    b: float | None
    """Run B's value over the paired items."""
    delta: float | None
    """B − A over the paired items."""
    low: float | None
    """Lower end of the paired bootstrap interval of B − A at ``confidence``."""
    high: float | None
    """Upper end of that interval."""
    p_value: float | None
    """Two-sided p-value of the paired sign-flip test; None when not tested (``note``)."""
    exact: bool
    """Whether ``pValue`` is exact (every swap enumerated) rather than a Monte Carlo estimate."""
    significant: bool | None
    """``pValue < alpha``; None when not tested."""
    items: int
    """Paired items with a figure of this metric, in either run."""
    discordant: int
    """Of them, items whose figures differ between the runs."""
    note: str | None = None
    """Why the metric was not tested."""

    @classmethod
    def of(cls, test: MetricTest, alpha: float) -> MetricComparison:
        """The wire form of ``test`` at significance level ``alpha``."""
        return cls(
            metric=test.metric,
            a=test.a,
            b=test.b,
            delta=test.delta,
            low=test.low,
            high=test.high,
            p_value=test.p_value,
            exact=test.exact,
            significant=None if test.p_value is None else test.p_value < alpha,
            items=test.items,
            discordant=test.discordant,
            note=test.note,
        )


class ComparisonRecord(WireModel):
    """What ``groundeval compare --json`` prints for one dataset (docs/statistics.md)."""

    schema_version: int = 1
    """Version of this shape."""
    dataset_version: str
    """The dataset both reports measured."""
    alpha: float
    """Significance level a drop had to reach."""
    confidence: float
    """Level of the bootstrap intervals."""
    replicates: int
    """Bootstrap replicates (and Monte Carlo sign-flip draws)."""
    seed: int
    """Seed of every draw."""
    paired_items: int
    """Items both runs hold."""
    only_in_a: list[str]
    """Ids only run A holds (not paired)."""
    only_in_b: list[str]
    """Ids only run B holds."""
    pass_to_fail: list[str]
    """Paired ids that passed in A and not in B."""
    fail_to_pass: list[str]
    """Paired ids that did not pass in A and passed in B."""
    mcnemar_p: float | None
    """Exact McNemar p-value of those flips; None when nothing was paired."""
    metrics: list[MetricComparison]
    """Every metric compared over the paired items."""
    unpaired: str | None = None
    """Why the runs were not paired (a run lists no items), when they were not."""
    regressions: list[str]
    """Why B regresses (``Verdict.regressions``)."""
    not_regressions: list[str]
    """Drops beyond the margin found not significant."""
    regressed: bool
    """Whether B regresses: the command exits 1."""

    @classmethod
    def of(
        cls,
        *,
        dataset_version: str,
        pairing: Pairing | None,
        tests: Mapping[str, MetricTest] | None,
        verdict: Verdict,
        alpha: float,
        confidence: float,
        replicates: int,
        seed: int,
        unpaired: str | None = None,
    ) -> ComparisonRecord:
        """The record of one dataset's comparison."""
        return cls(
            dataset_version=dataset_version,
            alpha=alpha,
            confidence=confidence,
            replicates=replicates,
            seed=seed,
            paired_items=len(pairing.ids) if pairing else 0,
            only_in_a=list(pairing.only_in_a) if pairing else [],
            only_in_b=list(pairing.only_in_b) if pairing else [],
            pass_to_fail=list(pairing.pass_to_fail) if pairing else [],
            fail_to_pass=list(pairing.fail_to_pass) if pairing else [],
            mcnemar_p=pairing.mcnemar_p if pairing and pairing.ids else None,
            metrics=[MetricComparison.of(t, alpha) for t in (tests or {}).values()],
            unpaired=unpaired,
            regressions=verdict.regressions,
            not_regressions=verdict.not_regressions,
            regressed=verdict.regressed,
        )
