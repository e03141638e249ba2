"""citation items: paragraph-level citation accuracy, the deterministic part (docs/citation.md).

An answer is split into paragraphs (blank-line separated). Only paragraphs that
carry at least one ``[N]``/``[S#]`` marker are judged; headers, intros and
transitions without a marker are dropped. Each judged paragraph is checked for

* ``missingSource``: a cited marker names no known source;
* ``metadataMismatch``: a mention matched by the dataset's ``mentionPattern``
  (named groups are metadata fields, e.g. ``speaker``, ``party``) disagrees with
  every cited source on some field that source's metadata has.

Mention matching is bounded: each paragraph gets ``MENTION_TIMEOUT_S`` of
matching (the ``regex`` package's ``timeout``), and a pattern that runs out of
it makes the item an error naming the pattern and the item (``MentionTimeout``),
not a hung session.

``judge_citation`` judges one answer against a marker → metadata map;
``source_map`` builds that map from an item's ``sources``, its recorded
``response`` and a target's evidence list. ``CitationKind`` calls both: with the
recorded answer and no target call when the item has a ``response``, else with
the generate response.

The optional judge verdict and coverage score of docs/citation.md are computed by
``pytest_groundeval.judge``: when the runner carries a judge or a scorer,
``assess_citation`` (importing that package on first use, never at import time)
adds their fields to each paragraph record, and ``CitationKind`` folds them, with
the human labels (``paragraphLabels``), into the judge metrics (``judgeAgreement``,
Cohen's κ, the confusion table). This module does not import pytest.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Annotated, Any, Literal

import regex
from pydantic import Field, model_validator

from ..contract import MARKER_IN_TEXT_PATTERN
from ..drilldown import ANSWER_CHARS, answer_extra
from ..evidence import OptionalEvidenceBlock, describe_review, review_answer
from ..outcome import ItemOutcome
from ..text import shorten
from ..wire import WireModel
from .base import (
    CEILING_RATE,
    ItemBase,
    JudgeError,
    Kind,
    ManifestIndex,
    MarkerName,
    MetricDirection,
    MetricSpec,
    RecordedAnswer,
    RuleError,
    Tally,
    ratio,
)

if TYPE_CHECKING:
    from ..dataset import Dataset
    from ..runner import ItemRunner

__all__ = [
    "CATCHES",
    "CitationItem",
    "UNJUDGED",
    "UNPARSEABLE",
    "VERDICTS",
    "VERDICT_LABELS",
    "assess_citation",
    "cohen_kappa",
    "paragraph_catches",
    "paragraph_label",
    "with_assessment",
    "JudgeVerdict",
    "MENTION_TIMEOUT_S",
    "MentionTimeout",
    "NO_CITATION_DETAIL",
    "PARAGRAPH_TEXT_CHARS",
    "ParagraphLabel",
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


# --------------------------------------------------------------------------- the item model


class RecordedSource(WireModel):
    """One source of a recorded answer, as its citation markers name it."""

    marker: MarkerName
    """The marker inside the brackets: ``S1`` or ``1``."""
    document: str | None = None
    """Document name the source came from."""
    text: str | None = None
    """The source's text (scored for coverage, docs/citation.md)."""
    start: Annotated[int, Field(ge=0)] | None = None
    """UTF-8 byte offset of the span in the document's canonical text."""
    end: Annotated[int, Field(ge=0)] | None = None
    """UTF-8 byte offset, exclusive."""
    metadata: dict[str, str] = Field(default_factory=dict)
    """Metadata fields (e.g. ``speaker``, ``party``)."""


class RecordedResponse(RecordedAnswer):
    """A recorded production answer with its sources (docs/citation.md)."""

    sources: list[RecordedSource] = Field(default_factory=list)
    """The sources the answer's markers cite."""


class SourceMetadata(WireModel):
    """Metadata of a source a citation may cite, checked against ``mentionPattern`` (docs/citation.md)."""

    marker: MarkerName
    """The marker inside the brackets: ``S1`` or ``1``."""
    document: str | None = None
    """The corpus document behind the marker, if fixed."""
    metadata: dict[str, str] = Field(default_factory=dict)
    """Field name → value, e.g. ``{"speaker": "Anna Lind", "party": "S"}``."""


JudgeVerdict = Literal["supported", "partial", "unsupported", "wrong_speaker", "wrong_attribution"]
"""A judge verdict a human label may name (docs/citation.md)."""


class ParagraphLabel(WireModel):
    """A human label of one paragraph of a recorded answer (docs/citation.md, "A judge measured against people")."""

    index: Annotated[int, Field(ge=0)]
    """The paragraph's position among the answer's non-empty paragraphs, from 0 (as ``extra.citationParagraphs``)."""
    expected_verdict: JudgeVerdict
    """The verdict a person gave the paragraph."""


class CitationItem(ItemBase):
    """Paragraph-level citation accuracy (docs/citation.md)."""

    kind: Literal["citation"]
    """Always ``citation``."""
    question: str | None = None
    """Sent to the target; optional when a recorded ``response`` is given."""
    response: RecordedResponse | None = None
    """A recorded answer judged without calling the target."""
    find: str | None = None
    """Corpus label to restrict retrieval to, or null."""
    sources: list[SourceMetadata] = Field(default_factory=list)
    """Metadata of the sources the answer may cite."""
    evidence: OptionalEvidenceBlock = None
    """Optional evidence-risk block (docs/evidence-risk.md)."""
    paragraph_labels: list[ParagraphLabel] = Field(default_factory=list)
    """Human labels of the recorded answer's paragraphs, to measure a judge against (docs/citation.md)."""
    origin: dict[str, str | int] | None = None
    """Where a generated item came from, e.g. ``{"strategy": "seeded", "document": …, "record": 3}``; not evaluated."""

    @model_validator(mode="after")
    def _question_or_response(self) -> "CitationItem":
        if not self.question and self.response is None:
            raise RuleError("a citation item needs a question or a recorded response", "question")
        labelled: dict[int, int] = {}
        for i, label in enumerate(self.paragraph_labels):
            if self.response is None:
                raise RuleError(
                    "paragraphLabels label the paragraphs of a recorded response; this item has none",
                    f"paragraphLabels[{i}]",
                )
            if label.index in labelled:
                raise RuleError(
                    f"paragraph {label.index} is already labelled by paragraphLabels[{labelled[label.index]}]",
                    f"paragraphLabels[{i}].index",
                )
            labelled[label.index] = i
        seen: dict[str, int] = {}
        for i, source in enumerate(self.sources):
            if source.marker in seen:
                raise RuleError(
                    f"marker {source.marker!r} is already described by sources[{seen[source.marker]}]",
                    f"sources[{i}].marker",
                )
            seen[source.marker] = i
        return self


# --------------------------------------------------------------------------- the checks


PARAGRAPH_TEXT_CHARS = 300
"""Characters of a paragraph's text kept in ``extra.citationParagraphs`` for the report."""

DETAIL_TEXT_CHARS = 120
"""Characters of a failing paragraph quoted in ``detail``."""

MAX_DETAIL_PARAGRAPHS = 10
"""Failing paragraphs listed in ``detail``; the rest are counted (all are in ``extra``)."""

NO_CITATION_DETAIL = (
    "no paragraph carried a citation marker ([N] or [S#]), so nothing could be judged; "
    "an answer without citations does not pass a citation item (docs/citation.md)"
)
"""``detail`` of an answer with no judged paragraph."""

MAX_KNOWN_MARKERS = 10
"""Known markers named in a ``missingSource`` line before the rest are counted."""

MENTION_TIMEOUT_S = 1.0
"""Seconds of ``mentionPattern`` matching allowed per paragraph before the item is an error.

Far above what a sane pattern needs on a paragraph (microseconds), far below a
CI job's patience: a catastrophically backtracking pattern is caught on its
first paragraph instead of hanging the session."""

_MARKER_RE = re.compile(MARKER_IN_TEXT_PATTERN)
# A blank line is a line holding only whitespace; any run of them separates paragraphs.
_PARAGRAPH_BREAK_RE = re.compile(r"\n[^\S\n]*\n\s*")


class MentionTimeout(JudgeError):
    """The dataset's ``mentionPattern`` ran out of its time on a paragraph (docs/citation.md).

    Attributes:
        pattern: The pattern as written in the manifest.
        paragraph: Index of the paragraph it was matching.
        timeout_s: The budget it ran out of, in seconds.
        item_id: The item being judged, once known.
    """

    def __init__(self, pattern: str, paragraph: int, timeout_s: float, item_id: str | None = None) -> None:
        self.pattern, self.paragraph, self.timeout_s, self.item_id = pattern, paragraph, timeout_s, item_id
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f" of item {self.item_id!r}" if self.item_id is not None else ""
        return (
            f"mentionPattern {self.pattern!r} was stopped after {self.timeout_s:g} s on paragraph "
            f"{self.paragraph}{where}; it most likely backtracks catastrophically (nested quantifiers such as "
            "(\\w+\\s?)+ try every way to split a line); make each repetition match one way only, "
            "e.g. (?P<speaker>\\w+(?: \\w+)*) (docs/citation.md)"
        )


def _bounded(mention_regex: regex.Pattern[str] | re.Pattern[str]) -> regex.Pattern[str]:
    # A stdlib pattern (callers' own code) cannot be bounded: run the same pattern with ``regex``.
    if isinstance(mention_regex, re.Pattern):
        flags = mention_regex.flags & ~(re.ASCII | re.UNICODE)
        flags |= regex.ASCII if mention_regex.flags & re.ASCII else 0
        return regex.compile(mention_regex.pattern, flags=flags | regex.VERSION0)
    return mention_regex


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
      docs/target-contract.md): the markers that exist are exactly the evidence markers, because
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
    """A metadata value in the form mentions and sources are compared in (docs/citation.md).

    NFC-normalised, case-folded, runs of whitespace collapsed to one space, trimmed,
    so ``"anna  BERG"`` equals ``"Anna Berg"`` and a decomposed ``"Å"`` equals a
    composed one.
    """
    folded = unicodedata.normalize("NFC", unicodedata.normalize("NFC", value).casefold())
    return " ".join(folded.split())


# --------------------------------------------------------------------------- verdicts


@dataclass
class ParagraphVerdict:
    """The deterministic verdict on one judged paragraph (docs/citation.md)."""

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
            "text": shorten(self.text, PARAGRAPH_TEXT_CHARS, collapse=False),
            "markers": list(self.markers),
            "metadataMismatch": list(self.metadata_mismatch),
            "missingMarkers": list(self.missing_markers),
            "deterministicPass": self.deterministic_pass,
        }


def judge_paragraph(
    index: int,
    text: str,
    sources: Mapping[str, Mapping[str, str]],
    mention_regex: regex.Pattern[str] | re.Pattern[str] | None,
    *,
    timeout_s: float | None = None,
) -> ParagraphVerdict:
    """Run the deterministic checks on one paragraph that cites at least one marker.

    Args:
        index: The paragraph's position in ``paragraphs(answer)``.
        text: The paragraph.
        sources: Marker → metadata (see ``source_map``).
        mention_regex: The dataset's compiled ``mentionPattern``, or None (no mention check).
        timeout_s: Seconds of matching allowed on this paragraph (default ``MENTION_TIMEOUT_S``).

    Returns:
        The verdict: unknown markers, and one mismatch text per distinct failing mention.

    Raises:
        MentionTimeout: the pattern ran out of ``timeout_s``.
    """
    markers = cited_markers(text)
    verdict = ParagraphVerdict(index=index, text=text, markers=markers)
    verdict.missing_markers = [marker for marker in markers if marker not in sources]
    cited = [marker for marker in markers if marker in sources]
    if mention_regex is None or not cited:
        # With every cited marker unknown there is no metadata to compare: the paragraph
        # already fails as missingSource, and a mismatch would only repeat that.
        return verdict
    try:
        found = list(mentions(text, mention_regex, timeout_s=timeout_s))
    except MentionTimeout as exc:
        raise MentionTimeout(exc.pattern, index, exc.timeout_s) from None
    for mention in found:
        mismatch = mention_mismatch(mention, cited, sources)
        if mismatch is not None and mismatch not in verdict.metadata_mismatch:
            verdict.metadata_mismatch.append(mismatch)
    return verdict


def mentions(
    text: str, mention_regex: regex.Pattern[str] | re.Pattern[str], *, timeout_s: float | None = None
) -> Iterable[dict[str, str]]:
    """Each match of ``mention_regex`` in ``text`` as ``{field: value}``.

    Named groups that did not take part in the match, or matched only whitespace,
    are left out; an empty match (a pattern that can match nothing) is no mention.
    A stdlib ``re`` pattern is run with the ``regex`` package, so the bound holds too.

    Args:
        text: One paragraph.
        mention_regex: The compiled ``mentionPattern``.
        timeout_s: Seconds of matching allowed over the whole of ``text`` (default ``MENTION_TIMEOUT_S``,
            read when called).

    Raises:
        MentionTimeout: matching ran out of ``timeout_s`` (paragraph index 0; ``judge_paragraph`` sets it).
    """
    bounded = _bounded(mention_regex)
    if timeout_s is None:
        timeout_s = MENTION_TIMEOUT_S
    try:
        for match in bounded.finditer(text, timeout=timeout_s):
            if not match.group(0):
                continue
            fields = {name: value for name, value in match.groupdict().items() if value and value.strip()}
            if fields:
                yield fields
    except TimeoutError:
        raise MentionTimeout(bounded.pattern, 0, timeout_s) from None


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
    mention_regex: regex.Pattern[str] | re.Pattern[str] | None,
    mention_timeout_s: float | None = None,
) -> ItemOutcome:
    """Judge an answer to a citation item with the deterministic checks of docs/citation.md.

    The item passes when at least one paragraph was judged, every judged paragraph
    passes (no unknown marker, no metadata mismatch) and, when the item has an
    evidence block (docs/evidence-risk.md), its review passes. An answer with no cited paragraph
    fails with ``NO_CITATION_DETAIL``: an answer without citations must not pass
    silently.

    Args:
        item: The citation item (its ``id`` and optional ``evidence`` block are used).
        answer: The target's answer, or the recorded ``response.answer``.
        sources: Marker as it appears in the brackets → metadata (see ``source_map``).
        mention_regex: The dataset's compiled ``mentionPattern`` (``Manifest.mention_regex``),
            or None to check markers only.
        mention_timeout_s: Seconds of mention matching allowed per paragraph (default ``MENTION_TIMEOUT_S``).

    Returns:
        An ``ItemOutcome`` of kind ``citation`` whose ``extra`` holds JSON built-ins:
        ``citationParagraphsJudged`` (int), ``citationParagraphsMismatched`` (int:
        judged paragraphs failing any deterministic check, i.e. with a metadata
        mismatch *or* an unknown marker), ``citationParagraphsDropped`` (int:
        paragraphs without a marker) and ``citationParagraphs`` (one dict per judged
        paragraph, see ``ParagraphVerdict.to_extra``).

    Raises:
        MentionTimeout: ``mention_regex`` ran out of ``mention_timeout_s`` on a paragraph;
            the message names the pattern, the paragraph and the item.
    """
    verdicts: list[ParagraphVerdict] = []
    all_paragraphs = paragraphs(answer)
    for index, text in enumerate(all_paragraphs):
        if _MARKER_RE.search(text):
            try:
                verdicts.append(judge_paragraph(index, text, sources, mention_regex, timeout_s=mention_timeout_s))
            except MentionTimeout as exc:
                raise MentionTimeout(exc.pattern, exc.paragraph, exc.timeout_s, item.id) from None
    failing = [verdict for verdict in verdicts if not verdict.deterministic_pass]
    review = review_answer(item.evidence, answer) if item.evidence is not None else None

    problems: list[str] = []
    if not verdicts:
        problems.append(NO_CITATION_DETAIL)
    if failing:
        problems.append(_failing_detail(failing, len(verdicts), sources))
    if review is not None and not review.passed:
        problems.append(describe_review(review))
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


def _failing_detail(failing: list[ParagraphVerdict], judged: int, sources: Mapping[str, Any]) -> str:
    markers = list(sources)
    known = ", ".join(f"[{marker}]" for marker in markers[:MAX_KNOWN_MARKERS]) or "none"
    if len(markers) > MAX_KNOWN_MARKERS:
        known += f", … ({len(markers) - MAX_KNOWN_MARKERS} more)"
    lines = [f"{len(failing)} of {judged} cited paragraph(s) failed the deterministic checks:"]
    for verdict in failing[:MAX_DETAIL_PARAGRAPHS]:
        quoted = shorten(verdict.text, DETAIL_TEXT_CHARS)
        lines.append(f"  paragraph {verdict.index}: {quoted!r}")
        if verdict.missing_markers:
            unknown = ", ".join(f"[{marker}]" for marker in verdict.missing_markers)
            lines.append(f"    missingSource: {unknown} names no source (known: {known})")
        lines.extend(f"    metadataMismatch: {text}" for text in verdict.metadata_mismatch)
    if len(failing) > MAX_DETAIL_PARAGRAPHS:
        lines.append(f"  … and {len(failing) - MAX_DETAIL_PARAGRAPHS} more (all in extra.citationParagraphs)")
    return "\n".join(lines)


# --------------------------------------------------------------------------- judge and scorer


VERDICTS: tuple[str, ...] = ("supported", "partial", "unsupported", "wrong_speaker", "wrong_attribution")
"""The five judge verdicts (``JudgeVerdict``), in report order (the same as ``judge.prompt.VERDICTS``)."""

UNPARSEABLE = "unparseable"
"""The verdict recorded when no reply of the judge could be parsed (docs/citation.md); never supported."""

UNJUDGED = "unjudged"
"""The label of a paragraph the judge was asked about and could not answer (a ``judgeErrors`` entry)."""

VERDICT_LABELS: tuple[str, ...] = (*VERDICTS, UNPARSEABLE, UNJUDGED)
"""Every label of ``verdictDistribution`` and of the columns of ``judgeConfusion``, in order."""

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


def paragraph_label(record: Mapping[str, Any]) -> str:
    """The judge's label of one paragraph record: its ``verdict``, or ``unjudged`` when it has none."""
    verdict = record.get("verdict")
    return verdict if isinstance(verdict, str) else UNJUDGED


def paragraph_catches(record: Mapping[str, Any]) -> list[str]:
    """The ``CATCHES`` keys one paragraph record the judge was asked about adds 1 to."""
    label = paragraph_label(record)
    passed = bool(record.get("deterministicPass"))
    found = [] if passed else ["deterministicCatches"]
    if label in VERDICTS and label != "supported":
        found.append("judgeCatches")
        if passed:
            found.append("judgeOnlyCatches")
    if not passed and label == "supported":
        found.append("deterministicOnlyCatches")
    if label == "wrong_speaker":
        found.append("wrongSpeaker")
        found.append("wrongSpeakerDeterministic" if record.get("metadataMismatch") else "wrongSpeakerJudgeOnly")
    return found


def with_assessment(outcome: ItemOutcome, records: Sequence[Mapping[str, Any]], *, judged: bool, scored: bool) -> ItemOutcome:
    """``outcome`` with the judge's and the scorer's paragraph records and their counts (docs/citation.md).

    The item's ``passed`` is unchanged: the deterministic checks decide an item, the judge's
    and scorer's figures are gated as metrics, and only when a floor is set.

    Args:
        outcome: The deterministic outcome of ``judge_citation``.
        records: Its ``extra.citationParagraphs`` with the judge and scorer fields added
            (``judge.paragraphs.assess_paragraphs``), one per record, in order.
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
        labels = [paragraph_label(record) for record in records]
        extra["citationParagraphsSupported"] = labels.count("supported")
        extra["citationParagraphsWrongSpeaker"] = labels.count("wrong_speaker")
        extra["citationParagraphsUnparseable"] = labels.count(UNPARSEABLE)
        extra["citationJudgeErrors"] = labels.count(UNJUDGED)
        models = sorted({str(r.get("judgeModel")) for r in records if r.get("judgeModel")})
        counted = ", ".join(f"{label} {labels.count(label)}" for label in VERDICT_LABELS if labels.count(label))
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
) -> ItemOutcome:
    """Ask the runner's judge and coverage scorer about the cited paragraphs of ``outcome``.

    Without a judge and a scorer on ``runner`` (attributes ``judge``, ``scorer``: a
    ``pytest_groundeval.judge.client.JudgeClient`` and a ``…judge.scorer.CoverageScorer``,
    or None) the outcome is returned as it is. ``pytest_groundeval.judge`` is imported
    here, on first use, so the deterministic checks never import it.

    Args:
        runner: The ``ItemRunner`` (its ``judge`` and ``scorer``).
        item: The citation item.
        outcome: Its deterministic outcome (``judge_citation``).
        answer: The answer judged.
        evidence: The target's evidence entries, or None for the recorded ``response``.
        dataset: The dataset (its documents give a target's evidence text).

    Returns:
        ``with_assessment`` of the outcome; a judge or scorer that is down gives unjudged
        or unscored paragraphs, counted, never an exception.
    """
    judge, scorer = getattr(runner, "judge", None), getattr(runner, "scorer", None)
    if judge is None and scorer is None:
        return outcome
    from ...judge.paragraphs import assess_paragraphs, paragraph_labels, source_details

    records = await assess_paragraphs(
        outcome.extra.get("citationParagraphs") or [],
        answer=answer,
        sources=source_details(item, evidence, dataset.documents),
        judge=judge,
        scorer=scorer,
        labels=paragraph_labels(item),
    )
    return with_assessment(outcome, records, judged=judge is not None, scored=scorer is not None)


# --------------------------------------------------------------------------- the kind


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


def _asked_records(outcome: ItemOutcome) -> list[tuple[str, str | None, Mapping[str, Any]]]:
    """``(label, expectedVerdict, record)`` of each paragraph record a judge was asked about (``judgeModel`` set).

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
        if verdict is not None and verdict not in (*VERDICTS, UNPARSEABLE):
            raise ValueError(
                f"item {outcome.id!r}: extra.citationParagraphs[{i}].verdict {verdict!r} is not one of "
                f"{', '.join((*VERDICTS, UNPARSEABLE))} or null"
            )
        if expected is not None and expected not in VERDICTS:
            raise ValueError(
                f"item {outcome.id!r}: extra.citationParagraphs[{i}].expectedVerdict {expected!r} is not one of "
                f"{', '.join(VERDICTS)} or null"
            )
        asked.append((paragraph_label(record), expected, record))
    return asked


def cohen_kappa(confusion: Mapping[tuple[str, str], int]) -> float | None:
    """Cohen's κ of a confusion table ``{(expected, got): count}``, computed exactly (docs/citation.md).

    ``κ = (p_o − p_e) / (1 − p_e)``: ``p_o`` the share of pairs that agree, ``p_e`` the
    agreement expected from the two sides' label distributions. None for an empty table;
    when ``p_e`` is 1 (both sides use one and the same label) 1.0 if every pair agrees, else 0.0.
    """
    n = sum(confusion.values())
    if not n:
        return None
    observed = Fraction(sum(count for (expected, got), count in confusion.items() if expected == got), n)
    rows: dict[str, int] = {}
    columns: dict[str, int] = {}
    for (expected, got), count in confusion.items():
        rows[expected] = rows.get(expected, 0) + count
        columns[got] = columns.get(got, 0) + count
    chance = Fraction(sum(count * columns.get(label, 0) for label, count in rows.items()), n * n)
    if chance == 1:
        return 1.0 if observed == 1 else 0.0
    return float((observed - chance) / (1 - chance))


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


JUDGE_BOUNDS = ("citationSupportedRate", "wrongSpeakerRate", "unparseableRate", "judgeAgreement", "judgeKappa")
"""Metrics measured by a judge: a bound on any of them arms ``judgeErrors <= 0`` and
``unparseableRate <= UNPARSEABLE_CEILING`` (docs/gate.md)."""

UNPARSEABLE_CEILING = 0.05
"""The ``unparseableRate`` ceiling a judge bound arms unless the floors give one (docs/gate.md)."""

def _counter() -> Counter:
    return Counter()


@dataclass
class CitationTally(Tally):
    """Citation paragraph counts, summed over every outcome that carries them.

    Every field is an integer, an exact ``Fraction`` or a ``Counter`` of integers, so tallies
    merge by addition and per-worker partial results give the same metrics as a plain run.
    """

    judged: int = 0
    mismatched: int = 0
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
    verdicts: Counter = field(default_factory=_counter)
    """Label (``VERDICT_LABELS``) → paragraphs the judge was asked about."""
    confusion: Counter = field(default_factory=_counter)
    """``(expectedVerdict, label)`` → labelled paragraphs the judge was asked about."""
    catches: Counter = field(default_factory=_counter)
    """``CATCHES`` key → paragraphs."""


class CitationKind(Kind):
    name = "citation"
    model = CitationItem
    tally_type = CitationTally
    metrics = (
        MetricSpec(
            "citation_metadata_accuracy",
            "Judged citation paragraphs with no metadata mismatch / judged paragraphs.",
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
    )

    def check_manifest(self, item: CitationItem, where: str, index: ManifestIndex) -> None:
        if item.response is not None:
            return
        for j, source in enumerate(item.sources):
            if source.document is not None and source.document not in index.documents:
                raise RuleError(
                    f"document {source.document!r} is not a corpus name; names: {index.listing(index.documents)}",
                    f"{where}.sources[{j}].document",
                )

    def needs_target(self, item: CitationItem) -> bool:
        return item.response is None

    async def run(self, runner: ItemRunner, item: CitationItem, dataset: Dataset) -> ItemOutcome:
        await runner.ensure_ingested(dataset)
        response, figures = await runner.generate(item)
        outcome = judge_citation(
            item,
            answer=response["answer"],
            sources=source_map(item, response["evidence"]),
            mention_regex=dataset.manifest.mention_regex,
        )
        drilldown = answer_extra(item, response, runner.spans(response, dataset)) if runner.drilldown else {}
        outcome = await assess_citation(
            runner, item, outcome, answer=response["answer"], evidence=response["evidence"], dataset=dataset
        )
        return outcome.model_copy(update={**figures, "extra": {**outcome.extra, **drilldown}})

    def run_offline(self, item: CitationItem, dataset: Dataset) -> ItemOutcome:
        if item.response is None:
            return super().run_offline(item, dataset)
        outcome = judge_citation(
            item,
            answer=item.response.answer,
            sources=source_map(item, None),
            mention_regex=dataset.manifest.mention_regex,
        )
        shown = {"answer": item.response.answer[:ANSWER_CHARS], "tags": list(item.tags)}
        if item.question:
            shown["question"] = item.question[:ANSWER_CHARS]
        return outcome.model_copy(update={"extra": {**outcome.extra, **shown}})

    async def run_offline_async(self, runner: ItemRunner, item: CitationItem, dataset: Dataset) -> ItemOutcome:
        outcome = self.run_offline(item, dataset)
        assert item.response is not None  # run_offline raised otherwise
        return await assess_citation(runner, item, outcome, answer=item.response.answer, evidence=None, dataset=dataset)

    def tally_any(self, tally: CitationTally, outcome: ItemOutcome) -> None:
        """Fold the citation figures of any outcome's ``extra`` into ``tally``.

        Raises:
            ValueError: a figure has the wrong type or exceeds the judged count.
        """
        judged = _extra_count(outcome, "citationParagraphsJudged")
        if judged is not None:
            tally.judged += judged
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
        tally.coverage_scores += len(scores)
        tally.coverage_score_sum += sum(map(Fraction, scores), Fraction(0))
        for label, expected, record in _asked_records(outcome):
            tally.verdicts[label] += 1
            if expected is not None:
                tally.confusion[(expected, label)] += 1
            tally.catches.update(paragraph_catches(record))

    def results(self, tally: CitationTally) -> dict[str, Any]:
        asked = tally.judge_outcomes > 0
        labelled = sum(tally.confusion.values())
        agreeing = sum(count for (expected, got), count in tally.confusion.items() if expected == got)
        confusion: dict[str, dict[str, int]] = {}
        for expected in VERDICTS:
            row = {got: tally.confusion[(expected, got)] for got in VERDICT_LABELS if tally.confusion[(expected, got)]}
            if row:
                confusion[expected] = row
        return {
            "citation_metadata_accuracy": ratio(tally.judged - tally.mismatched, tally.judged),
            "citation_supported_rate": ratio(tally.judge_supported, tally.judge_judged),
            "wrong_speaker_rate": ratio(tally.speaker_wrong, tally.speaker_judged),
            "unparseable_rate": ratio(tally.unparseable, tally.unparseable_judged),
            "judge_errors": tally.judge_errors if asked else None,
            "coverage_score_mean": ratio(tally.coverage_score_sum, tally.coverage_scores),
            "scorer_errors": tally.scorer_errors if tally.scorer_outcomes else None,
            "judge_agreement": ratio(agreeing, labelled),
            "judge_kappa": cohen_kappa(tally.confusion),
            "verdict_distribution": {label: tally.verdicts[label] for label in VERDICT_LABELS} if asked else None,
            "judge_confusion": confusion if labelled else None,
            "citation_catches": {key: tally.catches[key] for key in CATCHES} if asked else None,
        }


KIND = CitationKind()
