"""Citation accuracy, the deterministic part (SPEC §11): paragraph verdicts with no provider call.

An answer is split into paragraphs (blank-line separated). Only paragraphs that
carry at least one ``[N]``/``[S#]`` marker are judged; headers, intros and
transitions without a marker are dropped. Each judged paragraph is checked for

* ``missingSource``: a cited marker names no known source;
* ``metadataMismatch``: a mention matched by the dataset's ``mentionPattern``
  (named groups are metadata fields, e.g. ``speaker``, ``party``) disagrees with
  every cited source on some field that source's metadata has.

``judge_citation`` judges one answer against a marker → metadata map;
``source_map`` builds that map from an item's ``sources``, its recorded
``response`` and a target's evidence list. The item runner
(``pytest_groundeval.evaluate``) calls both: with the recorded answer and no
target call when the item has a ``response``, else with the generate response.

The optional coverage scorer and judge verdict of SPEC §11 are not here.
This module does not import pytest.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .contract import MARKER_PATTERN
from .dataset import CitationItem
from .evidence import EvidenceReview, review_answer
from .outcome import ItemOutcome

__all__ = [
    "NO_CITATION_DETAIL",
    "PARAGRAPH_TEXT_CHARS",
    "ParagraphVerdict",
    "cited_markers",
    "disagreements",
    "judge_citation",
    "judge_paragraph",
    "mention_mismatch",
    "mentions",
    "normalise_field",
    "paragraphs",
    "source_map",
]

PARAGRAPH_TEXT_CHARS = 300
"""Characters of a paragraph's text kept in ``extra.citationParagraphs`` for the report."""

DETAIL_TEXT_CHARS = 120
"""Characters of a failing paragraph quoted in ``detail``."""

MAX_DETAIL_PARAGRAPHS = 10
"""Failing paragraphs listed in ``detail``; the rest are counted (all are in ``extra``)."""

NO_CITATION_DETAIL = (
    "no paragraph carried a citation marker ([N] or [S#]), so nothing could be judged; "
    "an answer without citations does not pass a citation item (SPEC §11)"
)
"""``detail`` of an answer with no judged paragraph."""

MAX_KNOWN_MARKERS = 10
"""Known markers named in a ``missingSource`` line before the rest are counted."""

_MARKER_RE = re.compile(MARKER_PATTERN)
# A blank line is a line holding only whitespace; any run of them separates paragraphs.
_PARAGRAPH_BREAK_RE = re.compile(r"\n[^\S\n]*\n\s*")


# --------------------------------------------------------------------------- sources


def source_map(item: CitationItem, evidence: Sequence[Mapping[str, Any]] | None = None) -> dict[str, dict[str, str]]:
    """The sources an answer to ``item`` may cite: marker → metadata fields.

    Two cases, by where the answer came from:

    * **Recorded answer** (``evidence`` is None): every marker of the item's
      ``sources`` list and of its recorded ``response.sources`` exists. A marker in
      both gets the union of the two metadata dicts; on a field both set, the
      item's ``sources`` wins (it is the dataset author's curated metadata, the
      recorded one is what production said).
    * **Target answer** (``evidence`` is the generate response's ``evidence`` list,
      SPEC §3): the markers that exist are exactly the evidence markers, because
      an answer can only cite what the target retrieved. Each evidence entry takes
      its metadata from the item's ``sources``: first from an entry whose
      ``document`` equals the evidence's ``document``, else from the entry with the
      same marker provided that entry names no document or the same one (an entry
      pinned to another document describes a different source). An evidence marker
      with no such entry exists with no metadata, so no mention can disagree with it.

    Args:
        item: The citation item.
        evidence: The target's evidence entries ``{"marker", "document", "start",
            "end"}``, or None for a recorded answer. Entries lacking a string
            ``marker`` are ignored (the runner checks the response shape first).

    Returns:
        Marker as written inside the brackets (``"S1"`` for ``[S1]``, ``"1"`` for
        ``[1]``) → ``{field: value}``; fresh dicts the caller may mutate.
    """
    declared = {source.marker: source for source in item.sources}
    if evidence is None:
        sources: dict[str, dict[str, str]] = {}
        recorded = item.response.sources if item.response is not None else []
        for source in recorded:
            sources.setdefault(source.marker, {}).update(source.metadata)
        for marker, source in declared.items():
            sources.setdefault(marker, {}).update(source.metadata)
        return sources
    by_document: dict[str, dict[str, str]] = {}
    for source in item.sources:
        if source.document is not None:
            by_document.setdefault(source.document, source.metadata)
    sources = {}
    for entry in evidence:
        marker = entry.get("marker")
        if not isinstance(marker, str):
            continue
        document = entry.get("document")
        metadata = by_document.get(document) if isinstance(document, str) else None
        if metadata is None:
            same_marker = declared.get(marker)
            if same_marker is not None and same_marker.document in (None, document):
                metadata = same_marker.metadata
        sources.setdefault(marker, {}).update(metadata or {})
    return sources


# --------------------------------------------------------------------------- paragraphs


def paragraphs(answer: str) -> list[str]:
    """Split an answer into paragraphs: text separated by one or more blank lines.

    ``\\r\\n`` and ``\\r`` count as ``\\n``; a line holding only whitespace is blank.
    Paragraphs are stripped; empty ones are not returned.

    Args:
        answer: The answer text.

    Returns:
        The paragraphs in order. Their positions in this list are the ``index``
        of ``extra.citationParagraphs``.
    """
    text = answer.replace("\r\n", "\n").replace("\r", "\n")
    return [part.strip() for part in _PARAGRAPH_BREAK_RE.split(text) if part.strip()]


def cited_markers(paragraph: str) -> list[str]:
    """Markers cited in ``paragraph``, as written inside the brackets, first occurrence order, no repeats."""
    return list(dict.fromkeys(_MARKER_RE.findall(paragraph)))


def normalise_field(value: str) -> str:
    """A metadata value in the form mentions and sources are compared in (SPEC §11).

    NFC-normalised, case-folded, runs of whitespace collapsed to one space, trimmed,
    so ``"anna  BERG"`` equals ``"Anna Berg"`` and a decomposed ``"Å"`` equals a
    composed one.
    """
    folded = unicodedata.normalize("NFC", unicodedata.normalize("NFC", value).casefold())
    return " ".join(folded.split())


# --------------------------------------------------------------------------- verdicts


@dataclass
class ParagraphVerdict:
    """The deterministic verdict on one judged paragraph (SPEC §11)."""

    index: int
    """Position of the paragraph among all non-empty paragraphs of the answer (0-based)."""
    text: str
    """The paragraph, stripped."""
    markers: list[str]
    """Markers cited, as written inside the brackets, in first-occurrence order."""
    metadata_mismatch: list[str] = field(default_factory=list)
    """One text per mention that agrees with no cited source, naming found and expected values."""
    missing_markers: list[str] = field(default_factory=list)
    """Cited markers that name no known source (the ``missingSource`` finding)."""

    @property
    def deterministic_pass(self) -> bool:
        """No metadata mismatch and no unknown marker."""
        return not self.metadata_mismatch and not self.missing_markers

    def to_extra(self) -> dict[str, Any]:
        """The paragraph as JSON built-ins for ``extra.citationParagraphs``; text cut to ``PARAGRAPH_TEXT_CHARS``."""
        return {
            "index": self.index,
            "text": _cut(self.text, PARAGRAPH_TEXT_CHARS),
            "markers": list(self.markers),
            "metadataMismatch": list(self.metadata_mismatch),
            "missingMarkers": list(self.missing_markers),
            "deterministicPass": self.deterministic_pass,
        }


def judge_paragraph(
    index: int,
    text: str,
    sources: Mapping[str, Mapping[str, str]],
    mention_regex: re.Pattern[str] | None,
) -> ParagraphVerdict:
    """Run the deterministic checks on one paragraph that cites at least one marker.

    Args:
        index: The paragraph's position in ``paragraphs(answer)``.
        text: The paragraph.
        sources: Marker → metadata (see ``source_map``).
        mention_regex: The dataset's compiled ``mentionPattern``, or None (no mention check).

    Returns:
        The verdict: unknown markers, and one mismatch text per distinct failing mention.
    """
    markers = cited_markers(text)
    verdict = ParagraphVerdict(index=index, text=text, markers=markers)
    verdict.missing_markers = [marker for marker in markers if marker not in sources]
    cited = [marker for marker in markers if marker in sources]
    if mention_regex is None or not cited:
        # With every cited marker unknown there is no metadata to compare: the paragraph
        # already fails as missingSource, and a mismatch would only repeat that.
        return verdict
    for mention in mentions(text, mention_regex):
        mismatch = mention_mismatch(mention, cited, sources)
        if mismatch is not None and mismatch not in verdict.metadata_mismatch:
            verdict.metadata_mismatch.append(mismatch)
    return verdict


def mentions(text: str, mention_regex: re.Pattern[str]) -> Iterable[dict[str, str]]:
    """Each match of ``mention_regex`` in ``text`` as ``{field: value}``.

    Named groups that did not take part in the match, or matched only whitespace,
    are left out; an empty match (a pattern that can match nothing) is no mention.
    """
    for match in mention_regex.finditer(text):
        if not match.group(0):
            continue
        fields = {name: value for name, value in match.groupdict().items() if value and value.strip()}
        if fields:
            yield fields


def disagreements(mention: Mapping[str, str], metadata: Mapping[str, str]) -> list[str]:
    """Fields where ``metadata`` sets a value that differs from the mention's (normalised).

    A field the source's metadata lacks is not a disagreement: the source cannot
    contradict what it does not record.
    """
    return [
        name
        for name, value in mention.items()
        if name in metadata and normalise_field(metadata[name]) != normalise_field(value)
    ]


def mention_mismatch(
    mention: Mapping[str, str], cited: Sequence[str], sources: Mapping[str, Mapping[str, str]]
) -> str | None:
    """The ``metadataMismatch`` text of a mention, or None when a cited source agrees with it.

    Example: ``speaker 'Anna Berg', party 'S' (cited [2]) but source [2] has speaker 'Lars Holm'``.
    """
    against: list[str] = []
    for marker in cited:
        metadata = sources[marker]
        wrong = disagreements(mention, metadata)
        if not wrong:
            return None
        against.append(f"source [{marker}] has " + ", ".join(f"{name} {metadata[name]!r}" for name in wrong))
    found = ", ".join(f"{name} {value!r}" for name, value in mention.items())
    where = ", ".join(f"[{marker}]" for marker in cited)
    return f"{found} (cited {where}) but " + "; ".join(against)


# --------------------------------------------------------------------------- the item


def judge_citation(
    item: CitationItem,
    *,
    answer: str,
    sources: Mapping[str, Mapping[str, str]],
    mention_regex: re.Pattern[str] | None,
) -> ItemOutcome:
    """Judge an answer to a citation item with the deterministic checks of SPEC §11.

    The item passes when at least one paragraph was judged, every judged paragraph
    passes (no unknown marker, no metadata mismatch) and, when the item has an
    evidence block (SPEC §8), its review passes. An answer with no cited paragraph
    fails with ``NO_CITATION_DETAIL``: an answer without citations must not pass
    silently.

    Args:
        item: The citation item (its ``id`` and optional ``evidence`` block are used).
        answer: The target's answer, or the recorded ``response.answer``.
        sources: Marker as it appears in the brackets → metadata (see ``source_map``).
        mention_regex: The dataset's compiled ``mentionPattern`` (``Manifest.mention_regex``),
            or None to check markers only.

    Returns:
        An ``ItemOutcome`` of kind ``citation`` whose ``extra`` holds JSON built-ins:
        ``citationParagraphsJudged`` (int), ``citationParagraphsMismatched`` (int:
        judged paragraphs failing any deterministic check, i.e. with a metadata
        mismatch *or* an unknown marker), ``citationParagraphsDropped`` (int:
        paragraphs without a marker) and ``citationParagraphs`` (one dict per judged
        paragraph, see ``ParagraphVerdict.to_extra``).
    """
    verdicts: list[ParagraphVerdict] = []
    all_paragraphs = paragraphs(answer)
    for index, text in enumerate(all_paragraphs):
        if _MARKER_RE.search(text):
            verdicts.append(judge_paragraph(index, text, sources, mention_regex))
    failing = [verdict for verdict in verdicts if not verdict.deterministic_pass]
    review = review_answer(item.evidence, answer) if item.evidence is not None else None

    problems: list[str] = []
    if not verdicts:
        problems.append(NO_CITATION_DETAIL)
    if failing:
        problems.append(_failing_detail(failing, len(verdicts), sources))
    if review is not None and not review.passed:
        problems.append(_review_detail(review))
    detail = "\n".join(problems) or (
        f"{len(verdicts)} cited paragraph(s) judged, {len(all_paragraphs) - len(verdicts)} without a marker dropped; "
        "every marker names a source and every mention agrees with a cited source"
    )
    return ItemOutcome(
        id=item.id,
        kind="citation",
        passed=not problems,
        detail=detail,
        evidence_review=review,
        extra={
            "citationParagraphsJudged": len(verdicts),
            "citationParagraphsMismatched": len(failing),
            "citationParagraphsDropped": len(all_paragraphs) - len(verdicts),
            "citationParagraphs": [verdict.to_extra() for verdict in verdicts],
        },
    )


# --------------------------------------------------------------------------- detail text


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _failing_detail(failing: list[ParagraphVerdict], judged: int, sources: Mapping[str, Any]) -> str:
    markers = list(sources)
    known = ", ".join(f"[{marker}]" for marker in markers[:MAX_KNOWN_MARKERS]) or "none"
    if len(markers) > MAX_KNOWN_MARKERS:
        known += f", … ({len(markers) - MAX_KNOWN_MARKERS} more)"
    lines = [f"{len(failing)} of {judged} cited paragraph(s) failed the deterministic checks:"]
    for verdict in failing[:MAX_DETAIL_PARAGRAPHS]:
        quoted = _cut(" ".join(verdict.text.split()), DETAIL_TEXT_CHARS)
        lines.append(f"  paragraph {verdict.index}: {quoted!r}")
        if verdict.missing_markers:
            unknown = ", ".join(f"[{marker}]" for marker in verdict.missing_markers)
            lines.append(f"    missingSource: {unknown} names no source (known: {known})")
        lines.extend(f"    metadataMismatch: {text}" for text in verdict.metadata_mismatch)
    if len(failing) > MAX_DETAIL_PARAGRAPHS:
        lines.append(f"  … and {len(failing) - MAX_DETAIL_PARAGRAPHS} more (all in extra.citationParagraphs)")
    return "\n".join(lines)


def _review_detail(review: EvidenceReview) -> str:
    lines = [f"evidence-risk score {review.score:.3f} below minScore {review.min_score:.3f}: {review.reason}"]
    lines.extend(
        f"  {finding.check} {finding.claim_id}: {finding.verdict} — {finding.reason}"
        for finding in review.findings
        if finding.verdict != "pass"
    )
    return "\n".join(lines)
