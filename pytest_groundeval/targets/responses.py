"""The shapes of target responses, checked once, by models, at the target boundary.

docs/target-contract.md defines each response; the models here are that
definition in code. ``check_response(call, body)`` validates one response and
returns it unchanged, or raises ``ValueError`` naming the first bad field in the
words the contract uses (``missing required field 'claims[0].end'``,
``field 'answer' must be a string, got None``). ``HttpTarget`` calls it for every
HTTP response (adding the URL, the status and a body excerpt to the message);
``ItemRunner`` calls it for targets that do not check their own responses
(in-process ``Target`` objects), so every response is checked exactly once.

Beyond field types, a generate response must hold together: each claim's
``start``/``end`` (UTF-8 byte offsets) slice the claim's text from the answer,
citation markers and white space aside, and each marker a claim cites is the
marker of a returned evidence entry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from ..core.contract import VERDICTS, strip_markers
from ..core.text import shorten

__all__ = ["CALLS", "check_response", "check_generate_response"]


class _Shape(BaseModel):
    """A response object: strict types, extra fields allowed (a target may say more)."""

    model_config = ConfigDict(strict=True, extra="allow")


class EvidenceEntry(_Shape):
    """One retrieved evidence span of a generate response."""

    marker: StrictStr
    document: StrictStr
    start: StrictInt
    end: StrictInt


class Claim(_Shape):
    """One claim of a generate response, with the target's verdict."""

    text: StrictStr
    start: StrictInt
    end: StrictInt
    markers: list[StrictStr]
    verdict: Literal[VERDICTS]  # type: ignore[valid-type]


class Usage(_Shape):
    """Token usage of a generate call; either count may be absent or null."""

    prompt_tokens: StrictInt | None = Field(default=None, alias="promptTokens")
    completion_tokens: StrictInt | None = Field(default=None, alias="completionTokens")


class GenerateResponse(_Shape):
    """``POST /v1/generate``."""

    answer: StrictStr
    evidence: list[EvidenceEntry]
    claims: list[Claim]
    trace_id: StrictStr | None = Field(default=None, alias="traceId")
    usage: Usage | None = None


class InfoModels(_Shape):
    generate: StrictStr | None = None
    embed: StrictStr | None = None


class InfoResponse(_Shape):
    """``GET /v1/info``."""

    models: InfoModels


RecordId = Annotated[StrictStr | StrictInt, Field(union_mode="left_to_right")]


class DocumentWritten(_Shape):
    """``POST /v1/documents``."""

    document_id: RecordId = Field(alias="documentId")
    tx_start: StrictInt = Field(alias="txStart")


class RecordWritten(_Shape):
    """``POST /v1/records``."""

    id: RecordId
    tx_start: StrictInt = Field(alias="txStart")


class QueryResponse(_Shape):
    """``POST /v1/query``."""

    records: list[dict[str, Any]]


class CompareResponse(_Shape):
    """``POST /v1/compare``."""

    added: list[Any]
    removed: list[Any]
    changed: list[Any]


_KIND_WORDS = {
    "string_type": "a string",
    "int_type": "an integer",
    "list_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
}


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("str", "int"):  # a union member's tag, not a key
            continue
        else:
            out += f".{part}" if out else str(part)
    return out


def _first_error(exc: ValidationError) -> str:
    error = exc.errors(include_url=False)[0]
    loc = tuple(error["loc"])
    value = error.get("input")
    kind = error["type"]
    if kind == "missing":
        return f"missing required field {_path(loc)!r}"
    if kind == "literal_error" and loc and loc[-1] == "verdict":
        return f"field '{_path(loc)}' is {value!r}: expected one of {', '.join(VERDICTS)}"
    if loc and isinstance(loc[-1], int) and len(loc) >= 2 and loc[-2] == "markers":
        return f"field '{_path(loc[:-1])}' must be a list of strings, got {value!r:.80}"
    if len(loc) >= 2 and loc[-1] in ("str", "int"):
        return f"field '{_path(loc)}' must be a string or an integer, got {value!r:.80}"
    words = _KIND_WORDS.get(kind, kind.replace("_", " "))
    return f"field '{_path(loc)}' must be {words}, got {value!r:.80}"


def _validator(model: type[_Shape], then: Callable[[dict], None] | None = None) -> Callable[[Any], dict]:
    def check(body: Any) -> dict:
        if not isinstance(body, dict):
            raise ValueError(f"expected a JSON object, got {type(body).__name__}")
        try:
            model.model_validate(body)
        except ValidationError as exc:
            raise ValueError(_first_error(exc)) from None
        if then is not None:
            then(body)
        return body

    return check


def _check_generate_coherence(body: dict) -> None:
    answer = body["answer"].encode("utf-8")
    markers = {ev["marker"] for ev in body["evidence"]}
    for i, claim in enumerate(body["claims"]):
        start, end = claim["start"], claim["end"]
        try:
            sliced = answer[start:end].decode("utf-8") if 0 <= start <= end <= len(answer) else None
        except UnicodeDecodeError:
            sliced = None
        if sliced is None or " ".join(strip_markers(sliced).split()) != " ".join(strip_markers(claim["text"]).split()):
            raise ValueError(
                f"claims[{i}] start/end ({start}, {end}) do not slice "
                f"its text {shorten(claim['text'], 80)!r} from the answer (UTF-8 byte offsets, "
                f"docs/target-contract.md); they slice "
                f"{shorten(sliced, 80) if sliced is not None else '(not a valid span)'!r}"
            )
        unknown = [m for m in claim["markers"] if m not in markers]
        if unknown:
            raise ValueError(
                f"claims[{i}].markers names {unknown}, which no evidence entry has "
                f"(evidence markers: {sorted(markers)})"
            )


check_generate_response = _validator(GenerateResponse, _check_generate_coherence)
"""Check a generate response; raise ValueError naming the first bad field. Returns the body."""

CALLS: dict[str, Callable[[Any], dict]] = {
    "info": _validator(InfoResponse),
    "ingest": _validator(DocumentWritten),
    "generate": check_generate_response,
    "records": _validator(RecordWritten),
    "query": _validator(QueryResponse),
    "compare": _validator(CompareResponse),
}
"""Target method name -> the check of its response."""


def check_response(call: str, body: Any) -> dict:
    """Check the response of target method ``call`` (``generate``, ``records``, …).

    Returns:
        ``body``, unchanged.

    Raises:
        TargetError: the response breaks docs/target-contract.md; the message names
            the call and the first bad field.
    """
    from .protocol import TargetError

    try:
        return CALLS[call](body)
    except ValueError as exc:
        raise TargetError(f"{call} returned a malformed response: {exc}") from None
