"""The shapes of target responses, checked once, by models, at the target boundary.

docs/target-contract.md defines each response; the models here are that
definition in code. ``check_response(call, body)`` validates one response and
returns it unchanged, or raises ``ValueError`` naming the first bad field in the
words the contract uses (``missing required field 'claims[0].end'``,
``field 'answer' must be a string, got None``). ``HttpTarget`` calls it for every
HTTP response (adding the URL, the status and a body excerpt to the message);
``ItemRunner`` calls it for targets that do not check their own responses
(in-process ``Target`` objects), so every response is checked exactly once.

Before any field is read, the whole response is walked once (without
recursion): it may nest at most ``MAX_JSON_DEPTH`` levels, hold no container
inside itself, and hold no string with a lone surrogate (not valid Unicode, so
not UTF-8 byte offsets either). So whatever JSON-like value a target returns,
over HTTP or in process, the check raises ``ValueError`` naming the problem and
nothing else.

Beyond field types, a generate response must hold together: each claim's
``start``/``end`` (UTF-8 byte offsets) slice the claim's text from the answer,
citation markers and white space aside, and each marker a claim cites is the
marker of a returned evidence entry.
"""

from __future__ import annotations

import re
import reprlib
from collections.abc import Callable
from typing import Annotated, Any, Literal, Protocol, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from ..core.contract import CLAIM_VERDICTS, MARKER_NAME_PATTERN, strip_markers
from ..core.text import shorten
from .protocol import TargetError

__all__ = [
    "CALLS",
    "MAX_JSON_DEPTH",
    "MODELS",
    "check_response",
    "check_generate_response",
    "check_tree",
    "first_error",
]

MAX_JSON_DEPTH = 128
"""Deepest nesting of objects and lists a response may have (docs/target-contract.md, "Limits").

A generate response nests 4 levels, a query's records as deep as their properties;
128 is far above both and far below where Python's parser or a recursive walk fails."""


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
    markers: list[StrictStr] = Field(fail_fast=True)
    verdict: Literal[CLAIM_VERDICTS]  # type: ignore[valid-type]


class Usage(_Shape):
    """Token usage of a generate call; either count may be absent or null, never negative."""

    prompt_tokens: Annotated[StrictInt, Field(ge=0)] | None = Field(default=None, alias="promptTokens")
    """Prompt tokens of the call (an integer >= 0): a negative count would pass a ``tokensPerQuery`` ceiling."""
    completion_tokens: Annotated[StrictInt, Field(ge=0)] | None = Field(default=None, alias="completionTokens")
    """Completion tokens of the call (an integer >= 0)."""


class ToolCall(_Shape):
    """One tool the target called while answering (optional ``toolTrace`` entry): ids and counts, no payload."""

    tool: Annotated[StrictStr, Field(min_length=1)]
    """The tool's name, e.g. ``search`` or ``sql``."""
    calls: Annotated[StrictInt, Field(ge=0)] | None = None
    """How many times it was called (default 1)."""
    hits: list[StrictStr | StrictInt] | None = Field(default=None, fail_fast=True)
    """Ids of what it returned (document, chunk or row ids), never the text."""
    hit_count: Annotated[StrictInt, Field(ge=0)] | None = Field(default=None, alias="hitCount")
    """How many hits it returned (default: the length of ``hits``)."""


class Source(_Shape):
    """One source an answer may cite that is not a corpus span (optional ``sources``; a mapped target's, docs/byo.md)."""

    marker: StrictStr
    """The marker as written inside the answer's brackets: ``1`` for ``[1]``."""
    text: StrictStr | None = None
    """The source's text (shown to a citation judge and scorer)."""
    metadata: dict[str, StrictStr] | None = None
    """Metadata fields, e.g. ``{"speaker": "Anna Berg"}``, checked against mentions (docs/citation.md)."""


class GenerateResponse(_Shape):
    """``POST /v1/generate``."""

    answer: StrictStr
    # fail_fast: a list stops at its first bad element, so a response of a million bad
    # elements costs one error, not a million (docs/target-contract.md, "Limits").
    evidence: list[EvidenceEntry] = Field(fail_fast=True)
    claims: list[Claim] = Field(fail_fast=True)
    trace_id: StrictStr | None = Field(default=None, alias="traceId")
    usage: Usage | None = None
    tool_trace: list[ToolCall] | None = Field(default=None, alias="toolTrace", fail_fast=True)
    """Optional compact tool trace (docs/target-contract.md), stored in the run history."""
    iterations: Annotated[StrictInt, Field(ge=0)] | None = None
    """Optional count of the target's agent iterations (model round trips) for this answer."""
    sources: list[Source] | None = Field(default=None, fail_fast=True)
    """Optional sources beside ``evidence`` that the answer's markers may name (docs/target-contract.md)."""


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

    records: list[dict[str, Any]] = Field(fail_fast=True)


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
    "greater_than_equal": "an integer >= 0",
    "string_too_short": "a non-empty string",
}


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxdict, _REPR.maxlist, _REPR.maxtuple = 2, 4, 4, 4
_REPR.maxstring, _REPR.maxother, _REPR.maxlong = 60, 60, 40


def _brief(value: Any) -> str:
    """A short repr of ``value`` for a message, whatever it is (huge, deep, or with a failing repr)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"an integer of {value.bit_length()} bits"
    try:
        return _REPR.repr(value)
    except Exception:  # noqa: BLE001 - a repr that fails, or an integer too long to print, deep inside
        return f"a {type(value).__name__}"


_PathNode: TypeAlias = "tuple[_PathNode | None, Any]"
"""A path into a response as a linked list: ``(parent node, key or index)``; the root is ``(None, None)``."""


def _tree_path(node: _PathNode | None) -> str:
    keys: list[Any] = []
    while node is not None and node[1] is not None:
        node, key = node
        keys.append(key)
    path = _path(tuple(reversed(keys))) or "(the response)"
    return path if len(path) <= 100 else f"{path[:48]}…{path[-48:]}"


def check_tree(body: Any) -> None:
    """Walk a JSON-like value once, iteratively; raise ``ValueError`` if it cannot be a JSON response.

    Refused: nesting deeper than ``MAX_JSON_DEPTH``; a dict or list that contains
    itself; a string (value or key) holding a lone surrogate. Dicts, lists and
    tuples are walked; any other value is a leaf (its type is the models' business).
    A container reached twice (shared, not circular) is walked once.
    """
    # Each stack entry: (value, depth, node) where node = (parent node, key) names the path;
    # (exit_, id, None) closes a container once its children are done.
    exit_ = object()
    stack: list[tuple[Any, int, _PathNode | None]] = [(body, 1, (None, None))]
    open_ids: set[int] = set()
    done_ids: set[int] = set()
    while stack:
        value, depth, node = stack.pop()
        if value is exit_:
            open_ids.discard(depth)
            done_ids.add(depth)
            continue
        if isinstance(value, str):
            bad = _LONE_SURROGATE.search(value)
            if bad:
                raise ValueError(
                    f"field '{_tree_path(node)}' holds a lone surrogate (U+{ord(bad.group()):04X}) at "
                    f"character {bad.start()}: not valid Unicode text"
                )
            continue
        if not isinstance(value, (dict, list, tuple)):
            continue
        ident = id(value)
        if ident in open_ids:
            raise ValueError(f"field '{_tree_path(node)}' contains itself: a response must be a tree")
        if ident in done_ids:
            continue
        if depth > MAX_JSON_DEPTH:
            raise ValueError(f"field '{_tree_path(node)}' is nested deeper than {MAX_JSON_DEPTH} levels")
        open_ids.add(ident)
        stack.append((exit_, ident, None))
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str) and _LONE_SURROGATE.search(key):
                    raise ValueError(
                        f"a key of field '{_tree_path(node)}' holds a lone surrogate: not valid Unicode text"
                    )
                stack.append((item, depth + 1, (node, key)))
        else:
            for index, item in enumerate(value):
                stack.append((item, depth + 1, (node, index)))


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int) and not isinstance(part, bool):
            out += f"[{part}]"
        elif not isinstance(part, str):
            out += f"[{_brief(part)}]"
        elif part in ("str", "int"):  # a union member's tag, not a key
            continue
        else:
            out += f".{part}" if out else part
    return out


def field_path(loc: tuple[Any, ...]) -> str:
    """A pydantic error location in the contract's words: ``('claims', 0, 'end')`` -> ``claims[0].end``."""
    return _path(loc)


def first_error(exc: ValidationError, prefix: tuple[Any, ...] = ()) -> str:
    """The first error of ``exc`` in the contract's words, its location under ``prefix`` (where the value sits)."""
    error = exc.errors(include_url=False)[0]
    loc = prefix + tuple(error["loc"])
    value = error.get("input")
    kind = error["type"]
    if kind == "missing":
        return f"missing required field {_path(loc)!r}"
    if kind == "literal_error" and loc and loc[-1] == "verdict":
        return f"field '{_path(loc)}' is {_brief(value)}: expected one of {', '.join(CLAIM_VERDICTS)}"
    if loc and isinstance(loc[-1], int) and len(loc) >= 2 and loc[-2] == "markers":
        return f"field '{_path(loc[:-1])}' must be a list of strings, got {_brief(value)}"
    if len(loc) >= 2 and loc[-1] in ("str", "int"):
        return f"field '{_path(loc)}' must be a string or an integer, got {_brief(value)}"
    words = _KIND_WORDS.get(kind, kind.replace("_", " "))
    return f"field '{_path(loc)}' must be {words}, got {_brief(value)}"


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def plain_json_text(text: str) -> bool:
    """Whether a value ``json.loads`` makes of ``text`` needs no ``check_tree`` walk.

    Parsed from text, a value cannot contain itself; it can nest deeper than
    ``MAX_JSON_DEPTH`` only with that many brackets, and hold a lone surrogate only
    through a ``\\uD800``-``\\uDFFF`` escape (decoded text holds none). Both are
    found by C-speed scans of the text, so a plain response skips the walk.
    """
    return text.count("{") + text.count("[") <= MAX_JSON_DEPTH and _SURROGATE_ESCAPE.search(text) is None


class ResponseCheck(Protocol):
    """The check of one target method's response (a value of ``CALLS``)."""

    def __call__(self, body: Any, *, plain: bool = False) -> dict[str, Any]:
        """Return ``body`` (a JSON object) unchanged or raise ValueError naming its first bad field.

        ``plain``: ``body`` was parsed from text that ``plain_json_text`` accepts, so the
        depth/self-containment/surrogate walk is skipped.
        """
        ...


def _validator(model: type[_Shape], then: Callable[[dict[str, Any]], None] | None = None) -> ResponseCheck:
    def check(body: Any, *, plain: bool = False) -> dict[str, Any]:
        """Check ``body``; ``plain``: it was parsed from text that ``plain_json_text`` accepts."""
        if not isinstance(body, dict):
            raise ValueError(f"expected a JSON object, got {type(body).__name__}")
        if not plain:
            check_tree(body)
        try:
            model.model_validate(body)
        except ValidationError as exc:
            raise ValueError(first_error(exc)) from None
        if then is not None:
            then(body)
        return body

    return check


def _check_generate_coherence(body: dict[str, Any]) -> None:
    seen: dict[str, int] = {}
    for i, source in enumerate(body.get("sources") or ()):
        marker = source["marker"]
        if not re.match(MARKER_NAME_PATTERN, marker):
            raise ValueError(
                f"sources[{i}].marker {shorten(marker, 40)!r} is not a marker an answer can cite ([N] or [S#], "
                "docs/target-contract.md)"
            )
        if marker in seen:
            raise ValueError(
                f"sources[{i}].marker {marker!r} repeats the marker of sources[{seen[marker]}]: "
                f"an answer's [{marker}] could name either"
            )
        seen[marker] = i
    answer = body["answer"].encode("utf-8")
    markers = {ev["marker"] for ev in body["evidence"]} | {s["marker"] for s in body.get("sources") or ()}
    for i, claim in enumerate(body["claims"]):
        start, end = claim["start"], claim["end"]
        try:
            sliced = answer[start:end].decode("utf-8") if 0 <= start <= end <= len(answer) else None
        except UnicodeDecodeError:
            sliced = None
        # A well-formed reply's claim text is its slice as it is: equal without the markers stripped (issue 24).
        if sliced is None or (
            sliced != claim["text"]
            and " ".join(strip_markers(sliced).split()) != " ".join(strip_markers(claim["text"]).split())
        ):
            raise ValueError(
                f"claims[{i}] start/end ({_brief(start)}, {_brief(end)}) do not slice "
                f"its text {shorten(claim['text'], 80)!r} from the answer (UTF-8 byte offsets, "
                f"docs/target-contract.md); they slice "
                f"{shorten(sliced, 80) if sliced is not None else '(not a valid span)'!r}"
            )
        unknown = [m for m in claim["markers"] if m not in markers]
        if unknown:
            raise ValueError(
                f"claims[{i}].markers names {_brief(unknown)}, which no evidence entry has "
                f"(evidence markers: {_brief(sorted(markers))})"
            )


check_generate_response = _validator(GenerateResponse, _check_generate_coherence)
"""Check a generate response; raise ValueError naming the first bad field. Returns the body."""

MODELS: dict[str, type[BaseModel]] = {
    "info": InfoResponse,
    "ingest": DocumentWritten,
    "generate": GenerateResponse,
    "records": RecordWritten,
    "query": QueryResponse,
    "compare": CompareResponse,
}
"""Target method name -> the model of its response."""

CALLS: dict[str, ResponseCheck] = {
    "info": _validator(InfoResponse),
    "ingest": _validator(DocumentWritten),
    "generate": check_generate_response,
    "records": _validator(RecordWritten),
    "query": _validator(QueryResponse),
    "compare": _validator(CompareResponse),
}
"""Target method name -> the check of its response."""


def check_response(call: str, body: Any) -> dict[str, Any]:
    """Check the response of target method ``call`` (``generate``, ``records``, …).

    Returns:
        ``body``, unchanged.

    Raises:
        TargetError: the response breaks docs/target-contract.md (including a value
            that is not a JSON object, nests too deep, contains itself or holds a lone
            surrogate); the message names the call and the first bad field. Nothing
            else is raised, whatever JSON-like value ``body`` is.
    """
    try:
        return CALLS[call](body)
    except ValueError as exc:
        raise TargetError(f"{call} returned a malformed response: {exc}") from None
