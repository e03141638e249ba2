"""Ask a judge and a coverage scorer about the cited paragraphs of one citation answer (docs/citation.md).

The deterministic checks (``checks.judge_citation``) give one record per cited paragraph
in ``extra.citationParagraphs``. ``assess_citation`` sends each to the runner's judge
(a ``core.judging.Judge``) and coverage scorer (a ``core.judging.Scorer``), through
``assess_paragraphs``, which adds to a copy of each record the judge's verdict, the
coverage score and the human label of the paragraph; ``with_assessment`` folds the
records and their counts into the outcome.

``source_details`` gives each marker's text and metadata, for a recorded answer or for
a target's evidence spans; ``judge_payload`` builds the judge's input. The rejudge
adapter of the run history builds its judge input with the same two.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...judging import (
    JUDGE_LABELS,
    RECORDED_VERDICTS,
    UNJUDGED,
    UNPARSEABLE,
    Judge,
    JudgeInput,
    JudgeResult,
    Scorer,
    ScoreResult,
    judge_input,
    paragraph_label,
)
from ...outcome import ItemOutcome
from .checks import source_map
from .model import CitationItem
from .text import paragraphs

if TYPE_CHECKING:
    from ...dataset import Dataset

__all__ = [
    "MAX_OTHER_SOURCES",
    "assess_citation",
    "assess_paragraphs",
    "checked_judge_result",
    "checked_score_result",
    "judge_payload",
    "paragraph_labels",
    "source_details",
    "with_assessment",
]

MAX_OTHER_SOURCES = 8
"""Sources cited elsewhere in the answer shown to the judge for ``wrong_attribution``, at most."""


def source_details(
    item: CitationItem,
    evidence: Sequence[Mapping[str, Any]] | None = None,
    documents: Mapping[str, Any] | None = None,
    target_sources: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Marker → ``{"text": str, "metadata": {str: str}}`` for the sources an answer may cite.

    Args:
        item: The citation item.
        evidence: The target's evidence entries ``{"marker", "document", "start", "end"}``,
            or None for the item's recorded ``response``.
        documents: Corpus name → loaded document (``Dataset.documents``); a target's
            evidence text is the document's canonical bytes ``[start, end)``.
        target_sources: The generate response's ``sources`` (``checks.source_map``), if any.

    Returns:
        Metadata as ``checks.source_map`` merges it; text from the
        recorded source's ``text`` (recorded answer) or the evidence span (target answer),
        else a target source's ``text``; "" when there is none or the span is invalid.
    """
    metadata = source_map(item, evidence, target_sources)
    texts: dict[str, str] = {}
    if evidence is None:
        recorded = item.response.sources if item.response is not None else []
        for source in recorded:
            if source.text:
                texts.setdefault(source.marker, source.text)
    else:
        for entry in evidence:
            marker, name = entry.get("marker"), entry.get("document")
            document = (documents or {}).get(name) if isinstance(name, str) else None
            if not isinstance(marker, str) or document is None:
                continue
            try:
                texts.setdefault(marker, document.slice(entry.get("start"), entry.get("end")))
            except (ValueError, TypeError):
                continue
        for entry in target_sources or ():
            marker, text = entry.get("marker"), entry.get("text")
            if isinstance(marker, str) and isinstance(text, str) and text:
                texts.setdefault(marker, text)
    return {marker: {"text": texts.get(marker, ""), "metadata": dict(meta)} for marker, meta in metadata.items()}


def paragraph_labels(item: CitationItem) -> dict[int, str]:
    """Paragraph index → human ``expectedVerdict`` from the item's ``paragraphLabels`` (empty when none)."""
    return {label.index: label.expected_verdict for label in item.paragraph_labels}


def judge_payload(record: Mapping[str, Any], paragraph: str, sources: Mapping[str, Mapping[str, Any]]) -> JudgeInput:
    """The judge input of one paragraph record: its cited sources in full, and the answer's other sources.

    Args:
        record: One ``extra.citationParagraphs`` record (``markers``, ``metadataMismatch``).
        paragraph: The paragraph's full text (the record's ``text`` is cut for the report).
        sources: Marker → ``{"text", "metadata"}`` (:func:`source_details`); unknown markers are skipped.
    """
    markers = list(record.get("markers") or [])
    cited = [{"marker": m, **sources[m]} for m in markers if m in sources]
    others = [{"marker": m, **s} for m, s in sources.items() if m not in markers][:MAX_OTHER_SOURCES]
    return judge_input(paragraph, cited, others, record.get("metadataMismatch") or [])


def _named(client: object, kind: str) -> str:
    """``the judge LengthJudge (model 'length-judge')``: a judge or scorer as its errors name it."""
    model = getattr(client, "model", None)
    named = f"the {kind} {type(client).__qualname__}"
    return f"{named} (model {model!r})" if isinstance(model, str) and model else named


def _shown(value: object) -> str:
    """A short repr of what a judge or scorer returned, for an error text."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def checked_judge_result(judge: Judge, result: object) -> JudgeResult:
    """What ``judge.judge`` returned, as a result the report can hold; anything else is a judge error.

    The boundary where an extension's judge (docs/extending.md) enters core: a result that
    is not a :class:`JudgeResult`, a verdict outside ``RECORDED_VERDICTS``, a verdict with an
    empty rationale, or no verdict and no ``error`` leaves the paragraph unjudged (counted in
    ``judgeErrors``), with a ``judgeError`` naming the judge and what was wrong; never a crash.
    A result without ``model`` records the judge's own ``model``.

    Args:
        judge: The judge asked (named in the error text; its ``model`` fills a missing one).
        result: What its ``judge`` coroutine returned.

    Returns:
        ``result`` itself when it is sound (its ``model`` filled in when ""), else an unjudged
        :class:`JudgeResult` (``verdict`` None, ``error`` set).
    """
    own = getattr(judge, "model", None)
    model = own if isinstance(own, str) else ""
    problem = None
    if not isinstance(result, JudgeResult):
        problem = f"returned {type(result).__name__} {_shown(result)}, not a JudgeResult"
    elif result.verdict is None:
        if not isinstance(result.error, str) or not result.error.strip():
            problem = "returned no verdict and no error"
    elif not isinstance(result.verdict, str) or result.verdict not in RECORDED_VERDICTS:
        problem = f"returned verdict {result.verdict!r}, not one of {', '.join(RECORDED_VERDICTS)}"
    elif not isinstance(result.rationale, str) or not result.rationale.strip():
        problem = f"returned verdict {result.verdict!r} with an empty rationale"
    if problem is not None:
        recorded = result.model if isinstance(result, JudgeResult) and isinstance(result.model, str) else ""
        return JudgeResult(
            verdict=None,
            model=recorded or model,
            error=f'{_named(judge, "judge")} {problem} (docs/extending.md, "A judge of your own")',
        )
    assert isinstance(result, JudgeResult)
    if not isinstance(result.model, str) or not result.model:
        result.model = model
    return result


def checked_score_result(scorer: Scorer, result: object) -> ScoreResult:
    """What ``scorer.score`` returned, as a result the report can hold; anything else is a scorer error.

    As :func:`checked_judge_result`: a result that is not a :class:`ScoreResult`, or whose
    ``score`` is neither None nor a number in [0, 1], gives no score and a ``scorerError``
    naming the scorer and what was wrong (counted in ``scorerErrors``).
    """
    problem = None
    if not isinstance(result, ScoreResult):
        problem = f"returned {type(result).__name__} {_shown(result)}, not a ScoreResult"
    elif result.score is not None and (
        isinstance(result.score, bool) or not isinstance(result.score, (int, float)) or not 0.0 <= result.score <= 1.0
    ):
        problem = f"returned score {result.score!r}, not a number in [0, 1]"
    if problem is not None:
        return ScoreResult(score=None, error=f"{_named(scorer, 'scorer')} {problem} (docs/extending.md)")
    assert isinstance(result, ScoreResult)
    return result


async def assess_paragraphs(
    records: Sequence[Mapping[str, Any]],
    *,
    answer: str,
    sources: Mapping[str, Mapping[str, Any]],
    judge: Judge | None = None,
    scorer: Scorer | None = None,
    labels: Mapping[int, str] | None = None,
) -> list[dict[str, Any]]:
    """Add judge, scorer and label fields to copies of the paragraph records of one answer.

    Every record is returned, in order, whatever the judge or scorer did. The answer's
    sources that a paragraph does not cite (up to ``MAX_OTHER_SOURCES``, in ``sources``
    order) are shown to the judge as ``otherSources``, so it can tell a
    ``wrong_attribution``.

    Args:
        records: ``extra.citationParagraphs`` of the deterministic outcome.
        answer: The full answer (the records' ``index`` is into ``text.paragraphs(answer)``).
        sources: Marker → ``{"text", "metadata"}`` (:func:`source_details`).
        judge: The judge, or None (verdict fields are then None and ``judgeModel`` None).
        scorer: The coverage scorer, or None.
        labels: Paragraph index → human ``expectedVerdict`` (:func:`paragraph_labels`).

    Returns:
        One dict per record: its fields plus ``verdict``, ``rationale``, ``judgeModel``,
        ``judgeError``, ``judgeAttempts``, ``judgeCached``, ``parseFailures``,
        ``coverageScore``, ``coverageLogit``, ``coverageTruncated``, ``scorerError`` and
        ``expectedVerdict`` (docs/citation.md, "Paragraph records").
    """
    texts = paragraphs(answer)

    async def judged(judge: Judge, payload: JudgeInput) -> JudgeResult:
        return checked_judge_result(judge, await judge.judge(payload))

    async def scored(scorer: Scorer, paragraph: str, cited: list[str]) -> ScoreResult:
        return checked_score_result(scorer, await scorer.score(paragraph, cited))

    async def one(record: Mapping[str, Any]) -> dict[str, Any]:
        index = record.get("index")
        paragraph = texts[index] if isinstance(index, int) and 0 <= index < len(texts) else str(record.get("text", ""))
        out = dict(record)
        out.update(
            verdict=None, rationale="", judgeModel=None, judgeError=None, judgeAttempts=0, judgeCached=False,
            parseFailures=[], coverageScore=None, coverageLogit=None, coverageTruncated=False, scorerError=None,
        )  # fmt: skip
        out["expectedVerdict"] = (labels or {}).get(index) if isinstance(index, int) else None
        markers = [m for m in record.get("markers") or [] if m in sources]
        tasks: list[Awaitable[JudgeResult | ScoreResult]] = []
        if judge is not None:
            tasks.append(judged(judge, judge_payload(record, paragraph, sources)))
        if scorer is not None:
            tasks.append(scored(scorer, paragraph, [sources[m].get("text", "") for m in markers]))
        results = await asyncio.gather(*tasks)
        for result in results:
            out.update(result.to_record())
        return out

    return list(await asyncio.gather(*(one(record) for record in records)))


def with_assessment(
    outcome: ItemOutcome, records: Sequence[Mapping[str, Any]], *, judged: bool, scored: bool
) -> ItemOutcome:
    """``outcome`` with the judge's and the scorer's paragraph records and their counts (docs/citation.md).

    The item's ``passed`` is unchanged: the deterministic checks decide an item, the judge's
    and scorer's figures are gated as metrics, and only when a floor is set.

    Args:
        outcome: The deterministic outcome of ``judge_citation``.
        records: Its ``extra.citationParagraphs`` with the judge and scorer fields added
            (``assess_paragraphs``), one per record, in order.
        judged: A judge was asked about every record.
        scored: A scorer was asked about every record.

    Returns:
        A copy whose ``extra`` holds the records and, with a judge,
        ``citationParagraphsSupported``, ``citationParagraphsWrongSpeaker``,
        ``citationParagraphsUnparseable`` and ``citationJudgeErrors`` (counts of paragraphs);
        with a scorer, ``citationCoverageScores`` (one score in [0, 1] or null per paragraph)
        and ``citationScorerErrors``. ``detail`` gains one line per source of figures.
    """
    extra = dict(outcome.extra)
    extra["citationParagraphs"] = [dict(record) for record in records]
    lines = [outcome.detail]
    if judged:
        labels = Counter(paragraph_label(record) for record in records)
        extra["citationParagraphsSupported"] = labels["supported"]
        extra["citationParagraphsWrongSpeaker"] = labels["wrong_speaker"]
        extra["citationParagraphsUnparseable"] = labels[UNPARSEABLE]
        extra["citationJudgeErrors"] = labels[UNJUDGED]
        models = sorted({str(r.get("judgeModel")) for r in records if r.get("judgeModel")})
        counted = ", ".join(f"{label} {labels[label]}" for label in JUDGE_LABELS if labels[label])
        lines.append(f"judge {', '.join(models) or 'n/a'}: {counted or 'no paragraph asked'}")
    if scored:
        scores = [record.get("coverageScore") for record in records]
        extra["citationCoverageScores"] = scores
        extra["citationScorerErrors"] = sum(1 for record in records if record.get("scorerError"))
        numbers = [score for score in scores if isinstance(score, (int, float))]
        mean = f"mean {sum(numbers) / len(numbers):.3f} over {len(numbers)} paragraph(s)" if numbers else "no score"
        errors = extra["citationScorerErrors"]
        lines.append(f"coverage: {mean}" + (f", {errors} scorer error(s)" if errors else ""))
    return outcome.model_copy(update={"extra": extra, "detail": "\n".join(lines)})


async def assess_citation(
    runner: Any,
    item: CitationItem,
    outcome: ItemOutcome,
    *,
    answer: str,
    evidence: Sequence[Mapping[str, Any]] | None,
    dataset: Dataset,
    target_sources: Sequence[Mapping[str, Any]] | None = None,
) -> ItemOutcome:
    """Ask the runner's judge and coverage scorer about the cited paragraphs of ``outcome``.

    Without a judge and a scorer on ``runner`` (attributes ``judge``, ``scorer``: a
    ``core.judging.Judge`` and a ``core.judging.Scorer``, or None) the outcome is returned
    as it is.

    Args:
        runner: The ``ItemRunner`` (its ``judge`` and ``scorer``).
        item: The citation item.
        outcome: Its deterministic outcome (``judge_citation``).
        answer: The answer judged.
        evidence: The target's evidence entries, or None for the recorded ``response``.
        dataset: The dataset (its documents give a target's evidence text).
        target_sources: The generate response's ``sources``, if any (``source_details``).

    Returns:
        ``with_assessment`` of the outcome; a judge or scorer that is down gives unjudged
        or unscored paragraphs, counted, never an exception.
    """
    judge: Judge | None = getattr(runner, "judge", None)
    scorer: Scorer | None = getattr(runner, "scorer", None)
    if judge is None and scorer is None:
        return outcome
    records = await assess_paragraphs(
        outcome.extra.get("citationParagraphs") or [],
        answer=answer,
        sources=source_details(item, evidence, dataset.documents, target_sources),
        judge=judge,
        scorer=scorer,
        labels=paragraph_labels(item),
    )
    return with_assessment(outcome, records, judged=judge is not None, scored=scorer is not None)
