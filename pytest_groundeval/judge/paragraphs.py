"""Judge and score the cited paragraphs of one citation answer (docs/citation.md).

The deterministic checks (``pytest_groundeval.core.kinds.citation``) give one record per cited
paragraph in ``extra.citationParagraphs``. :func:`assess_paragraphs` adds, to a copy
of each record, the judge's verdict (:class:`.client.JudgeClient`), the coverage
score (:class:`.scorer.CoverageScorer`) and the human label of the paragraph, so the
record carries everything the report and :mod:`.metrics` need.

:func:`source_details` gives each marker's text and metadata, for a recorded answer
or for a target's evidence spans; :func:`judge_payload` builds the judge's input.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_groundeval.core.kinds.citation import paragraphs, source_map

from .client import JudgeClient
from .prompt import judge_input
from .scorer import CoverageScorer

__all__ = ["MAX_OTHER_SOURCES", "assess_paragraphs", "judge_payload", "paragraph_labels", "source_details"]

MAX_OTHER_SOURCES = 8
"""Sources cited elsewhere in the answer shown to the judge for ``wrong_attribution``, at most."""


def source_details(item: Any, evidence: Sequence[Mapping[str, Any]] | None = None, documents: Mapping[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Marker → ``{"text": str, "metadata": {str: str}}`` for the sources an answer may cite.

    Args:
        item: A ``CitationItem``.
        evidence: The target's evidence entries ``{"marker", "document", "start", "end"}``,
            or None for the item's recorded ``response``.
        documents: Corpus name → loaded document (``Dataset.documents``); a target's
            evidence text is the document's canonical bytes ``[start, end)``.

    Returns:
        Metadata as ``pytest_groundeval.core.kinds.citation.source_map`` merges it; text from the
        recorded source's ``text`` (recorded answer) or the evidence span (target answer),
        "" when there is none or the span is invalid.
    """
    metadata = source_map(item, evidence)
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
    return {marker: {"text": texts.get(marker, ""), "metadata": dict(meta)} for marker, meta in metadata.items()}


def paragraph_labels(item: Any) -> dict[int, str]:
    """Paragraph index → human ``expectedVerdict`` from the item's ``paragraphLabels`` (empty when none)."""
    return {label.index: label.expected_verdict for label in getattr(item, "paragraph_labels", None) or []}


def judge_payload(record: Mapping[str, Any], paragraph: str, sources: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
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


async def assess_paragraphs(
    records: Sequence[Mapping[str, Any]],
    *,
    answer: str,
    sources: Mapping[str, Mapping[str, Any]],
    judge: JudgeClient | None = None,
    scorer: CoverageScorer | None = None,
    labels: Mapping[int, str] | None = None,
) -> list[dict[str, Any]]:
    """Add judge, scorer and label fields to copies of the paragraph records of one answer.

    Every record is returned, in order, whatever the judge or scorer did. The answer's
    sources that a paragraph does not cite (up to ``MAX_OTHER_SOURCES``, in ``sources``
    order) are shown to the judge as ``otherSources``, so it can tell a
    ``wrong_attribution``.

    Args:
        records: ``extra.citationParagraphs`` of the deterministic outcome.
        answer: The full answer (the records' ``index`` is into ``citation.paragraphs(answer)``).
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
        tasks = []
        if judge is not None:
            tasks.append(judge.judge(judge_payload(record, paragraph, sources)))
        if scorer is not None:
            tasks.append(scorer.score(paragraph, [sources[m].get("text", "") for m in markers]))
        results = await asyncio.gather(*tasks)
        for result in results:
            out.update(result.to_record())
        return out

    return list(await asyncio.gather(*(one(record) for record in records)))
