"""What an item's outcome records for the HTML report's per-item view (docs/ci.md, "The HTML report").

``answer_extra`` turns one generate call into the ``ItemOutcome.extra`` keys the
page shows: the question, the answer, its claims with their verdicts and the
harness's judgement, the retrieved evidence spans and the expected evidence
strings (found or not), and the item's tags. Texts are cut so that a report stays
small (datasets/v1: 691 items, the HTML page 1.5 MB, well under 3 MB); counts and
metrics never depend on these keys, so cutting them changes no figure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .text import shorten

ANSWER_CHARS = 8_000
"""Characters of the answer kept; claims' byte offsets still place them in the kept text."""
TEXT_CHARS = 500
"""Characters kept of a question, claim or expected evidence string."""
EVIDENCE_CHARS = 300
"""Characters kept of a retrieved evidence span's text (the spans are most of an outcome's bytes)."""
MAX_CLAIMS = 50
"""Claims recorded per item (their counts are in the outcome's figures, whatever the number)."""
MAX_EVIDENCE = 20
"""Evidence spans recorded per item."""


def _cut(text: Any, limit: int = TEXT_CHARS) -> str:
    return shorten(str(text), limit, collapse=False)


def answer_extra(
    item: Any,
    response: Mapping[str, Any],
    spans: Sequence[tuple[str, str, str]] | None = None,
    *,
    claim_truth: Iterable[bool | None] | None = None,
    expected: Iterable[tuple[str, bool]] | None = None,
) -> dict[str, Any]:
    """The drill-down ``extra`` keys of one answered item, as JSON built-ins.

    Args:
        item: The dataset item (its ``question`` and ``tags`` are read).
        response: The checked generate response (``answer``, ``claims``, ``evidence``).
        spans: ``(marker, document, text)`` per evidence entry, as ``ItemRunner.spans``
            sliced them from canonical text, in the order of ``response["evidence"]``;
            None records the entries without their text.
        claim_truth: Per claim, the harness's judgement (True, False, or None when it
            did not judge that claim), in the order of ``response["claims"]``.
        expected: ``(text, found)`` per expected evidence string.

    Returns:
        ``question`` (str), ``answer`` (str), ``claims`` (list of ``{text, start, end,
        markers, verdict, true}``; ``start``/``end`` are UTF-8 byte offsets into the
        answer, docs/target-contract.md), ``evidence`` (list of ``{marker, document,
        start, end, text}``, then the response's ``sources`` with document "" and
        null offsets), ``expectedEvidence`` (list of ``{text, found}``, only
        when ``expected`` is given) and ``tags`` (list of str); texts cut to
        ``TEXT_CHARS`` (evidence to ``EVIDENCE_CHARS``, the answer to ``ANSWER_CHARS``), lists to ``MAX_CLAIMS`` /
        ``MAX_EVIDENCE`` entries.
    """
    truths = list(claim_truth) if claim_truth is not None else []
    claims = []
    for i, claim in enumerate(response.get("claims", [])[:MAX_CLAIMS]):
        claims.append(
            {
                "text": _cut(claim["text"]),
                "start": claim["start"],
                "end": claim["end"],
                "markers": list(claim["markers"]),
                "verdict": claim["verdict"],
                "true": truths[i] if i < len(truths) else None,
            }
        )
    evidence = []
    for i, entry in enumerate(response.get("evidence", [])[:MAX_EVIDENCE]):
        text = spans[i][2] if spans is not None and i < len(spans) else None
        evidence.append(
            {
                "marker": entry["marker"],
                "document": entry["document"],
                "start": entry["start"],
                "end": entry["end"],
                "text": None if text is None else _cut(text, EVIDENCE_CHARS),
            }
        )
    for entry in (response.get("sources") or [])[: max(MAX_EVIDENCE - len(evidence), 0)]:
        # A source that is no corpus span (a mapped target's, docs/byo.md): no document, no offsets.
        text = entry.get("text")
        evidence.append(
            {
                "marker": entry["marker"],
                "document": "",
                "start": None,
                "end": None,
                "text": None if text is None else _cut(text, EVIDENCE_CHARS),
            }
        )
    extra: dict[str, Any] = {
        "question": _cut(getattr(item, "question", None) or ""),
        "answer": shorten(str(response.get("answer", "")), ANSWER_CHARS, collapse=False),
        "claims": claims,
        "evidence": evidence,
    }
    if expected is not None:
        extra["expectedEvidence"] = [{"text": _cut(text), "found": bool(found)} for text, found in expected]
    extra["tags"] = list(getattr(item, "tags", []) or [])
    return extra


def errored_extra(item: Any) -> dict[str, Any]:
    """The drill-down keys known of an item that could not be run: its ``question`` (when it has one) and ``tags``."""
    extra: dict[str, Any] = {}
    if getattr(item, "question", None):
        extra["question"] = _cut(item.question)
    extra["tags"] = list(getattr(item, "tags", []) or [])
    return extra
