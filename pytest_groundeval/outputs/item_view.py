"""What the HTML report shows of one item outcome: texts cut to size, claims placed (docs/ci.md).

``item_view`` turns a report's item outcome (``pytest_groundeval.outcome.ItemOutcome``,
wire dict) into what the page's script needs: id, kind, outcome (pass, fail, error),
latency, tokens, ``detail`` (the reason), ``error``, ``traceId``, the counts,
``evidenceReview``, and ``extra.citationParagraphs``. It also reads these ``extra``
keys when an outcome carries them:

- ``extra.tags``: list of str — the item's dataset tags (filterable).
- ``extra.question``: str.
- ``extra.answer``: str — with each claim marked by its verdict.
- ``extra.claims``: list of ``{text, start, end, markers, verdict, true}``;
  ``start``/``end`` are UTF-8 byte offsets into ``answer`` as the target
  returned them (docs/target-contract.md); ``true`` is the harness's judgement.
- ``extra.evidence``: list of ``{marker, document, start, end, text}`` — the
  retrieved spans, ``text`` sliced from the canonical corpus text.
- ``extra.expectedEvidence``: list of str, or of ``{text, found}``.
- ``extra.truths``: list of str.
- ``extra.citationParagraphs[].verdict`` / ``.rationale``: the judge's verdict.

Any other ``extra`` key is shown as JSON under "other figures".
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.judging import UNJUDGED, paragraph_label
from ..core.kinds import KIND_NAMES, all_kinds, get

TEXT_CHARS = 8_000
"""Characters kept of an answer, detail or error text in the page (the rest is cut with "…")."""
SPAN_CHARS = 2_000
"""Characters kept of one evidence span, question, claim or paragraph."""

_SHOWN_EXTRA = frozenset(
    {
        "tags",
        "question",
        "answer",
        "claims",
        "evidence",
        "expectedEvidence",
        "truths",
        "citationParagraphs",
        "citationParagraphsJudged",
        "citationParagraphsMismatched",
        "citationParagraphsDropped",
        "citationParagraphsSupported",
        "citationParagraphsWrongSpeaker",
        "citationCoverageScores",
        "sources",
    }
)
"""``extra`` keys the page shows in its own sections; each kind adds those its counts show
(``Kind.drilldown_extra``), and any other key is shown under "other figures". (``sources``, a
target's own sources with their text, is shown in the evidence section, from ``evidence``.)"""


def _known_extra() -> frozenset[str]:
    return _SHOWN_EXTRA.union(*(kind.drilldown_extra for kind in all_kinds()))


def _kind_counts(item: Mapping[str, Any]) -> dict[str, str]:
    """What the item's kind lists under "counts" (``Kind.drilldown_counts``); none for an unknown kind."""
    kind = item.get("kind")
    if not isinstance(kind, str) or kind not in KIND_NAMES:
        return {}
    return {str(label): str(value) for label, value in get(kind).drilldown_counts(item).items()}


def _cut(value: Any, limit: int) -> str | None:
    if value is None:
        return None
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


OUTCOME_ORDER: tuple[str, ...] = ("fail", "error", "pass")
"""The page lists items in this order of outcome (failures first, as pytest's summary lists them), each
outcome's items in report order; sorting by the outcome column uses it too."""


def item_outcome(item: Mapping[str, Any]) -> str:
    """``"error"`` when the item errored, else ``"pass"`` or ``"fail"`` (one of ``OUTCOME_ORDER``)."""
    if item.get("error") is not None:
        return "error"
    return "pass" if item.get("pass") else "fail"


def _char_offset(encoded: bytes, byte_offset: Any) -> int | None:
    if isinstance(byte_offset, bool) or not isinstance(byte_offset, int) or not 0 <= byte_offset <= len(encoded):
        return None
    try:
        return len(encoded[:byte_offset].decode("utf-8"))
    except UnicodeDecodeError:  # the offset falls inside a character
        return None


def answer_segments(answer: str, claims: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    """Split an answer into ``[text, claim index or -1]`` runs, so each claim can be marked.

    A claim is placed by its UTF-8 byte offsets when they slice its text out of the
    answer (docs/target-contract.md), else at the first occurrence of its text
    after the previous claim; a claim found nowhere, or overlapping one already
    placed, is left unmarked (it is still listed under the answer).
    """
    encoded = answer.encode("utf-8")
    placed: list[tuple[int, int, int]] = []
    cursor = 0
    for index, claim in enumerate(claims):
        text = claim.get("text")
        if not isinstance(text, str) or not text:
            continue
        start, end = _char_offset(encoded, claim.get("start")), _char_offset(encoded, claim.get("end"))
        if start is None or end is None or answer[start:end] != text:
            found = answer.find(text, cursor)
            if found < 0:
                found = answer.find(text)
            if found < 0:
                continue
            start, end = found, found + len(text)
        placed.append((start, end, index))
        cursor = end
    placed.sort()
    segments: list[list[Any]] = []
    position = 0
    for start, end, index in placed:
        if start < position:
            continue
        if start > position:
            segments.append([answer[position:start], -1])
        segments.append([answer[start:end], index])
        position = end
    if position < len(answer):
        segments.append([answer[position:], -1])
    return segments


_BRACKETED = re.compile(r"[\[(【]([^\[\]()【】]*)[\])】]")


def markers_outside(text: Any, markers: Sequence[Any]) -> list[str]:
    """The markers a claim or paragraph cites that its text does not already show, in order.

    A marker is shown when the text holds it in brackets, alone or in a list: ``[S1]``,
    ``[1, 2]``, ``(S2)``, ``【3】``. The page prints the text and then only these, so a claim
    ``"Det har fyrtio anställda [S2]."`` citing ``S2`` reads once, not ``… [S2]. [S2]``.
    """
    shown: set[str] = set()
    for group in _BRACKETED.findall(text if isinstance(text, str) else ""):
        shown.update(token for token in re.split(r"[\s,;]+", group) if token)
    return [str(m) for m in markers if str(m) not in shown]


def as_list(value: Any) -> list[Any]:
    """``value`` when it is a list, else an empty one (report fields are read defensively)."""
    return value if isinstance(value, list) else []


def _expected(extra: Mapping[str, Any], evidence: list[dict[str, Any]]) -> list[dict[str, Any]]:
    spans = " \n".join(span.get("text") or "" for span in evidence)
    out = []
    for entry in as_list(extra.get("expectedEvidence")):
        if isinstance(entry, Mapping):
            text, found = entry.get("text"), entry.get("found")
        else:
            text, found = entry, None
        text = str(text)
        if found is None and evidence:
            found = text in spans
        out.append({"text": _cut(text, SPAN_CHARS), "found": found})
    return out


def item_view(item: Mapping[str, Any]) -> dict[str, Any]:
    """What the page's script needs of one item outcome (wire dict): texts cut, claims placed.

    Returns:
        A JSON-ready dict: ``id``, ``kind``, ``outcome``, ``tags``, ``latencyMs``,
        ``tokens``, ``detail``, ``error``, ``traceId``, ``counts`` (label -> "a/b"),
        and when present ``question``, ``segments`` (see ``answer_segments``),
        ``claims``, ``evidence``, ``expected``, ``truths``, ``paragraphs``,
        ``review`` and ``other`` (unknown ``extra`` keys). A claim's or paragraph's
        ``markers`` are those its text does not show (``markers_outside``). A paragraph has
        ``verdict`` (``paragraph_verdict``), ``judge`` (the judge model), ``expected`` (the
        human label) and ``judges`` (``paragraph_judges``) when known; ``pairs`` lists the
        item's ``"human|judge"`` label pairs (``labelled_pair``). Under ``--eval-repeat`` the answer
        shown is the first attempt's that did not pass (else the first attempt's), and ``counts``
        says how many attempts passed (docs/gate.md, "Repeats").
    """
    extra = item.get("extra") or {}
    attempts = [attempt for attempt in as_list(item.get("attempts")) if isinstance(attempt, Mapping)]
    if attempts:
        shown = next((attempt for attempt in attempts if not attempt.get("pass")), attempts[0])
        extra = {**(shown.get("extra") or {}), **extra}
    prompt, completion = item.get("promptTokens"), item.get("completionTokens")
    view: dict[str, Any] = {
        "id": str(item.get("id")),
        "kind": str(item.get("kind")),
        "outcome": item_outcome(item),
        "tags": [str(tag) for tag in as_list(extra.get("tags"))],
        "latencyMs": item.get("latencyMs"),
        "tokens": None if prompt is None and completion is None else (prompt or 0) + (completion or 0),
        "detail": _cut(item.get("detail"), TEXT_CHARS),
        "error": _cut(item.get("error"), TEXT_CHARS),
        "traceId": item.get("traceId"),
        "counts": _kind_counts(item),
    }
    if attempts:
        view["counts"]["attempts passed"] = f"{sum(bool(a.get('pass')) for a in attempts)}/{len(attempts)}"
    if extra.get("question") is not None:
        view["question"] = _cut(extra["question"], SPAN_CHARS)
    claims = [claim for claim in as_list(extra.get("claims")) if isinstance(claim, Mapping)]
    if claims:
        view["claims"] = [
            {
                "text": _cut(claim.get("text"), SPAN_CHARS),
                "verdict": str(claim.get("verdict", "")),
                "markers": markers_outside(claim.get("text"), as_list(claim.get("markers"))),
                "true": claim.get("true"),
            }
            for claim in claims
        ]
    if isinstance(extra.get("answer"), str):
        answer = extra["answer"]
        segments = answer_segments(answer, claims)
        if len(answer) > TEXT_CHARS:  # cut after placing, so offsets stay right
            kept, total = [], 0
            for text, index in segments:
                if total >= TEXT_CHARS:
                    break
                kept.append([text[: TEXT_CHARS - total], index])
                total += len(kept[-1][0])
            segments = [*kept, ["…", -1]]
        view["segments"] = segments
    evidence = [
        {
            "marker": str(span.get("marker", "")),
            "document": str(span.get("document", "")),
            "start": span.get("start"),
            "end": span.get("end"),
            "text": _cut(span.get("text"), SPAN_CHARS),
        }
        for span in as_list(extra.get("evidence"))
        if isinstance(span, Mapping)
    ]
    if evidence:
        view["evidence"] = evidence
    expected = _expected(extra, evidence)
    if expected:
        view["expected"] = expected
    if as_list(extra.get("truths")):
        view["truths"] = [_cut(t, SPAN_CHARS) for t in extra["truths"]]
    paragraphs = [p for p in as_list(extra.get("citationParagraphs")) if isinstance(p, Mapping)]
    if paragraphs:
        view["paragraphs"] = [_paragraph_view(p) for p in paragraphs]
        pairs = [pair for p in paragraphs if (pair := labelled_pair(p)) is not None]
        if pairs:
            view["pairs"] = sorted({f"{expected}|{label}" for expected, label in pairs})
    review = item.get("evidenceReview")
    if isinstance(review, Mapping) and review.get("reviewed"):
        view["review"] = {
            "score": review.get("score"),
            "minScore": review.get("minScore"),
            "passed": review.get("passed"),
            "reason": _cut(review.get("reason"), SPAN_CHARS),
            "findings": [
                {k: _cut(f.get(k), SPAN_CHARS) for k in ("check", "claimId", "verdict", "reason", "suggestedRewrite")}
                for f in as_list(review.get("findings"))
                if isinstance(f, Mapping)
            ],
        }
    known = _known_extra()
    other = {k: v for k, v in extra.items() if k not in known}
    if other:
        view["other"] = _cut(json.dumps(other, ensure_ascii=False, indent=1, default=str), TEXT_CHARS)
    return view


def _paragraph_view(p: Mapping[str, Any]) -> dict[str, Any]:
    view: dict[str, Any] = {
        "index": p.get("index"),
        "text": _cut(p.get("text"), SPAN_CHARS),
        "markers": markers_outside(p.get("text"), as_list(p.get("markers"))),
        "verdict": paragraph_verdict(p),
        "rationale": _cut(p.get("rationale") or p.get("judgeError"), SPAN_CHARS),
        "problems": [_cut(t, SPAN_CHARS) for t in as_list(p.get("metadataMismatch"))]
        + [f"missingSource: [{m}] names no source" for m in as_list(p.get("missingMarkers"))],
    }
    if p.get("judgeModel"):
        view["judge"] = str(p["judgeModel"])
    if isinstance(p.get("expectedVerdict"), str):
        view["expected"] = p["expectedVerdict"]
    judges = paragraph_judges(p)
    if judges is not None:
        view["judges"] = judges
    return view


def paragraph_judges(paragraph: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """Each judge's verdict on a paragraph a jury judged, in the jury's order; None for one judge's verdict.

    Reads ``judges`` (docs/judges.md, "Juries") as a list of
    ``{judgeModel, verdict, rationale, judgeError}``, or as a mapping of judge model to its
    verdict (a str) or to such an object. An entry without a model is left out; a judge that
    gave no verdict is ``unjudged``.

    Returns:
        ``[{"model", "verdict", "rationale", "error"}]`` with texts cut to ``SPAN_CHARS``.
    """
    value = paragraph.get("judges")
    if isinstance(value, Mapping):
        entries = list(value.items())
    elif isinstance(value, list):
        entries = [(v.get("judgeModel") or v.get("model"), v) for v in value if isinstance(v, Mapping)]
    else:
        return None
    judges = []
    for model, entry in entries:
        if not model:
            continue
        record = entry if isinstance(entry, Mapping) else {"verdict": entry}
        verdict = record.get("verdict")
        judges.append(
            {
                "model": str(model),
                "verdict": verdict if isinstance(verdict, str) and verdict else UNJUDGED,
                "rationale": _cut(record.get("rationale"), SPAN_CHARS),
                "error": _cut(record.get("judgeError") or record.get("error"), SPAN_CHARS),
            }
        )
    return judges


def labelled_pair(paragraph: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(human label, judge's label)`` of a paragraph sent to the judge with an ``expectedVerdict``, else None.

    The judge's label is its ``verdict``, or ``unjudged`` when it gave none: the cells of the
    run's ``judgeConfusion`` (``core.judging.paragraph_label``; docs/citation.md).
    """
    expected = paragraph.get("expectedVerdict")
    if not paragraph.get("judgeModel") or not isinstance(expected, str):
        return None
    return expected, paragraph_label(paragraph)


def paragraph_verdict(paragraph: Mapping[str, Any]) -> str:
    """A citation paragraph's verdict: the judge's when it was asked (``unjudged`` when it gave none),
    else the deterministic one.

    Deterministic verdicts: ``pass``, ``missingSource`` (a marker names no source),
    ``metadataMismatch`` (docs/citation.md).
    """
    if paragraph.get("verdict") or paragraph.get("judgeModel"):
        return paragraph_label(paragraph)
    if paragraph.get("deterministicPass", True):
        return "pass"
    return "missingSource" if paragraph.get("missingMarkers") else "metadataMismatch"
