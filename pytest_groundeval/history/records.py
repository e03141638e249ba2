"""Item-outcome wire dicts → history rows (docs/history.md), validated with messages naming the item.

An *item record* is what the controller hands to ``HistoryStore.add_items``: an
item outcome's wire dict (``ItemOutcome.to_wire()``: camelCase ``id``, ``kind``,
``pass``, ``error``, ``detail``, ``latencyMs``, ``promptTokens``, …, ``extra``)
plus, optionally, the keys of ``ITEM_CONTEXT_KEYS`` either at the top level or
inside ``extra``:

* ``question`` (str), ``answer`` (str), ``tags`` (list of str),
* ``sources`` (JSON: the item's or the response's sources, marker → metadata),
* ``trace`` (JSON: the compact evidence and claims trace, see ``compact_trace``),
* ``toolTrace`` (list of ``{"tool": str, "calls"?: int, "hits"?: [id, …], "hitCount"?: int}``),
* ``iterations`` (int ≥ 0).

Citation paragraphs come from ``extra.citationParagraphs`` (what
``pytest_groundeval.citation`` writes: ``index``, ``text``, ``markers``,
``metadataMismatch``, ``missingMarkers``, ``deterministicPass``) and may carry the
judge's ``verdict``, ``rationale``, ``coverageScore``, ``judgeModel`` and a human
``expectedVerdict``, the judge's tokens, and a jury's verdict its judges' own (``judges``: each
one's ``judgeModel``, ``verdict``, ``rationale``, ``judgeError`` and tokens). They become ``judgments``
rows and are left out of the stored ``outcome`` JSON, which ``outcome_from_rows`` rebuilds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.judging import RECORDED_VERDICTS, USAGE_RECORD_KEYS, record_usage
from ..core.kinds import KIND_NAMES
from .errors import HistoryError

ITEM_CONTEXT_KEYS = ("question", "answer", "tags", "sources", "trace", "toolTrace", "iterations")
"""Keys an item record may carry besides the outcome's own, at the top level or in ``extra``."""

USAGE_COLUMNS = ("prompt_tokens", "completion_tokens", "replies", "replies_without_usage")
"""The ``judgments`` columns of a paragraph's judge tokens, in ``core.judging.USAGE_RECORD_KEYS`` order."""

PARAGRAPHS_KEY = "citationParagraphs"
"""``extra`` key holding the citation paragraph judgments."""


TRACE_TEXT_CHARS = 300
"""Characters of a claim's or evidence span's text kept in a compact trace."""

TRACE_MAX_ENTRIES = 50
"""Evidence spans and claims kept in a compact trace (each list); the rest are counted."""


def _fail(item: str, field: str, expected: str, value: Any) -> HistoryError:
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:79] + "…"
    return HistoryError(f"item {item!r}: field {field!r} must be {expected}, got {shown}")


def _opt_int(item: str, field: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _fail(item, field, "an integer >= 0 or null", value)
    return value


def _opt_str(item: str, field: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise _fail(item, field, "a string or null", value)
    return value


def _str_list(item: str, field: str, value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(item, field, "a list of strings", value)
    return list(value)


def _context(record: Mapping[str, Any], key: str) -> Any:
    if key in record:
        return record[key]
    extra = record.get("extra")
    return extra.get(key) if isinstance(extra, Mapping) else None


def tool_rows(item: str, trace: Any) -> list[dict[str, Any]]:
    """One row per ``toolTrace`` entry: ``tool``, ``calls`` (default 1), ``hit_ids``, ``hit_count``.

    ``hitCount`` defaults to the number of ``hits`` ids; ids are kept as strings.

    Raises:
        HistoryError: The trace is not a list of objects with a non-empty string ``tool``,
            or a count or id list has the wrong type.
    """
    if trace is None:
        return []
    if not isinstance(trace, list):
        raise _fail(item, "toolTrace", "a list of {tool, calls, hits, hitCount} objects", trace)
    rows = []
    for position, entry in enumerate(trace):
        where = f"toolTrace[{position}]"
        if not isinstance(entry, Mapping):
            raise _fail(item, where, "an object with a 'tool' name", entry)
        tool = entry.get("tool", entry.get("name"))
        if not isinstance(tool, str) or not tool:
            raise _fail(item, f"{where}.tool", "a non-empty string", tool)
        hits = entry.get("hits", entry.get("hitIds", []))
        if not isinstance(hits, list) or not all(isinstance(h, (str, int)) and not isinstance(h, bool) for h in hits):
            raise _fail(item, f"{where}.hits", "a list of ids (strings or integers)", hits)
        calls = _opt_int(item, f"{where}.calls", entry.get("calls", 1))
        hit_count = _opt_int(item, f"{where}.hitCount", entry.get("hitCount", len(hits)))
        rows.append(
            {
                "position": position,
                "tool": tool,
                "calls": 1 if calls is None else calls,
                "hit_ids": [str(h) for h in hits],
                "hit_count": len(hits) if hit_count is None else hit_count,
            }
        )
    return rows


JUDGE_KEYS = ("judgeModel", "verdict", "rationale", "judgeError")
"""What the history keeps of each judge of a jury's verdict (``judgments.judges``), with that judge's
tokens (``core.judging.USAGE_RECORD_KEYS``) when its record carries them."""


def jury_judges(item: str, where: str, value: Any) -> list[dict[str, Any]] | None:
    """A jury's judges of one paragraph as stored, or None for one judge's verdict: each judge's
    ``judgeModel``, ``verdict``, ``rationale`` and ``judgeError``, and its tokens
    (``core.judging.USAGE_RECORD_KEYS``) when its record carries them.

    Raises:
        HistoryError: not a list of objects, each with a distinct non-empty ``judgeModel``, a
            ``verdict`` of ``RECORDED_VERDICTS`` or null, a ``rationale`` and ``judgeError``
            that are strings or null, and valid token fields (``core.judging.record_usage``).
    """
    if value is None:
        return None
    if not isinstance(value, list):
        raise _fail(item, where, "a list of judge objects or null", value)
    judges: list[dict[str, Any]] = []
    for n, judge in enumerate(value):
        at = f"{where}[{n}]"
        if not isinstance(judge, Mapping):
            raise _fail(item, at, "an object", judge)
        model = judge.get("judgeModel")
        if not isinstance(model, str) or not model or any(j["judgeModel"] == model for j in judges):
            raise _fail(item, f"{at}.judgeModel", "a judge model named once", model)
        verdict = judge.get("verdict")
        if verdict is not None and verdict not in RECORDED_VERDICTS:
            raise _fail(item, f"{at}.verdict", "one of " + ", ".join(RECORDED_VERDICTS) + " or null", verdict)
        try:
            usage = record_usage(judge)
        except ValueError as exc:
            raise HistoryError(f"item {item!r}: {at}: {exc}") from None
        kept = {
            "judgeModel": model,
            "verdict": verdict,
            "rationale": _opt_str(item, f"{at}.rationale", judge.get("rationale")),
            "judgeError": _opt_str(item, f"{at}.judgeError", judge.get("judgeError")),
        }
        if usage is not None:  # that judge's tokens, as record_usage reads them (docs/judges.md)
            kept.update(zip(USAGE_RECORD_KEYS, usage))
        judges.append(kept)
    return judges


def judgment_rows(item: str, paragraphs: Any) -> list[dict[str, Any]]:
    """One row per entry of ``extra.citationParagraphs``.

    Raises:
        HistoryError: Not a list of objects; an ``index`` that is not an integer >= 0
            or repeats; a verdict outside ``RECORDED_VERDICTS``; a coverage score outside [0, 1].
    """
    if paragraphs is None:
        return []
    if not isinstance(paragraphs, list):
        raise _fail(item, f"extra.{PARAGRAPHS_KEY}", "a list of paragraph objects", paragraphs)
    rows = []
    seen: set[int] = set()
    for n, para in enumerate(paragraphs):
        where = f"extra.{PARAGRAPHS_KEY}[{n}]"
        if not isinstance(para, Mapping):
            raise _fail(item, where, "an object", para)
        index = para.get("index", n)
        if isinstance(index, bool) or not isinstance(index, int) or index < 0 or index in seen:
            raise _fail(item, f"{where}.index", "a distinct integer >= 0", index)
        seen.add(index)
        verdict = para.get("verdict")
        if verdict is not None and verdict not in RECORDED_VERDICTS:
            raise _fail(item, f"{where}.verdict", "one of " + ", ".join(RECORDED_VERDICTS) + " or null", verdict)
        expected = para.get("expectedVerdict")
        if expected is not None and expected not in RECORDED_VERDICTS:
            raise _fail(
                item, f"{where}.expectedVerdict", "one of " + ", ".join(RECORDED_VERDICTS) + " or null", expected
            )
        score = para.get("coverageScore")
        if score is not None and (
            isinstance(score, bool) or not isinstance(score, (int, float)) or not 0.0 <= score <= 1.0
        ):
            raise _fail(item, f"{where}.coverageScore", "a number in [0, 1] or null", score)
        try:
            # Kept as record_usage reads it, so a record of a judge that reports no usage rebuilds the same figures.
            usage = record_usage(para) if para.get("judgeModel") else None
        except ValueError as exc:
            raise HistoryError(f"item {item!r}: {where}: {exc}") from None
        mismatch = _str_list(item, f"{where}.metadataMismatch", para.get("metadataMismatch"))
        missing = _str_list(item, f"{where}.missingMarkers", para.get("missingMarkers"))
        deterministic = para.get("deterministicPass")
        if deterministic is None:
            deterministic = not mismatch and not missing
        elif not isinstance(deterministic, bool):
            raise _fail(item, f"{where}.deterministicPass", "true or false", deterministic)
        rows.append(
            {
                "paragraph": index,
                "text": _opt_str(item, f"{where}.text", para.get("text")) or "",
                "markers": _str_list(item, f"{where}.markers", para.get("markers")),
                "missing_markers": missing,
                "metadata_mismatch": mismatch,
                "deterministic_pass": deterministic,
                "verdict": verdict,
                "rationale": _opt_str(item, f"{where}.rationale", para.get("rationale")),
                "expected_verdict": expected,
                "coverage_score": None if score is None else float(score),
                "judge_model": _opt_str(item, f"{where}.judgeModel", para.get("judgeModel")),
                "judges": jury_judges(item, f"{where}.judges", para.get("judges")),
                **dict(zip(USAGE_COLUMNS, usage if usage is not None else (None,) * len(USAGE_COLUMNS))),
            }
        )
    return rows


def item_row(record: Any, position: int) -> tuple[dict[str, Any], list[str], list[dict], list[dict]]:
    """Split one item record into its ``items`` row, tags, tool rows and judgment rows.

    Args:
        record: An item record (see the module docstring).
        position: Its position in the batch, named in errors when it has no usable id.

    Returns:
        ``(item_row, tags, tool_rows, judgment_rows)``; the item row lacks ``run_id``
        and ``recorded_ms``, which the store adds.

    Raises:
        HistoryError: A field is missing or has the wrong type; the message names the
            item (or its batch position) and the field.
    """
    if not isinstance(record, Mapping):
        raise HistoryError(f"item record #{position} must be an item outcome object, got {type(record).__name__}")
    item = record.get("id")
    if not isinstance(item, str) or not item:
        raise HistoryError(f"item record #{position}: field 'id' must be a non-empty string, got {item!r}")
    kind = record.get("kind")
    if kind not in KIND_NAMES:  # the registry's kinds, those registered at run time included
        raise _fail(item, "kind", "one of " + ", ".join(KIND_NAMES), kind)
    passed = record.get("pass", record.get("passed"))
    if not isinstance(passed, bool):
        raise _fail(item, "pass", "true or false", passed)
    error = _opt_str(item, "error", record.get("error"))
    latency = record.get("latencyMs")
    if latency is not None and (
        isinstance(latency, bool) or not isinstance(latency, (int, float)) or not math.isfinite(latency) or latency < 0
    ):
        raise _fail(item, "latencyMs", "a finite number >= 0 or null", latency)
    extra = record.get("extra") or {}
    if not isinstance(extra, Mapping):
        raise _fail(item, "extra", "an object", extra)
    tools = tool_rows(item, _context(record, "toolTrace"))
    judgments = judgment_rows(item, extra.get(PARAGRAPHS_KEY))
    tags = list(dict.fromkeys(_str_list(item, "tags", _context(record, "tags"))))
    outcome = {key: value for key, value in record.items() if key not in ITEM_CONTEXT_KEYS}
    outcome["extra"] = {
        key: value for key, value in extra.items() if key not in ITEM_CONTEXT_KEYS and key != PARAGRAPHS_KEY
    }
    row = {
        "item_id": item,
        "kind": kind,
        "passed": passed and error is None,
        "error": error,
        "detail": _opt_str(item, "detail", record.get("detail")) or "",
        "trace_id": _opt_str(item, "traceId", record.get("traceId")),
        "question": _opt_str(item, "question", _context(record, "question")),
        "answer": _opt_str(item, "answer", _context(record, "answer")),
        "tags": tags,
        "sources": _context(record, "sources"),
        "trace": _context(record, "trace"),
        "latency_ms": None if latency is None else float(latency),
        "prompt_tokens": _opt_int(item, "promptTokens", record.get("promptTokens")),
        "completion_tokens": _opt_int(item, "completionTokens", record.get("completionTokens")),
        "tool_trace": _context(record, "toolTrace"),
        "iterations": _opt_int(item, "iterations", _context(record, "iterations")),
        "outcome": outcome,
    }
    return row, tags, tools, judgments


def paragraph_extra(row: Mapping[str, Any]) -> dict[str, Any]:
    """A ``judgments`` row back as an ``extra.citationParagraphs`` entry (camelCase); ``judges`` only for a jury's.

    The judge's token fields are put back only when the row holds them (recorded since schema
    version 6); a row without them reads as a record written before usage was recorded.
    """
    record = {
        "index": row["paragraph"],
        "text": row["text"],
        "markers": list(row["markers"] or []),
        "metadataMismatch": list(row["metadata_mismatch"] or []),
        "missingMarkers": list(row["missing_markers"] or []),
        "deterministicPass": bool(row["deterministic_pass"]),
        "verdict": row["verdict"],
        "rationale": row["rationale"],
        "expectedVerdict": row["expected_verdict"],
        "coverageScore": row["coverage_score"],
        "judgeModel": row["judge_model"],
    }
    if row.get("replies") is not None:
        record.update({key: row.get(column) or 0 for key, column in zip(USAGE_RECORD_KEYS, USAGE_COLUMNS)})
    judges = row.get("judges")
    if judges is not None:
        record["judges"] = [dict(judge) for judge in judges]
    return record


def outcome_from_rows(outcome: Mapping[str, Any], judgments: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The item outcome wire dict as recorded: the stored ``outcome`` JSON with its paragraphs put back."""
    rebuilt = dict(outcome)
    extra = dict(rebuilt.get("extra") or {})
    if judgments:
        extra[PARAGRAPHS_KEY] = [paragraph_extra(row) for row in sorted(judgments, key=lambda r: r["paragraph"])]
    rebuilt["extra"] = extra
    return rebuilt


def _cut(text: Any) -> Any:
    if isinstance(text, str) and len(text) > TRACE_TEXT_CHARS:
        return text[: TRACE_TEXT_CHARS - 1] + "…"
    return text


def compact_trace(response: Mapping[str, Any]) -> dict[str, Any]:
    """The compact trace of a generate response (docs/target-contract.md) for the ``items.trace`` column.

    Keeps each evidence span's ``marker``, ``document``, ``start``, ``end`` and text
    (cut to ``TRACE_TEXT_CHARS``) and each claim's ``text`` (cut), ``verdict`` and
    ``markers``; at most ``TRACE_MAX_ENTRIES`` of each, the rest counted in
    ``evidenceOmitted`` / ``claimsOmitted``. Unknown keys are dropped.

    Args:
        response: A validated generate response (``answer``, ``evidence``, ``claims``).

    Returns:
        ``{"evidence": [...], "claims": [...], "evidenceOmitted": n, "claimsOmitted": n}``.
    """
    evidence = [e for e in response.get("evidence") or [] if isinstance(e, Mapping)]
    claims = [c for c in response.get("claims") or [] if isinstance(c, Mapping)]
    return {
        "evidence": [
            {
                "marker": e.get("marker"),
                "document": e.get("document"),
                "start": e.get("start"),
                "end": e.get("end"),
                "text": _cut(e.get("text")),
            }
            for e in evidence[:TRACE_MAX_ENTRIES]
        ],
        "claims": [
            {"text": _cut(c.get("text")), "verdict": c.get("verdict"), "markers": list(c.get("markers") or [])}
            for c in claims[:TRACE_MAX_ENTRIES]
        ],
        "evidenceOmitted": max(len(evidence) - TRACE_MAX_ENTRIES, 0),
        "claimsOmitted": max(len(claims) - TRACE_MAX_ENTRIES, 0),
    }
