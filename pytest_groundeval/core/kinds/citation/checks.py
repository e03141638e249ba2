"""The citation kind's deterministic checks (docs/citation.md): markers and mention metadata.

Only paragraphs that carry at least one ``[N]``/``[S#]`` marker are judged; headers,
intros and transitions without a marker are dropped. Each judged paragraph is checked for

* ``missingSource``: a cited marker names no known source;
* ``metadataMismatch``: a mention matched by the dataset's ``mentionPattern``
  (named groups are metadata fields, e.g. ``speaker``, ``party``) disagrees with
  every cited source on some field that source's metadata has;
* ``expectedSource`` (target answers only): an item ``sources`` entry with metadata
  that the target did not return, the answer does not cite, or nothing confirms
  (``expected_sources``, ``expected_source_findings``).

``judge_citation`` judges one answer against a marker → metadata map; ``source_map``
builds that map from an item's ``sources``, its recorded ``response`` and a target's
evidence list. A mention pattern that runs out of its time makes the item an error
(``text.MentionTimeout``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import regex

from ...evidence import describe_review, review_answer
from ...outcome import ItemOutcome
from ...text import shorten
from .model import CitationItem
from .text import MARKER_RE, MentionTimeout, cited_markers, mentions, normalise_field, paragraphs

__all__ = [
    "NO_CITATION_DETAIL",
    "PARAGRAPH_TEXT_CHARS",
    "ParagraphVerdict",
    "ExpectedSource",
    "disagreements",
    "expected_source_findings",
    "expected_sources",
    "judge_citation",
    "judge_paragraph",
    "mention_mismatch",
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
    "an answer without citations does not pass a citation item (docs/citation.md)"
)
"""``detail`` of an answer with no judged paragraph."""

MAX_KNOWN_MARKERS = 10
"""Known markers named in a ``missingSource`` line before the rest are counted."""


# --------------------------------------------------------------------------- sources


def source_map(
    item: CitationItem,
    evidence: Sequence[Mapping[str, Any]] | None = None,
    target_sources: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, dict[str, str]]:
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
      The generate response's optional ``sources`` (``{"marker", "text", "metadata"}``,
      a mapped target's, docs/byo.md) exist too, each with its own metadata merged
      with the item's entry of the same marker that names no document; on a field
      both set, the target's wins (it says what the source is; the item's value is an
      expectation, checked by ``expected_sources``).

    Args:
        item: The citation item.
        evidence: The target's evidence entries ``{"marker", "document", "start",
            "end"}``, or None for a recorded answer. Entries lacking a string
            ``marker`` are ignored (the runner checks the response shape first).
        target_sources: The generate response's ``sources``, if any (only with ``evidence``).

    Returns:
        Marker as written inside the brackets (``"S1"`` for ``[S1]``, ``"1"`` for
        ``[1]``) → ``{field: value}``; fresh dicts the caller may mutate.
    """
    declared = {source.marker: source for source in item.sources}
    if evidence is None:
        sources: dict[str, dict[str, str]] = {}
        recorded = item.response.sources if item.response is not None else []
        for recorded_source in recorded:
            sources.setdefault(recorded_source.marker, {}).update(recorded_source.metadata)
        for marker, source in declared.items():
            sources.setdefault(marker, {}).update(source.metadata)
        return sources
    by_document: dict[str, dict[str, str]] = {}
    for source in item.sources:
        if source.document is not None:
            by_document.setdefault(source.document, source.metadata)
    sources = {}
    for entry in evidence:
        cited = entry.get("marker")
        if not isinstance(cited, str):
            continue
        document = entry.get("document")
        metadata = by_document.get(document) if isinstance(document, str) else None
        if metadata is None:
            same_marker = declared.get(cited)
            if same_marker is not None and same_marker.document in (None, document):
                metadata = same_marker.metadata
        sources.setdefault(cited, {}).update(metadata or {})
    for entry in target_sources or ():
        cited = entry.get("marker")
        if not isinstance(cited, str):
            continue
        merged = sources.setdefault(cited, {})
        same_marker = declared.get(cited)
        if same_marker is not None and same_marker.document is None:
            merged.update(same_marker.metadata)
        # What the target says its source is wins: a mention is compared with the source as it is, and the
        # item's value is what the expectedSource check compares that source with (``expected_sources``).
        merged.update(entry.get("metadata") or {})
    return sources


# --------------------------------------------------------------------------- paragraph checks


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
    mentions: list[dict[str, str]] = field(default_factory=list, repr=False)
    """The ``mentionPattern`` matches found in the paragraph (field → value); not in ``to_extra``."""

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
    verdict.mentions = found
    for mention in found:
        mismatch = mention_mismatch(mention, cited, sources)
        if mismatch is not None and mismatch not in verdict.metadata_mismatch:
            verdict.metadata_mismatch.append(mismatch)
    return verdict


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


# --------------------------------------------------------------------------- expected sources


@dataclass(frozen=True)
class ExpectedSource:
    """An item ``sources`` entry with metadata, as a target answer must show it (docs/citation.md, expectedSource)."""

    marker: str
    """The entry's marker, as the item writes it (``S1``)."""
    metadata: dict[str, str]
    """The metadata the cited source must be shown to have (field → value)."""
    returned: tuple[str, ...]
    """Markers of the target's sources matched to the entry, in the response's order (may be empty)."""
    reported: dict[str, dict[str, str]]
    """Returned marker → the metadata the target itself gave that source (a mapped target's ``sources``)."""
    available: tuple[str, ...]
    """Every marker the target returned, for the finding's text."""

    def described(self) -> str:
        """``[S1] (title 'Vacation')``: the entry as a finding names it."""
        fields = ", ".join(f"{name} {value!r}" for name, value in self.metadata.items())
        return f"[{self.marker}] ({fields})"


def expected_sources(
    item: CitationItem,
    evidence: Sequence[Mapping[str, Any]],
    target_sources: Sequence[Mapping[str, Any]] | None = None,
) -> list[ExpectedSource]:
    """The item's ``sources`` entries with metadata, each matched to the sources a target returned.

    An entry is matched to an evidence entry as ``source_map`` gives that evidence its
    metadata: by the entry's ``document``, else by the same marker when the entry names no
    document or the same one; and to a target ``sources`` entry of the same marker when it
    names no document. Entries without metadata expect nothing and are left out.

    Args:
        item: The citation item.
        evidence: The generate response's ``evidence`` entries (``{"marker", "document", …}``).
        target_sources: The generate response's ``sources`` (``{"marker", "metadata", …}``), if any.

    Returns:
        One ``ExpectedSource`` per entry with metadata, in the item's order.
    """
    available: list[str] = []
    for entry in [*evidence, *(target_sources or ())]:
        marker = entry.get("marker")
        if isinstance(marker, str) and marker not in available:
            available.append(marker)
    expected = []
    for source in item.sources:
        if not source.metadata:
            continue
        returned: list[str] = []
        reported: dict[str, dict[str, str]] = {}
        for entry in evidence:
            marker, document = entry.get("marker"), entry.get("document")
            if not isinstance(marker, str):
                continue
            if (source.document is not None and document == source.document) or (
                marker == source.marker and source.document in (None, document)
            ):
                if marker not in returned:
                    returned.append(marker)
        for entry in target_sources or ():
            marker = entry.get("marker")
            if isinstance(marker, str) and marker == source.marker and source.document is None:
                if marker not in returned:
                    returned.append(marker)
                reported.setdefault(marker, {}).update(entry.get("metadata") or {})
        expected.append(
            ExpectedSource(source.marker, dict(source.metadata), tuple(returned), reported, tuple(available))
        )
    return expected


def expected_source_findings(expected: Sequence[ExpectedSource], verdicts: Sequence[ParagraphVerdict]) -> None:
    """Add each unmet expected source's finding to the judged paragraphs it concerns (in place).

    An expected source is met when the target returned a source matched to it, a judged
    paragraph cites one, no returned source's own metadata contradicts it, and each of its
    fields is confirmed, by that source's own metadata or by a ``mentionPattern`` mention
    in a paragraph citing it (equal after ``normalise_field``). A cited marker with no
    mention says nothing about which source it is, so it confirms nothing. The finding
    goes to the ``metadata_mismatch`` of every judged paragraph citing a matched source,
    or, when none does, of every judged paragraph (each cites something else).
    """
    for source in expected:
        citing = [verdict for verdict in verdicts if set(verdict.markers) & set(source.returned)]
        finding = _expected_source_finding(source, citing)
        if finding is None:
            continue
        for verdict in citing or verdicts:
            if finding not in verdict.metadata_mismatch:
                verdict.metadata_mismatch.append(finding)


def _expected_source_finding(source: ExpectedSource, citing: Sequence[ParagraphVerdict]) -> str | None:
    head = f"expectedSource: {source.described()}"
    if not source.returned:
        returned = ", ".join(f"[{marker}]" for marker in source.available[:MAX_KNOWN_MARKERS]) or "none"
        return f"{head} matches no source the target returned (returned: {returned})"
    if not citing:
        shown = ", ".join(f"[{marker}]" for marker in source.returned)
        return f"{head}: the target returned it as {shown}, but no paragraph cites it"
    cited = [marker for marker in source.returned if any(marker in verdict.markers for verdict in citing)]
    confirmed: set[str] = set()
    for marker in cited:
        own = source.reported.get(marker, {})
        for name in disagreements(source.metadata, own):
            return f"{head}: the target's source [{marker}] has {name} {own[name]!r}"
        confirmed.update(name for name in source.metadata if name in own)
    for verdict in citing:
        for mention in verdict.mentions:
            confirmed.update(
                name
                for name, value in mention.items()
                if name in source.metadata and normalise_field(value) == normalise_field(source.metadata[name])
            )
    unconfirmed = [name for name in source.metadata if name not in confirmed]
    if not unconfirmed:
        return None
    names = ", ".join(unconfirmed)
    where = ", ".join(f"[{marker}]" for marker in cited)
    return (
        f"{head}: nothing confirms its {names}: no paragraph citing {where} mentions it "
        "(mentionPattern) and the target's source does not give it"
    )


# --------------------------------------------------------------------------- the item


def judge_citation(
    item: CitationItem,
    *,
    answer: str,
    sources: Mapping[str, Mapping[str, str]],
    mention_regex: regex.Pattern[str] | re.Pattern[str] | None,
    mention_timeout_s: float | None = None,
    expected: Sequence[ExpectedSource] = (),
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
        expected: A target answer's expected sources (``expected_sources``); an unmet one is an
            ``expectedSource`` finding on the paragraphs it concerns (``expected_source_findings``).

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
        if MARKER_RE.search(text):
            try:
                verdicts.append(judge_paragraph(index, text, sources, mention_regex, timeout_s=mention_timeout_s))
            except MentionTimeout as exc:
                raise MentionTimeout(exc.pattern, exc.paragraph, exc.timeout_s, item.id) from None
    expected_source_findings(expected, verdicts)
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
        f"{len(verdicts)} cited paragraph(s) checked, {len(all_paragraphs) - len(verdicts)} without a marker dropped; "
        "every marker names a source and every mention agrees with a cited source"
        + (f"; {len(expected)} expected source(s) cited and confirmed" if expected else "")
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
        lines.append(f"  paragraph {verdict.index + 1}: {quoted!r}")  # counted from 1, as a reader counts
        if verdict.missing_markers:
            unknown = ", ".join(f"[{marker}]" for marker in verdict.missing_markers)
            lines.append(f"    missingSource: {unknown} names no source (known: {known})")
        lines.extend(
            f"    {text}" if text.startswith("expectedSource: ") else f"    metadataMismatch: {text}"
            for text in verdict.metadata_mismatch
        )
    if len(failing) > MAX_DETAIL_PARAGRAPHS:
        lines.append(f"  … and {len(failing) - MAX_DETAIL_PARAGRAPHS} more (all in extra.citationParagraphs)")
    return "\n".join(lines)
