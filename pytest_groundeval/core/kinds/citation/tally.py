"""The citation kind's tally and metrics (docs/citation.md, "Metrics"; docs/gate.md).

Each outcome's ``extra`` figures (``citationParagraphsJudged``, the judge's and the
scorer's counts, the paragraph records a judge was asked about) are folded into a
``CitationTally`` (``tally_outcome``); ``tally_results`` turns it into the metrics of
``METRICS``. Every field of the tally is an integer, an exact ``Fraction`` or a
``Counter`` of integers, so per-worker tallies merge by addition and give the same
metrics as a plain run. Cohen's κ (``cohen_kappa``) is computed here and nowhere else.

A jury's paragraph records (docs/judges.md, "Juries") also carry each judge's record
(``judges``): those are folded per judge model (verdicts, and against the human labels)
and into a count of each paragraph's verdict pattern (the sorted verdicts its judges gave),
from which Krippendorff's alpha is computed exactly (``core.agreement``), so ``judgeAlpha``
and the per-judge tables merge as the rest does, and ``judgeAlpha``'s interval resamples
paragraphs. Without a
jury those metrics are null and nothing else changes.

``paragraph_metrics`` gives the same metrics for a list of paragraph records, as a run
of one item would (used by ``scripts/measure_judge.py``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ...agreement import pattern_alpha
from ...judging import JUDGE_LABELS, JUDGE_VERDICTS, RECORDED_VERDICTS, USAGE_KEYS, paragraph_label, record_usage
from ...outcome import ItemOutcome
from ..base import CEILING_RATE, MetricDirection, MetricSpec, Tally, UnitTable, ratio
from .assess import with_assessment

__all__ = [
    "CATCHES",
    "JUDGE_BOUNDS",
    "METRICS",
    "UNPARSEABLE_CEILING",
    "CitationTally",
    "cohen_kappa",
    "judge_tokens",
    "paragraph_catches",
    "paragraph_metrics",
    "tally_outcome",
    "tally_rate_parts",
    "tally_results",
    "tally_unit_tables",
]

CATCHES: tuple[str, ...] = (
    "deterministicCatches",
    "judgeCatches",
    "judgeOnlyCatches",
    "deterministicOnlyCatches",
    "wrongSpeaker",
    "wrongSpeakerDeterministic",
    "wrongSpeakerJudgeOnly",
)
"""Keys of ``citationCatches``, over the paragraphs a judge was asked about (docs/citation.md):

- ``deterministicCatches``: paragraphs failing the deterministic checks;
- ``judgeCatches``: paragraphs with a verdict other than ``supported`` (``unparseable`` and
  unjudged are no catch);
- ``judgeOnlyCatches``: judge catches on paragraphs the deterministic checks passed;
- ``deterministicOnlyCatches``: deterministic failures the judge called ``supported``;
- ``wrongSpeaker``: ``wrong_speaker`` verdicts; ``wrongSpeakerDeterministic``: of those, the
  paragraphs the metadata check had already flagged; ``wrongSpeakerJudgeOnly``: the others.
"""


def paragraph_catches(record: Mapping[str, Any]) -> list[str]:
    """The ``CATCHES`` keys one paragraph record the judge was asked about adds 1 to."""
    label = paragraph_label(record)
    passed = bool(record.get("deterministicPass"))
    found = [] if passed else ["deterministicCatches"]
    if label in JUDGE_VERDICTS and label != "supported":
        found.append("judgeCatches")
        if passed:
            found.append("judgeOnlyCatches")
    if not passed and label == "supported":
        found.append("deterministicOnlyCatches")
    if label == "wrong_speaker":
        found.append("wrongSpeaker")
        found.append("wrongSpeakerDeterministic" if record.get("metadataMismatch") else "wrongSpeakerJudgeOnly")
    return found


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
        if score is None:  # the scorer was unreachable for this paragraph (docs/citation.md)
            continue
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0.0 <= score <= 1.0:
            raise ValueError(
                f"item {outcome.id!r}: extra.citationCoverageScores[{i}] must be a number in [0, 1], got {score!r}"
            )
        scores.append(float(score))
    return scores


def _asked_records(
    outcome: ItemOutcome,
) -> list[tuple[str, str | None, Mapping[str, Any], list[tuple[str, str]] | None]]:
    """``(label, expectedVerdict, record, jury)`` of each paragraph record a judge was asked about (``judgeModel``
    set); ``jury`` is ``_jury_records`` of it.

    Raises:
        ValueError: ``citationParagraphs`` is not a list of objects, or a record's ``verdict``
            or ``expectedVerdict`` is not a known label; the message names the item and record.
    """
    value = outcome.extra.get("citationParagraphs")
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"item {outcome.id!r}: extra.citationParagraphs must be a list, got {type(value).__name__}")
    asked = []
    for i, record in enumerate(value):
        if not isinstance(record, Mapping):
            raise ValueError(f"item {outcome.id!r}: extra.citationParagraphs[{i}] must be an object")
        if not record.get("judgeModel"):
            continue
        verdict, expected = record.get("verdict"), record.get("expectedVerdict")
        if verdict is not None and verdict not in RECORDED_VERDICTS:
            raise ValueError(
                f"item {outcome.id!r}: extra.citationParagraphs[{i}].verdict {verdict!r} is not one of "
                f"{', '.join(RECORDED_VERDICTS)} or null"
            )
        if expected is not None and expected not in JUDGE_VERDICTS:
            raise ValueError(
                f"item {outcome.id!r}: extra.citationParagraphs[{i}].expectedVerdict {expected!r} is not one of "
                f"{', '.join(JUDGE_VERDICTS)} or null"
            )
        asked.append((paragraph_label(record), expected, record, _jury_records(outcome, i, record)))
    return asked


def _jury_records(outcome: ItemOutcome, i: int, record: Mapping[str, Any]) -> list[tuple[str, str]] | None:
    """``(judge model, label)`` of each judge of a jury's paragraph record, in order; None for one judge's.

    Raises:
        ValueError: ``judges`` is not a list of objects each naming its ``judgeModel`` once, or a
            judge's ``verdict`` is not a recorded verdict or null; the message names the item and record.
    """
    judges = record.get("judges")
    if judges is None:
        return None
    where = f"item {outcome.id!r}: extra.citationParagraphs[{i}].judges"
    if not isinstance(judges, list):
        raise ValueError(f"{where} must be a list, got {type(judges).__name__}")
    found: list[tuple[str, str]] = []
    for j, judge in enumerate(judges):
        model = judge.get("judgeModel") if isinstance(judge, Mapping) else None
        if not isinstance(model, str) or not model:
            raise ValueError(f"{where}[{j}] must be an object with a judgeModel")
        if any(model == seen for seen, _ in found):
            raise ValueError(f"{where}[{j}].judgeModel {model!r} is there twice")
        verdict = judge.get("verdict")
        if verdict is not None and verdict not in RECORDED_VERDICTS:
            raise ValueError(f"{where}[{j}].verdict {verdict!r} is not one of {', '.join(RECORDED_VERDICTS)} or null")
        found.append((model, paragraph_label(judge)))
    return found


def cohen_kappa(confusion: Mapping[tuple[str, str], int]) -> float | None:
    """Cohen's κ of a confusion table ``{(expected, got): count}``, computed exactly (docs/citation.md).

    ``κ = (p_o − p_e) / (1 − p_e)``: ``p_o`` the share of pairs that agree, ``p_e`` the
    agreement expected from the two sides' label distributions. None for an empty table;
    when ``p_e`` is 1 (both sides use one and the same label) 1.0 if every pair agrees, else 0.0.
    In whole numbers, ``κ = (agree·n − Σ row·column) / (n² − Σ row·column)``: one correctly
    rounded division, cheap enough for the thousands of resampled tables of its interval.
    """
    n = sum(confusion.values())
    if not n:
        return None
    agree = 0
    rows: dict[str, int] = {}
    columns: dict[str, int] = {}
    for (expected, got), count in confusion.items():
        if expected == got:
            agree += count
        rows[expected] = rows.get(expected, 0) + count
        columns[got] = columns.get(got, 0) + count
    chance = sum(count * columns.get(label, 0) for label, count in rows.items())
    if chance == n * n:
        return 1.0 if agree == n else 0.0
    return (agree * n - chance) / (n * n - chance)


def _judge_asked(metrics: Any) -> str | None:
    """Why an unmeasured judge metric FAILs: citation items ran and no paragraph was sent to a judge."""
    ran = metrics.items_by_kind.get("citation", 0)
    if ran > 0 and metrics.judge_errors is None:
        return (
            f"{ran} citation item(s) ran but no judge was asked: give --eval-judge-url and --eval-judge-model, "
            "or --eval-judge=mock (docs/citation.md)"
        )
    return None


def _scorer_asked(metrics: Any) -> str | None:
    """Why an unmeasured coverageScoreMean FAILs: no scorer was asked, or it gave no score at all."""
    ran = metrics.items_by_kind.get("citation", 0)
    if ran > 0 and metrics.scorer_errors is None:
        return f"{ran} citation item(s) ran but no coverage scorer was asked: give --eval-scorer-url (docs/citation.md)"
    if ran > 0 and metrics.scorer_errors:
        return f"the coverage scorer gave no score: {metrics.scorer_errors} scorer error(s), none scored"
    return None


def _jury_asked(metrics: Any) -> str | None:
    """Why an unmeasured ``judgeAlpha`` FAILs: citation items ran without a jury, or no paragraph gave it a value."""
    ran = metrics.items_by_kind.get("citation", 0)
    if ran and metrics.verdict_distribution_by_model is None:
        return (
            f"{ran} citation item(s) ran but no jury judged them: judgeAlpha needs two judges or more "
            "(--eval-judge-model repeated, or --eval-judges FILE; docs/judges.md)"
        )
    if ran:
        return (
            "judgeAlpha is undefined: no paragraph got verdicts from two judges, or every verdict given was "
            "the same one (docs/judges.md)"
        )
    return None


JUDGE_BOUNDS = (
    "citationSupportedRate",
    "wrongSpeakerRate",
    "unparseableRate",
    "judgeAgreement",
    "judgeKappa",
    "judgeAlpha",
)
"""Metrics measured by a judge: a bound on any of them arms ``judgeErrors <= 0`` and
``unparseableRate <= UNPARSEABLE_CEILING`` (docs/gate.md)."""

UNPARSEABLE_CEILING = 0.05
"""The ``unparseableRate`` ceiling a judge bound arms unless the floors give one (docs/gate.md)."""


def _counter() -> Counter[Any]:
    return Counter()


@dataclass
class CitationTally(Tally):
    """Citation paragraph counts, summed over every outcome that carries them.

    Every field is an integer, an exact ``Fraction`` or a ``Counter`` of integers, so tallies
    merge by addition and per-worker partial results give the same metrics as a plain run.
    """

    judged: int = 0
    mismatched: int = 0
    answers: int = 0
    """Outcomes carrying ``citationParagraphsJudged``: the citation answers checked (errors carry none)."""
    uncited: int = 0
    """Of ``answers``, those with no judged paragraph (no citation marker anywhere)."""
    judge_judged: int = 0
    judge_supported: int = 0
    speaker_judged: int = 0
    speaker_wrong: int = 0
    unparseable_judged: int = 0
    unparseable: int = 0
    judge_outcomes: int = 0
    """Outcomes carrying ``citationJudgeErrors`` (a judge was configured for them)."""
    judge_errors: int = 0
    scorer_outcomes: int = 0
    """Outcomes carrying ``citationScorerErrors`` (a scorer was configured for them)."""
    scorer_errors: int = 0
    coverage_scores: int = 0
    coverage_score_sum: Fraction = Fraction(0)
    verdicts: Counter[str] = field(default_factory=_counter)
    """Label (``JUDGE_LABELS``) → paragraphs the judge was asked about."""
    confusion: Counter[tuple[str, str]] = field(default_factory=_counter)
    """``(expectedVerdict, label)`` → labelled paragraphs the judge was asked about."""
    catches: Counter[str] = field(default_factory=_counter)
    """``CATCHES`` key → paragraphs."""
    jury_paragraphs: int = 0
    """Paragraphs a jury was asked about (records holding ``judges``)."""
    verdicts_by_model: Counter[tuple[str, str]] = field(default_factory=_counter)
    """``(judge model, label)`` → paragraphs a jury asked that judge about."""
    confusion_by_model: Counter[tuple[str, str, str]] = field(default_factory=_counter)
    """``(judge model, expectedVerdict, label)`` → labelled paragraphs a jury asked that judge about."""
    verdict_patterns: Counter[tuple[str, ...]] = field(default_factory=_counter)
    """The sorted verdicts of a jury's judges that gave one -> paragraphs with two or more: what Krippendorff's alpha
    (``core.agreement.pattern_alpha``) is computed from, and what its interval resamples."""
    judge_usage: Counter[tuple[str, str]] = field(default_factory=_counter)
    """``(judge model, USAGE_KEYS key)`` → tokens or replies over asked paragraphs (a record without usage: one
    reply without usage)."""
    usage_records: int = 0
    """Asked paragraph records that carry usage (``judgeReplies``); with none, ``judgeTokens`` is null."""


METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(
        "citation_metadata_accuracy",
        "Judged citation paragraphs with no metadata mismatch / judged paragraphs.",
    ),
    MetricSpec(
        "citation_uncited_answers",
        "Citation answers with no cited paragraph, so that nothing in them could be checked (each also fails "
        "as an item); null without a checked citation answer. A bound on citationMetadataAccuracy arms <= 0.",
        direction=MetricDirection("<=", rate=False),
        type_="count",
        nullable=True,
        armed_by=("citationMetadataAccuracy",),
        only_when_measured=True,
    ),
    MetricSpec(
        "citation_supported_rate",
        "Paragraphs the judge found supported / paragraphs sent to the judge (unparseable and unjudged "
        "included), over items that ran a judge.",
        silent=_judge_asked,
    ),
    MetricSpec(
        "wrong_speaker_rate",
        "Paragraphs the judge found wrong_speaker / paragraphs sent to the judge, over items that ran a judge.",
        direction=CEILING_RATE,
        silent=_judge_asked,
    ),
    MetricSpec(
        "unparseable_rate",
        "Paragraphs whose judge replies could not be parsed / paragraphs sent to the judge.",
        direction=CEILING_RATE,
        silent=_judge_asked,
        armed_by=JUDGE_BOUNDS,
        armed_bound=UNPARSEABLE_CEILING,
        useless_at=1.0,
        useless_reason="every paragraph sent to the judge came back unparseable: the judge measured nothing "
        "(docs/citation.md)",
    ),
    MetricSpec(
        "judge_errors",
        "Paragraphs sent to the judge and left unjudged (down, rate-limited, timed out); null without a judge.",
        direction=MetricDirection("<=", rate=False),
        type_="count",
        nullable=True,
        silent=_judge_asked,
        armed_by=JUDGE_BOUNDS,
    ),
    MetricSpec(
        "coverage_score_mean",
        "Mean citation coverage score in [0, 1] over paragraphs the scorer scored (nulls skipped).",
        silent=_scorer_asked,
    ),
    MetricSpec(
        "scorer_errors",
        "Paragraphs sent to the coverage scorer that got no score; null without a scorer.",
        direction=MetricDirection("<=", rate=False),
        type_="count",
        nullable=True,
        silent=_scorer_asked,
        armed_by=("coverageScoreMean",),
    ),
    MetricSpec(
        "judge_agreement",
        "Human-labelled paragraphs whose judge verdict equals expectedVerdict / labelled paragraphs sent to the "
        "judge (unparseable and unjudged count as disagreements).",
        silent=_judge_asked,
    ),
    MetricSpec(
        "judge_kappa",
        "Cohen's kappa between expectedVerdict and the judge over the same paragraphs (in [-1, 1]).",
        silent=_judge_asked,
        minimum=-1.0,
    ),
    MetricSpec(
        "judge_alpha",
        "Krippendorff's alpha (nominal) of a jury's judges' verdicts over the paragraphs at least two of them gave "
        "a verdict (unparseable and unjudged are missing values), in [-1, 1]; null without a jury.",
        silent=_jury_asked,
        minimum=-1.0,
    ),
    MetricSpec(
        "verdict_distribution",
        "Paragraphs sent to the judge, per verdict, unparseable and unjudged; null without a judge.",
        direction=None,
        type_="table",
    ),
    MetricSpec(
        "judge_confusion",
        "Labelled paragraphs sent to the judge: {expectedVerdict: {judge's label: count}}, non-zero cells only; "
        "null with none.",
        direction=None,
        type_="table",
    ),
    MetricSpec(
        "citation_catches",
        "Deterministic vs judge catches over paragraphs sent to the judge (docs/citation.md); null without a judge.",
        direction=None,
        type_="table",
    ),
    MetricSpec(
        "judge_agreement_by_model",
        "Per judge of a jury: human-labelled paragraphs whose verdict equals expectedVerdict / labelled paragraphs "
        "(unparseable and unjudged count as disagreements); null without a jury or labels.",
        direction=None,
        type_="table",
        cells="figures",
    ),
    MetricSpec(
        "judge_kappa_by_model",
        "Per judge of a jury: Cohen's kappa between expectedVerdict and that judge over the labelled paragraphs "
        "(in [-1, 1]); null without a jury or labels.",
        direction=None,
        type_="table",
        cells="figures",
        minimum=-1.0,
    ),
    MetricSpec(
        "verdict_distribution_by_model",
        "Per judge of a jury: paragraphs per verdict, unparseable and unjudged (that judge's errors); null without "
        "a jury.",
        direction=None,
        type_="table",
    ),
    MetricSpec(
        "judge_tokens",
        "Tokens the judge's replies reported, per judge model (each judge of a jury): {model: {promptTokens, "
        "completionTokens, replies, "
        "repliesWithoutUsage}}; a reply without usage is counted there, never as 0 tokens (docs/judges.md); "
        "null without a judge.",
        direction=None,
        type_="table",
    ),
)
"""The citation kind's metrics, in report order (docs/citation.md, "Metrics")."""


def tally_outcome(tally: CitationTally, outcome: ItemOutcome) -> None:
    """Fold the citation figures of any outcome's ``extra`` into ``tally``.

    Raises:
        ValueError: a figure has the wrong type or exceeds the judged count.
    """
    judged = _extra_count(outcome, "citationParagraphsJudged")
    if judged is not None:
        tally.judged += judged
        tally.answers += 1
        tally.uncited += judged == 0
        tally.mismatched += _part_of_judged(outcome, "citationParagraphsMismatched", judged) or 0
        supported = _part_of_judged(outcome, "citationParagraphsSupported", judged)
        if supported is not None:
            tally.judge_judged += judged
            tally.judge_supported += supported
        wrong_speaker = _part_of_judged(outcome, "citationParagraphsWrongSpeaker", judged)
        if wrong_speaker is not None:
            tally.speaker_judged += judged
            tally.speaker_wrong += wrong_speaker
        unparseable = _part_of_judged(outcome, "citationParagraphsUnparseable", judged)
        if unparseable is not None:
            tally.unparseable_judged += judged
            tally.unparseable += unparseable
        judge_errors = _part_of_judged(outcome, "citationJudgeErrors", judged)
        if judge_errors is not None:
            tally.judge_outcomes += 1
            tally.judge_errors += judge_errors
        scorer_errors = _part_of_judged(outcome, "citationScorerErrors", judged)
        if scorer_errors is not None:
            tally.scorer_outcomes += 1
            tally.scorer_errors += scorer_errors
    scores = _extra_scores(outcome)
    if scores:  # most outcomes carry none: no Fraction arithmetic for them
        tally.coverage_scores += len(scores)
        tally.coverage_score_sum += sum(map(Fraction, scores), Fraction(0))
    for i, (label, expected, record, jury) in enumerate(_asked_records(outcome)):
        tally.verdicts[label] += 1
        if expected is not None:
            tally.confusion[(expected, label)] += 1
        tally.catches.update(paragraph_catches(record))
        _tally_usage(tally, f"item {outcome.id!r}: extra.citationParagraphs (asked record {i})", record)
        if jury is not None:
            tally.jury_paragraphs += 1
            for model, judge_label in jury:
                tally.verdicts_by_model[(model, judge_label)] += 1
                if expected is not None:
                    tally.confusion_by_model[(model, expected, judge_label)] += 1
            pattern = tuple(sorted(v for _, v in jury if v in JUDGE_VERDICTS))
            if len(pattern) >= 2:  # fewer than two verdicts: nothing pairable, no part of alpha
                tally.verdict_patterns[pattern] += 1


def _tally_usage(tally: CitationTally, where: str, record: Mapping[str, Any]) -> None:
    """Fold one asked record's judge tokens into ``tally.judge_usage``, per judge model: a jury's record
    (``judges``, already checked by ``_jury_records``) by each of its judges, so that ``judgeTokens`` names
    the models a prices file prices, never the jury's name.

    Raises:
        ValueError: a usage field is invalid (``core.judging.record_usage``); the message starts with ``where``.
    """
    judges = record.get("judges")
    sources: Sequence[Mapping[str, Any]] = judges if isinstance(judges, list) else [record]
    carried = False
    for n, source in enumerate(sources):
        try:
            usage = record_usage(source)
        except ValueError as exc:
            at = where if judges is None else f"{where}.judges[{n}]"
            raise ValueError(f"{at}: {exc}") from None
        if usage is None:
            # Written before usage was recorded: one reply of unknown tokens (shown only beside records that carry usage).
            usage = (0, 0, 1, 1)
        else:
            carried = True
        model = str(source.get("judgeModel"))
        for key, count in zip(USAGE_KEYS, usage):
            tally.judge_usage[(model, key)] += count
    if carried:
        tally.usage_records += 1


def _by_model(tally: CitationTally) -> dict[str, Any]:
    """The per-judge tables and alpha of a jury's paragraphs (``tally_results``); all None without a jury."""
    if not tally.jury_paragraphs:
        return {"judge_alpha": None, "judge_agreement_by_model": None, "judge_kappa_by_model": None,
                "verdict_distribution_by_model": None}  # fmt: skip
    models = sorted({model for model, _ in tally.verdicts_by_model})  # sorted: the same under xdist
    confusions: dict[str, Counter[tuple[str, str]]] = {model: Counter() for model in models}
    for (model, expected, label), count in tally.confusion_by_model.items():
        confusions.setdefault(model, Counter())[(expected, label)] += count
    labelled = any(sum(table.values()) for table in confusions.values())
    return {
        "judge_alpha": pattern_alpha(tally.verdict_patterns),
        "judge_agreement_by_model": {model: agreement_of(confusions[model]) for model in models} if labelled else None,
        "judge_kappa_by_model": {model: cohen_kappa(confusions[model]) for model in models} if labelled else None,
        "verdict_distribution_by_model": {
            model: {label: tally.verdicts_by_model[(model, label)] for label in JUDGE_LABELS} for model in models
        },
    }


def tally_results(tally: CitationTally) -> dict[str, Any]:
    """The citation metrics of ``tally``, keyed by ``MetricSpec.field`` (``METRICS``); JSON built-ins, None for n/a."""
    asked = tally.judge_outcomes > 0
    labelled = sum(tally.confusion.values())
    return {
        "citation_metadata_accuracy": ratio(tally.judged - tally.mismatched, tally.judged),
        "citation_uncited_answers": tally.uncited if tally.answers else None,
        "citation_supported_rate": ratio(tally.judge_supported, tally.judge_judged),
        "wrong_speaker_rate": ratio(tally.speaker_wrong, tally.speaker_judged),
        "unparseable_rate": ratio(tally.unparseable, tally.unparseable_judged),
        "judge_errors": tally.judge_errors if asked else None,
        "coverage_score_mean": ratio(tally.coverage_score_sum, tally.coverage_scores),
        "scorer_errors": tally.scorer_errors if tally.scorer_outcomes else None,
        "judge_agreement": agreement_of(tally.confusion),
        "judge_kappa": cohen_kappa(tally.confusion),
        "verdict_distribution": {label: tally.verdicts[label] for label in JUDGE_LABELS} if asked else None,
        "judge_confusion": confusion_table(tally.confusion) if labelled else None,
        "citation_catches": {key: tally.catches[key] for key in CATCHES} if asked else None,
        **_by_model(tally),
        "judge_tokens": judge_tokens(tally),
    }


def judge_tokens(tally: CitationTally) -> dict[str, dict[str, int]] | None:
    """``judgeTokens``: per judge model (sorted), its ``USAGE_KEYS`` counts; None when no asked record carries usage.

    A paragraph record written before usage was recorded (an earlier report or history) carries none;
    a run holding only such records has no ``judgeTokens`` (its judge cost is unknown, docs/judges.md).
    """
    if not tally.usage_records:
        return None
    models = sorted({model for model, _ in tally.judge_usage})
    return {model: {key: tally.judge_usage[(model, key)] for key in USAGE_KEYS} for model in models}


def tally_rate_parts(tally: CitationTally) -> dict[str, tuple[Any, int]]:
    """``(numerator, denominator)`` of each citation metric that is a ratio of sums over items
    (``Kind.rate_parts``): ``tally_results`` divides the same pairs."""
    return {
        "citation_metadata_accuracy": (tally.judged - tally.mismatched, tally.judged),
        "citation_supported_rate": (tally.judge_supported, tally.judge_judged),
        "wrong_speaker_rate": (tally.speaker_wrong, tally.speaker_judged),
        "unparseable_rate": (tally.unparseable, tally.unparseable_judged),
        "coverage_score_mean": (tally.coverage_score_sum, tally.coverage_scores),
    }


def agreement_of(confusion: Mapping[tuple[str, str], int]) -> float | None:
    """The share of labelled paragraphs whose judge label is their ``expectedVerdict`` (``judgeAgreement``).

    ``confusion`` maps ``(expectedVerdict, judge label)`` to a count; None when it counts nothing.
    """
    return ratio(sum(count for (expected, got), count in confusion.items() if expected == got), sum(confusion.values()))


def confusion_table(confusion: Mapping[tuple[str, str], int]) -> dict[str, dict[str, int]]:
    """``{expectedVerdict: {judge label: count}}``: the non-zero cells of ``confusion``, rows and columns
    in report order (``judgeConfusion``, docs/citation.md)."""
    table: dict[str, dict[str, int]] = {}
    for expected in JUDGE_VERDICTS:
        row = {got: confusion.get((expected, got), 0) for got in JUDGE_LABELS if confusion.get((expected, got), 0)}
        if row:
            table[expected] = row
    return table


def _agrees(cell: tuple[str, str]) -> bool:
    return cell[0] == cell[1]


def _alpha_statistic() -> Callable[[Mapping[tuple[str, ...], int]], float | None]:
    cells: dict[tuple[str, ...], Any] = {}

    def alpha(patterns: Mapping[tuple[str, ...], int]) -> float | None:
        return pattern_alpha(patterns, cells)

    return alpha


def tally_unit_tables(tally: CitationTally) -> dict[str, UnitTable]:
    """Judge agreement and Cohen's kappa as figures of the labelled paragraphs' confusion table,
    and a jury's ``judgeAlpha`` as a figure of its paragraphs' verdict patterns (``Kind.unit_tables``):
    their intervals resample paragraphs (docs/statistics.md)."""
    confusion = dict(tally.confusion)
    tables = {
        "judge_agreement": UnitTable(confusion, agreement_of, success=_agrees),
        "judge_kappa": UnitTable(confusion, cohen_kappa),
    }
    if tally.verdict_patterns:
        tables["judge_alpha"] = UnitTable(dict(tally.verdict_patterns), _alpha_statistic())
    return tables


def paragraph_metrics(records: Sequence[Mapping[str, Any]], *, judged: bool, scored: bool) -> dict[str, Any]:
    """The citation metrics of one list of paragraph records, as a run of one citation item holding them gives.

    Args:
        records: Paragraph records as ``assess.assess_paragraphs`` returns them: ``deterministicPass``,
            ``metadataMismatch`` and the judge's and scorer's fields (docs/citation.md, "Paragraph records").
        judged: A judge was asked about every record (the judge's metrics are None otherwise).
        scored: A scorer was asked about every record (``scorerErrors`` is None otherwise).

    Returns:
        ``tally_results`` of a tally holding the records: ``MetricSpec.field`` → value (``METRICS``).

    Raises:
        ValueError: a record's ``verdict`` or ``expectedVerdict`` is not a known label, or a
            coverage score is not a number in [0, 1].
    """
    outcome = ItemOutcome(
        id="paragraphs",
        kind="citation",
        passed=True,
        detail="",
        extra={
            "citationParagraphsJudged": len(records),
            "citationParagraphsMismatched": sum(1 for record in records if not record.get("deterministicPass")),
        },
    )
    tally = CitationTally()
    tally_outcome(tally, with_assessment(outcome, records, judged=judged, scored=scored))
    return tally_results(tally)
