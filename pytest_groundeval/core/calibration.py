"""A citation judge measured against people, with intervals (docs/citation.md, "Calibration").

The figures of ``groundeval calibrate``: given one ``(human, judge)`` pair per
labelled paragraph the judge was asked about (the human's ``expectedVerdict``, the
judge's label: a verdict, ``unparseable`` or ``unjudged``), :func:`calibrate`
gives

- agreement (share of pairs that agree) and Cohen's κ (``kinds.citation.tally.cohen_kappa``,
  the one κ of the project), each with the interval a run's ``confidence`` gives the same
  paragraphs (``core.confidence.unit_table_interval`` over the citation tally's tables):
  Wilson's over paragraphs for agreement, the seeded percentile bootstrap over paragraphs
  (``core.intervals.table_bootstrap``) for κ;
- the confusion matrix, human × judge, as the run's ``judgeConfusion``;
- per verdict, precision (of the paragraphs the judge gave that verdict, the share
  people gave it too) and recall (of the paragraphs people gave it, the share the
  judge gave it too);
- the checks: a minimum on agreement or κ FAILs when the interval's **lower**
  bound is under it, and, as a judge bound arms them in a run's gate (docs/gate.md),
  a minimum also arms ``judgeErrors <= 0`` and ``unparseableRate <= 0.05``; a judge
  that answered no paragraph at all (every one unjudged or unparseable) FAILs
  whatever the minimums.

The point figures are those a run of the same paragraphs reports as ``judgeAgreement``
and ``judgeKappa``: unparseable and unjudged paragraphs count as disagreements. So are
the intervals, unless ``resamples`` or ``seed`` ask for other draws: a ``judgeKappa`` floor
in a run under ``--eval-gate-on=lower-bound`` compares the same lower bound calibrate
prints (docs/statistics.md). No interval is computed here: the package has one bootstrap.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .confidence import BOOTSTRAP_SEED, unit_table_interval
from .intervals import BOOTSTRAP_REPLICATES, DEFAULT_CONFIDENCE
from .judging import JUDGE_LABELS, JUDGE_VERDICTS, UNJUDGED, UNPARSEABLE, paragraph_label
from .kinds.citation.tally import (
    UNPARSEABLE_CEILING,
    CitationTally,
    agreement_of,
    cohen_kappa,
    confusion_table,
    tally_unit_tables,
)

__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_RESAMPLES",
    "Calibration",
    "CalibrationCheck",
    "Estimate",
    "VerdictFigures",
    "agreement",
    "calibrate",
    "cohens",
    "confusion",
    "pairs_of",
    "per_verdict",
]

DEFAULT_RESAMPLES = BOOTSTRAP_REPLICATES
"""Bootstrap resamples of κ's interval unless ``--resamples`` says otherwise: a run's
(``core.intervals.BOOTSTRAP_REPLICATES``), so that the interval is the one a run reports."""

Pair = tuple[str, str]
"""``(human expectedVerdict, judge label)`` of one labelled paragraph."""


def agreement(pairs: Sequence[Pair]) -> float | None:
    """Share of pairs whose judge label equals the human verdict; None for no pairs."""
    return agreement_of(Counter(pairs))


def cohens(pairs: Sequence[Pair]) -> float | None:
    """Cohen's κ of the pairs: ``kinds.citation.tally.cohen_kappa`` of their table (κ is computed there
    and nowhere else); None for no pairs."""
    return cohen_kappa(Counter(pairs))


def confusion(pairs: Sequence[Pair]) -> dict[str, dict[str, int]]:
    """``{human verdict: {judge label: count}}``, non-zero cells, rows and columns in report order.

    The same table as a run's ``judgeConfusion`` (docs/citation.md).
    """
    return confusion_table(Counter(pairs))


@dataclass(frozen=True)
class VerdictFigures:
    """Precision and recall of one verdict, treating the human label as the truth."""

    precision: float | None
    """Pairs where both say the verdict / pairs where the judge says it; None when the judge never does."""
    recall: float | None
    """Pairs where both say the verdict / pairs where people say it; None when people never do."""
    support: int
    """Pairs where people say the verdict."""
    predicted: int
    """Pairs where the judge says the verdict."""

    def to_wire(self) -> dict[str, Any]:
        """JSON built-ins, camelCase."""
        return {
            "precision": self.precision,
            "recall": self.recall,
            "support": self.support,
            "predicted": self.predicted,
        }


def per_verdict(pairs: Sequence[Pair]) -> dict[str, VerdictFigures]:
    """Precision and recall of each of the five verdicts (``JUDGE_VERDICTS``), in report order.

    ``unparseable`` and ``unjudged`` are never a verdict people give: they have no row, and
    a paragraph so labelled by the judge lowers the recall of its human verdict.
    """
    humans = Counter(human for human, _ in pairs)
    judged = Counter(judge for _, judge in pairs)
    both = Counter(human for human, judge in pairs if human == judge)
    return {
        verdict: VerdictFigures(
            precision=both[verdict] / judged[verdict] if judged[verdict] else None,
            recall=both[verdict] / humans[verdict] if humans[verdict] else None,
            support=humans[verdict],
            predicted=judged[verdict],
        )
        for verdict in JUDGE_VERDICTS
    }


@dataclass(frozen=True)
class Estimate:
    """A figure with its interval."""

    value: float | None
    """The figure over every pair; None for no pairs."""
    low: float | None
    """The interval's lower bound; None without one."""
    high: float | None
    """The interval's upper bound; None without one."""
    method: str | None = None
    """``wilson`` or ``bootstrap`` (as a run's ``confidence`` says it); None without an interval."""

    def to_wire(self) -> dict[str, Any]:
        """``{"value", "low", "high", "method"}``."""
        return {"value": self.value, "low": self.low, "high": self.high, "method": self.method}


@dataclass(frozen=True)
class CalibrationCheck:
    """One check of a calibration: a minimum on an interval's lower bound, or a judge that did not answer."""

    metric: str
    """``judgeAgreement``, ``judgeKappa``, ``judgeErrors``, ``unparseableRate`` or ``judge``."""
    outcome: Literal["PASS", "FAIL"]
    """PASS or FAIL."""
    reason: str
    """The comparison made, in plain language."""
    bound: float | None = None
    """The minimum (agreement, κ) or ceiling (errors, unparseable), or None."""

    def to_wire(self) -> dict[str, Any]:
        """``{"metric", "outcome", "bound", "reason"}``."""
        return {"metric": self.metric, "outcome": self.outcome, "bound": self.bound, "reason": self.reason}


@dataclass(frozen=True)
class Calibration:
    """Everything ``groundeval calibrate`` prints about one judge on one dataset."""

    paragraphs: int
    """Labelled paragraphs the judge was asked about."""
    agreement: Estimate
    """``judgeAgreement`` with its interval."""
    kappa: Estimate
    """``judgeKappa`` with its interval."""
    confusion: dict[str, dict[str, int]]
    """Human × judge (:func:`confusion`)."""
    per_verdict: dict[str, VerdictFigures]
    """Precision and recall per verdict (:func:`per_verdict`)."""
    unjudged: int
    """Paragraphs the judge left unjudged (it could not be reached)."""
    unparseable: int
    """Paragraphs whose replies never parsed."""
    confidence: float
    """Confidence level of both intervals."""
    resamples: int
    """Bootstrap resamples of κ's interval (agreement's is Wilson's: no draws)."""
    seed: int | None
    """Seed of κ's draws; None for a run's (``core.confidence.BOOTSTRAP_SEED`` and the metric's name)."""
    checks: list[CalibrationCheck] = field(default_factory=list)
    """The checks, in order; the calibration passes iff none FAILs."""

    @property
    def passed(self) -> bool:
        """True iff no check FAILed."""
        return all(check.outcome != "FAIL" for check in self.checks)

    def to_wire(self) -> dict[str, Any]:
        """The calibration as JSON built-ins (``groundeval calibrate --json``)."""
        return {
            "paragraphs": self.paragraphs,
            "judgeAgreement": self.agreement.to_wire(),
            "judgeKappa": self.kappa.to_wire(),
            "confidence": self.confidence,
            "resamples": self.resamples,
            "seed": self.seed,
            "judgeConfusion": self.confusion,
            "perVerdict": {verdict: figures.to_wire() for verdict, figures in self.per_verdict.items()},
            "judgeErrors": self.unjudged,
            "unparseable": self.unparseable,
            "checks": [check.to_wire() for check in self.checks],
            "passed": self.passed,
        }


def _estimates(pairs: Sequence[Pair], confidence: float, resamples: int, seed: int | None) -> tuple[Estimate, Estimate]:
    """Agreement and κ with the intervals a run's ``confidence`` gives the same paragraphs: the citation
    tally's tables of them (``tally_unit_tables``) through ``core.confidence.unit_table_interval``."""
    tally = CitationTally()
    tally.confusion.update(pairs)
    tables = tally_unit_tables(tally)
    out = []
    for field_name, wire, value in (("judge_agreement", "judgeAgreement", agreement(pairs)),
                                    ("judge_kappa", "judgeKappa", cohens(pairs))):  # fmt: skip
        drawn = None if seed is None else f"{BOOTSTRAP_SEED}:{wire}:{seed}"
        interval = unit_table_interval(tables[field_name], value, confidence, wire, replicates=resamples, seed=drawn)
        if interval is None:
            out.append(Estimate(value, None, None))
        else:
            out.append(Estimate(value, interval.low, interval.high, interval.method))
    return out[0], out[1]


def _minimum_check(metric: str, estimate: Estimate, minimum: float, confidence: float) -> CalibrationCheck:
    """A minimum on the interval's lower bound: FAIL when the lower bound is under it (or there is none)."""
    shown = f"{confidence:.0%} interval"
    if estimate.low is None or estimate.value is None or estimate.high is None:
        return CalibrationCheck(metric, "FAIL", f"no interval (no labelled paragraph judged) for minimum {minimum:.4f}",
                                minimum)  # fmt: skip
    around = f"({shown} [{estimate.low:.4f}, {estimate.high:.4f}], point {estimate.value:.4f})"
    if estimate.low < minimum:
        return CalibrationCheck(metric, "FAIL", f"lower bound {estimate.low:.4f} < {minimum:.4f} {around}", minimum)
    return CalibrationCheck(metric, "PASS", f"lower bound {estimate.low:.4f} >= {minimum:.4f} {around}", minimum)


def calibrate(
    pairs: Sequence[Pair],
    *,
    min_agreement: float | None = None,
    min_kappa: float | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int | None = None,
) -> Calibration:
    """The figures and checks of a judge over labelled paragraphs (module docstring).

    Args:
        pairs: ``(human expectedVerdict, judge label)`` per labelled paragraph asked; the
            judge label is one of ``core.judging.JUDGE_LABELS``.
        min_agreement: Minimum of agreement's lower bound, in [0, 1], or None.
        min_kappa: Minimum of κ's lower bound, in [-1, 1], or None.
        confidence: Confidence level of the intervals, in (0, 1).
        resamples: Bootstrap resamples of κ's interval (a run's by default).
        seed: Seed of κ's draws; None for a run's, so the interval is the one a run of the same
            paragraphs reports (docs/statistics.md).

    Returns:
        A :class:`Calibration`.

    Raises:
        ValueError: A pair holds a label outside ``JUDGE_VERDICTS`` (human) or ``JUDGE_LABELS``
            (judge), or ``confidence`` / ``resamples`` are out of range.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples!r}")
    for human, judge in pairs:
        if human not in JUDGE_VERDICTS:
            raise ValueError(f"human label {human!r} is not one of {', '.join(JUDGE_VERDICTS)}")
        if judge not in JUDGE_LABELS:
            raise ValueError(f"judge label {judge!r} is not one of {', '.join(JUDGE_LABELS)}")
    labels = Counter(judge for _, judge in pairs)
    unjudged, unparseable = labels[UNJUDGED], labels[UNPARSEABLE]
    agreed, kappa = _estimates(pairs, confidence, resamples, seed)
    result = Calibration(
        paragraphs=len(pairs),
        agreement=agreed,
        kappa=kappa,
        confusion=confusion(pairs),
        per_verdict=per_verdict(pairs),
        unjudged=unjudged,
        unparseable=unparseable,
        confidence=confidence,
        resamples=resamples,
        seed=seed,
    )
    checks = result.checks
    if min_agreement is not None:
        checks.append(_minimum_check("judgeAgreement", result.agreement, min_agreement, confidence))
    if min_kappa is not None:
        checks.append(_minimum_check("judgeKappa", result.kappa, min_kappa, confidence))
    if pairs and unjudged + unparseable == len(pairs):
        checks.append(CalibrationCheck("judge", "FAIL", f"the judge answered none of the {len(pairs)} paragraph(s) "
                                       f"({unjudged} unjudged, {unparseable} unparseable): it measured nothing"))  # fmt: skip
    elif checks:
        # As a judge bound arms them in a run's gate (docs/gate.md): a minimum is only as good as the answers.
        armed = "armed by the minimum"
        checks.append(CalibrationCheck("judgeErrors", "FAIL" if unjudged else "PASS",
                                       f"{unjudged} {'>' if unjudged else '<='} 0 paragraph(s) left unjudged ({armed})",
                                       0.0))  # fmt: skip
        rate = unparseable / len(pairs) if pairs else 0.0
        over = rate > UNPARSEABLE_CEILING
        checks.append(CalibrationCheck("unparseableRate", "FAIL" if over else "PASS",
                                       f"{rate:.4f} {'>' if over else '<='} {UNPARSEABLE_CEILING:.4f} ({armed})",
                                       UNPARSEABLE_CEILING))  # fmt: skip
    return result


def pairs_of(records: Sequence[Mapping[str, Any]]) -> list[Pair]:
    """The ``(expectedVerdict, judge label)`` pairs of paragraph records a judge was asked about
    (``judgeModel`` set) that carry a human label (docs/citation.md, "Paragraph records")."""
    out: list[Pair] = []
    for record in records:
        expected = record.get("expectedVerdict")
        if not record.get("judgeModel") or not isinstance(expected, str):
            continue
        out.append((expected, paragraph_label(record)))
    return out
