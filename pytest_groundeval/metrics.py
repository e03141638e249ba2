"""Session metrics (SPEC §9, §11) aggregated from per-item outcomes.

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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from fractions import Fraction
from typing import Any

from pydantic import Field

from ._model import WireModel
from .outcome import ItemKind, ItemOutcome

ITEM_KINDS: tuple[ItemKind, ...] = ("qa", "adversarial", "temporal", "citation", "review")
"""Every item kind, in report order (SPEC §2)."""

CITATION_EXTRA_KEYS = (
    "citationParagraphsJudged",
    "citationParagraphsMismatched",
    "citationParagraphsSupported",
    "citationParagraphsWrongSpeaker",
    "citationCoverageScores",
)
"""``ItemOutcome.extra`` keys read for the citation metrics (SPEC §11)."""


class Metrics(WireModel):
    """Every metric of a run (SPEC §9, §11). A rate with nothing to measure is None."""

    retrieval_recall: float | None = None
    """Expected evidence strings found in retrieved spans / expected evidence strings, summed over
    qa items; an errored qa item counts its expected strings as not found."""
    claim_support_precision: float | None = None
    """Claims marked ``supported`` that are true / claims marked ``supported``, summed over qa items."""
    claim_support_recall: float | None = None
    """True, cited claims marked ``supported`` / true, cited claims, summed over qa items."""
    falsehood_rejection: float | None = None
    """Adversarial items that ran and did not support the planted falsehood / adversarial items;
    an errored item, or one whose outcome does not say, counts as not rejected."""
    temporal_accuracy: float | None = None
    """Temporal items passed / temporal items; an errored item counts as failed."""
    evidence_risk_score: float | None = None
    """Mean evidence-risk ``score`` (SPEC §8) over reviewed evidence blocks only (``reviewed: true``)."""
    latency_ms_p50: float | None = None
    """Median client-side wall time of ``/v1/generate`` in ms, linear interpolation between closest
    ranks (numpy's default), over items with a generate call."""
    latency_ms_p95: float | None = None
    """95th percentile of the same latencies in ms, same interpolation."""
    tokens_per_query: float | None = None
    """Mean prompt + completion tokens over items whose generate call reported tokens (a missing
    half counts as 0)."""
    errors: int = 0
    """Items that could not be run (target down, timeout, malformed response)."""
    items: int = 0
    """Items that ran or errored (every outcome aggregated)."""
    items_by_kind: dict[str, int] = Field(default_factory=lambda: dict.fromkeys(ITEM_KINDS, 0))
    """Outcomes per item kind; every kind is present, 0 when absent."""
    qa_claims: int = 0
    """Claims returned over all qa items, whatever their verdict: with qa items run and
    none returned, the claim metrics are n/a because the target said nothing, which the
    gate fails rather than skips."""
    citation_metadata_accuracy: float | None = None
    """Judged citation paragraphs with no metadata mismatch / judged paragraphs (SPEC §11)."""
    citation_supported_rate: float | None = None
    """Paragraphs the judge found ``supported`` / judged paragraphs, over items that ran a judge."""
    wrong_speaker_rate: float | None = None
    """Paragraphs the judge found ``wrong_speaker`` / judged paragraphs, over items that ran a judge."""
    coverage_score_mean: float | None = None
    """Mean citation coverage score in [0, 1] over paragraphs the scorer scored (nulls skipped)."""


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


def _ratio(numerator: int | Fraction, denominator: int) -> float | None:
    return float(Fraction(numerator, denominator)) if denominator else None


def _extra_count(outcome: ItemOutcome, key: str) -> int | None:
    value = outcome.extra.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"item {outcome.id!r}: extra.{key} must be a non-negative integer, got {value!r}")
    return value


def _part_of_judged(outcome: ItemOutcome, key: str, judged: int) -> int | None:
    value = _extra_count(outcome, key)
    if value is not None and value > judged:
        raise ValueError(
            f"item {outcome.id!r}: extra.{key} ({value}) exceeds extra.citationParagraphsJudged ({judged})"
        )
    return value


def _extra_scores(outcome: ItemOutcome) -> list[float]:
    value = outcome.extra.get("citationCoverageScores")
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"item {outcome.id!r}: extra.citationCoverageScores must be a list, got {value!r}")
    scores = []
    for i, score in enumerate(value):
        if score is None:  # the scorer was unreachable for this paragraph (SPEC §11)
            continue
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0.0 <= score <= 1.0:
            raise ValueError(
                f"item {outcome.id!r}: extra.citationCoverageScores[{i}] must be a number in [0, 1], got {score!r}"
            )
        scores.append(float(score))
    return scores


@dataclass
class MetricsAccumulator:
    """Incremental metrics: ``add`` outcomes one at a time, ``merge`` partial results, ``result``.

    Holds counters plus one ``array('d')`` of latencies (8 bytes per generate
    call), so 100k items fit in well under a megabyte. Score sums are exact
    ``Fraction``s so that the result does not depend on the order in which
    outcomes (or xdist workers' partial results) arrive.
    """

    items: int = 0
    errors: int = 0
    evidence_expected: int = 0
    evidence_found: int = 0
    claims_returned: int = 0
    claims_supported: int = 0
    claims_supported_true: int = 0
    claims_true_cited: int = 0
    claims_true_cited_supported: int = 0
    adversarial_items: int = 0
    falsehoods_rejected: int = 0
    temporal_items: int = 0
    temporal_passed: int = 0
    reviews: int = 0
    review_score_sum: Fraction = Fraction(0)
    token_calls: int = 0
    token_sum: int = 0
    citation_judged: int = 0
    citation_mismatched: int = 0
    judge_judged: int = 0
    judge_supported: int = 0
    speaker_judged: int = 0
    speaker_wrong: int = 0
    coverage_scores: int = 0
    coverage_score_sum: Fraction = Fraction(0)
    qa_items: int = 0
    citation_items: int = 0
    review_items: int = 0
    latencies_ms: array = field(default_factory=lambda: array("d"))

    def add(self, outcome: ItemOutcome) -> None:
        """Fold one item's outcome into the counters.

        Raises:
            ValueError: A latency is negative or not finite, or a citation figure in
                ``outcome.extra`` has the wrong type; the message names the item.
        """
        self.items += 1
        errored = outcome.errored
        self.errors += errored
        kind = outcome.kind
        if kind == "qa":
            self._add_qa(outcome, errored)
        elif kind == "adversarial":
            self.adversarial_items += 1
            self.falsehoods_rejected += not errored and outcome.falsehood_supported is False
        elif kind == "temporal":
            self.temporal_items += 1
            self.temporal_passed += not errored and outcome.passed
        elif kind == "citation":
            self.citation_items += 1
        else:
            self.review_items += 1
        self._add_review(outcome)
        self._add_generate_call(outcome)
        self._add_citation(outcome)

    def _add_qa(self, outcome: ItemOutcome, errored: bool) -> None:
        self.qa_items += 1
        self.evidence_expected += outcome.evidence_expected
        if not errored:
            self.evidence_found += outcome.evidence_found
        self.claims_returned += outcome.claims_returned
        self.claims_supported += outcome.claims_supported
        self.claims_supported_true += outcome.claims_supported_true
        self.claims_true_cited += outcome.claims_true_cited
        self.claims_true_cited_supported += outcome.claims_true_cited_supported

    def _add_review(self, outcome: ItemOutcome) -> None:
        review = outcome.evidence_review
        if review is not None and review.reviewed:
            self.reviews += 1
            self.review_score_sum += Fraction(review.score)

    def _add_generate_call(self, outcome: ItemOutcome) -> None:
        latency = outcome.latency_ms
        if latency is not None:
            if not math.isfinite(latency) or latency < 0:
                raise ValueError(f"item {outcome.id!r}: latencyMs must be a finite number >= 0, got {latency!r}")
            self.latencies_ms.append(latency)
        if outcome.prompt_tokens is not None or outcome.completion_tokens is not None:
            self.token_calls += 1
            self.token_sum += (outcome.prompt_tokens or 0) + (outcome.completion_tokens or 0)

    def _add_citation(self, outcome: ItemOutcome) -> None:
        judged = _extra_count(outcome, "citationParagraphsJudged")
        if judged is not None:
            self.citation_judged += judged
            self.citation_mismatched += _part_of_judged(outcome, "citationParagraphsMismatched", judged) or 0
            supported = _part_of_judged(outcome, "citationParagraphsSupported", judged)
            if supported is not None:
                self.judge_judged += judged
                self.judge_supported += supported
            wrong_speaker = _part_of_judged(outcome, "citationParagraphsWrongSpeaker", judged)
            if wrong_speaker is not None:
                self.speaker_judged += judged
                self.speaker_wrong += wrong_speaker
        scores = _extra_scores(outcome)
        self.coverage_scores += len(scores)
        self.coverage_score_sum += sum(map(Fraction, scores), Fraction(0))

    def merge(self, other: MetricsAccumulator) -> MetricsAccumulator:
        """Add another accumulator's counts into this one (xdist workers); returns ``self``."""
        for f in fields(self):
            if f.name == "latencies_ms":
                self.latencies_ms.extend(other.latencies_ms)
            else:
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        return self

    def result(self) -> Metrics:
        """The metrics of everything added so far (SPEC §9)."""
        latencies = sorted(self.latencies_ms)
        return Metrics(
            retrieval_recall=_ratio(self.evidence_found, self.evidence_expected),
            claim_support_precision=_ratio(self.claims_supported_true, self.claims_supported),
            claim_support_recall=_ratio(self.claims_true_cited_supported, self.claims_true_cited),
            falsehood_rejection=_ratio(self.falsehoods_rejected, self.adversarial_items),
            temporal_accuracy=_ratio(self.temporal_passed, self.temporal_items),
            evidence_risk_score=_ratio(self.review_score_sum, self.reviews),
            latency_ms_p50=percentile(latencies, 50),
            latency_ms_p95=percentile(latencies, 95),
            tokens_per_query=_ratio(self.token_sum, self.token_calls),
            errors=self.errors,
            items=self.items,
            qa_claims=self.claims_returned,
            items_by_kind={
                "qa": self.qa_items,
                "adversarial": self.adversarial_items,
                "temporal": self.temporal_items,
                "citation": self.citation_items,
                "review": self.review_items,
            },
            citation_metadata_accuracy=_ratio(self.citation_judged - self.citation_mismatched, self.citation_judged),
            citation_supported_rate=_ratio(self.judge_supported, self.judge_judged),
            wrong_speaker_rate=_ratio(self.speaker_wrong, self.speaker_judged),
            coverage_score_mean=_ratio(self.coverage_score_sum, self.coverage_scores),
        )


def compute_metrics(outcomes: Iterable[ItemOutcome | dict[str, Any]]) -> Metrics:
    """Metrics of a run from its outcomes (SPEC §9).

    Args:
        outcomes: ``ItemOutcome``s, or their wire dicts (as read back from
            ``report.user_properties``), in any order.

    Returns:
        The metrics; identical for any order or partition of the same outcomes.
    """
    accumulator = MetricsAccumulator()
    for outcome in outcomes:
        accumulator.add(outcome if isinstance(outcome, ItemOutcome) else ItemOutcome.model_validate(outcome))
    return accumulator.result()
