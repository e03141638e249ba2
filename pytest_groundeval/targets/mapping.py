"""Target maps: an existing HTTP API described by a JSON file, with no code (docs/byo.md, "Mapped targets").

A map names the request that asks the API a question (method, URL, headers, a JSON
body) and the JMESPath expressions that read the answer, its sources and, for a
verifying server, its evidence and claims from the API's response::

    {"request": {"method": "POST", "url": "https://rag.example/api/ask",
                 "headers": {"Authorization": "Bearer ${RAG_KEY}"},
                 "body": {"input": {"text": "{question}"}}},
     "response": {"answer": "output.reply", "sources": "output.citations",
                  "marker": "to_string(n)", "text": "passage", "metadata": {"speaker": "meta.author"}}}

``load_map`` reads and checks the whole file once, before any item runs: an unknown
key, an expression JMESPath cannot compile (or a function it does not have), an
unknown ``{field}`` or an undefined ``${VAR}`` raises ``MapError`` naming the file
and the key path. ``${VAR}`` values are read from the environment then and kept
as ``TargetMap.secrets``, which every text the harness records is scrubbed of
(``core.secrets``). ``TargetMap.read`` turns a decoded response into the
contract's generate response (docs/target-contract.md), or raises ``ValueError``
naming the expression that could not read it.

Standard library and ``jmespath`` only (imported on first use), so the plugin
checks a map while it parses its options, without the HTTP stack.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

from ..core.contract import MARKER_NAME_PATTERN
from ..core.text import shorten
from .protocol import JsonObject, TargetError
from .responses import check_generate_response

if TYPE_CHECKING:
    from jmespath.parser import ParsedResult

__all__ = [
    "INGEST_FIELDS",
    "ITEM_FIELDS",
    "MapError",
    "Rendered",
    "RequestTemplate",
    "ResponseMap",
    "TargetMap",
    "load_map",
    "parse_map",
]

ITEM_FIELDS = ("question", "find", "item_id", "run_id")
"""The ``{field}`` placeholders of ``request``: the item's question, its ``find`` label (or null),
its id and the run's id (the values of the ``X-Groundeval-*`` headers; docs/byo.md)."""

INGEST_FIELDS = ("name", "label", "format", "content_hash", "content", "run_id")
"""The ``{field}`` placeholders of ``ingest``: one corpus document (docs/target-contract.md,
``POST /v1/documents``) and the run's id."""

METHODS = ("GET", "POST", "PUT", "PATCH")
"""HTTP methods a map's request may use."""

HARNESS_HEADERS = ("accept-encoding", "content-length", "transfer-encoding")
"""Headers the harness sets itself (docs/target-contract.md, "Limits"); a map may not."""

CREDENTIAL_HEADER = re.compile(r"auth|cookie|key|token|secret|session|signature", re.IGNORECASE)
"""Header names whose literal values are masked like ``${VAR}`` values (``TargetMap.secrets``)."""

_TOP_KEYS = ("request", "response", "ingest", "comment")
_REQUEST_KEYS = ("method", "url", "headers", "body")
_RESPONSE_KEYS = (
    "answer",
    "sources",
    "marker",
    "text",
    "metadata",
    "evidence",
    "claims",
    "usage",
    "traceId",
)
_PER_SOURCE = ("marker", "text", "metadata")
_USAGE_KEYS = ("promptTokens", "completionTokens")

_TOKEN = re.compile(r"\{\{([A-Za-z_][A-Za-z0-9_-]*)\}\}|\$\{([^{}]*)\}|\{([A-Za-z_][A-Za-z0-9_-]*)\}")
"""``{{word}}`` (a literal ``{word}``), ``${VAR}`` (the environment) or ``{field}``; any other
brace text (JSON such as ``{"a": 1}``, ``{}``) is literal, as in spawn commands."""

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")

NULL_HINTS = {
    "list": "write `EXPR || \\`[]\\`` if the API leaves it out when there is none",
    "string": "write `EXPR || ''` if the API may leave it out",
}
"""How a map accepts a value an API omits, by the type expected: JMESPath's ``||`` gives a default."""


class MapError(ValueError):
    """A target map that cannot be used: the message names the file, the key path and the problem."""


# --------------------------------------------------------------------------- templates


@dataclass(frozen=True)
class _Template:
    """A string of a request template: literal parts and ``{field}`` names (``${VAR}`` already filled in)."""

    parts: tuple[str | tuple[str], ...]
    """Literal text, or a 1-tuple holding a field name."""

    @property
    def single(self) -> str | None:
        """The field name when the string is exactly one ``{field}`` (it then takes the value as it is)."""
        if len(self.parts) == 1 and isinstance(self.parts[0], tuple):
            return self.parts[0][0]
        return None

    def fill(
        self,
        values: Mapping[str, Any],
        encode: Callable[[str], str] = lambda text: text,
        literal: Callable[[str], str] = lambda text: text,
    ) -> str:
        """The string with each field's value as text (``encode``d; null as "", others as JSON), the rest ``literal``."""
        out = []
        for part in self.parts:
            if isinstance(part, str):
                out.append(literal(part))
                continue
            value = values.get(part[0])
            text = "" if value is None else value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            out.append(encode(text))
        return "".join(out)


@dataclass
class _Loader:
    """What checking one map file gathers: its name for messages, the environment, the secrets read."""

    source: str
    environ: Mapping[str, str]
    secrets: list[str] = field(default_factory=list)

    def fail(self, where: str, problem: str) -> MapError:
        return MapError(f'target map {self.source}: {where}: {problem} (docs/byo.md, "Mapped targets")')

    def template(self, text: str, where: str, fields: tuple[str, ...]) -> tuple[_Template, bool]:
        """Parse one template string; return it and whether it read the environment."""
        parts: list[str | tuple[str]] = []
        literal = ""
        last = 0
        from_env = False
        for match in _TOKEN.finditer(text):
            literal += text[last : match.start()]
            last = match.end()
            escaped, env, name = match.groups()
            if escaped is not None:
                literal += "{" + escaped + "}"
            elif env is not None:
                literal += self._env(env, where)
                from_env = True
            elif name in fields:
                if literal:
                    parts.append(literal)
                    literal = ""
                parts.append((name,))
            else:
                listed = ", ".join("{" + f + "}" for f in fields)
                raise self.fail(
                    where,
                    f"{{{name}}} is not a field: the fields here are {listed} "
                    f"(write {{{{{name}}}}} for a literal {{{name}}}, ${{{name}}} for an environment variable)",
                )
        literal += text[last:]
        if literal:
            parts.append(literal)
        return _Template(tuple(parts)), from_env

    def _env(self, name: str, where: str) -> str:
        if not _ENV_NAME.fullmatch(name):
            raise self.fail(where, f"${{{name}}} is not an environment variable name (letters, digits and _)")
        value = self.environ.get(name)
        if value is None:
            raise self.fail(where, f"${{{name}}} is not set in the environment")
        if not value.strip():
            raise self.fail(where, f"${{{name}}} is set but empty (an unset CI secret?)")
        self.secrets.append(value)
        return value


def _requote(text: str) -> str:
    """A URL's literal text percent-encoded where it must be (spaces, non-ASCII), escapes and delimiters kept."""
    return quote(text, safe=":/?#[]@!$&'()*+,;=%")


def _walk_body(value: Any, where: str, convert: Callable[[str, str], Any]) -> Any:
    """A JSON body with each string converted (``convert(text, key path)``), keys kept."""
    if isinstance(value, str):
        return convert(value, where)
    if isinstance(value, list):
        return [_walk_body(v, f"{where}[{i}]", convert) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: _walk_body(v, f"{where}.{k}", convert) for k, v in value.items()}
    return value


def _fill_body(value: Any, values: Mapping[str, Any]) -> Any:
    if isinstance(value, _Template):
        name = value.single
        return values.get(name) if name is not None else value.fill(values)
    if isinstance(value, list):
        return [_fill_body(v, values) for v in value]
    if isinstance(value, dict):
        return {k: _fill_body(v, values) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class Rendered:
    """One request ready to send: method, absolute URL, headers, JSON body (None: no body)."""

    method: str
    url: str = field(repr=False)
    headers: dict[str, str] = field(repr=False)
    body: Any = field(repr=False)

    @property
    def call(self) -> str:
        """How errors name the call: ``"POST /api/ask"``."""
        return f"{self.method} {urlsplit(self.url).path or '/'}"


@dataclass(frozen=True)
class RequestTemplate:
    """A map's ``request`` (or ``ingest``): method, URL, headers and body with their ``{field}``s."""

    method: str
    # Not in the repr: ${VAR} values are filled in (TargetMap.secrets).
    url: _Template = field(repr=False)
    headers: dict[str, _Template] = field(repr=False)
    body: Any = field(repr=False)
    """The JSON body with each string a ``_Template``; None when the request has no body."""

    def render(self, values: Mapping[str, Any]) -> Rendered:
        """The request for one call: ``{field}``s filled in (percent-encoded in the URL).

        A body string that is exactly one ``{field}`` takes the value itself (a ``find`` of
        null stays null, a JSON document's ``content`` stays a list); inside a longer string
        a value is its text (null as "", others as JSON).

        Raises:
            TargetError: a header value would hold a line break (a question in a header).
        """
        headers = {}
        for name, template in self.headers.items():
            value = template.fill(values)
            if "\r" in value or "\n" in value:
                raise TargetError(f"the target map's request header {name!r} would hold a line break; not sent")
            headers[name] = value
        url = self.url.fill(values, lambda text: quote(text, safe=""), literal=_requote)
        return Rendered(self.method, url, headers, _fill_body(self.body, values))


def _request(loader: _Loader, value: Any, where: str, fields: tuple[str, ...]) -> RequestTemplate:
    if not isinstance(value, dict):
        raise loader.fail(where, f"expected an object with {', '.join(_REQUEST_KEYS)}, got {_kind(value)}")
    _known_keys(loader, value, where, _REQUEST_KEYS)
    method = value.get("method", "POST")
    if not isinstance(method, str) or method.upper() not in METHODS:
        raise loader.fail(f"{where}.method", f"{method!r} is not one of {', '.join(METHODS)}")
    method = method.upper()
    url = value.get("url")
    if not isinstance(url, str) or not url.strip():
        raise loader.fail(f"{where}.url", "expected the URL to call, a string such as https://host/api/ask")
    url_template, _ = loader.template(url, f"{where}.url", fields)
    shown = url_template.fill({f: "x" for f in fields})
    parts = urlsplit(shown)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise loader.fail(f"{where}.url", f"{url!r} is not an http(s) URL with a host")
    if parts.username is not None or parts.password is not None:
        raise loader.fail(
            f"{where}.url", "the URL carries credentials; send them in a header from ${VAR} (masked in every output)"
        )
    headers_value = value.get("headers", {})
    if not isinstance(headers_value, dict):
        raise loader.fail(
            f"{where}.headers", f"expected an object of header names to strings, got {_kind(headers_value)}"
        )
    headers = {}
    for name, text in headers_value.items():
        at = f"{where}.headers.{name}"
        if not _HEADER_NAME.fullmatch(name):
            raise loader.fail(at, f"{name!r} is not a header name")
        if name.lower() in HARNESS_HEADERS:
            raise loader.fail(at, f'{name} is set by the harness (docs/target-contract.md, "Limits")')
        if not isinstance(text, str):
            raise loader.fail(at, f"a header value must be a string, got {_kind(text)}")
        template, from_env = loader.template(text, at, fields)
        literal = "".join(p for p in template.parts if isinstance(p, str))
        if "\r" in literal or "\n" in literal:
            raise loader.fail(at, "a header value may not hold a line break")
        if from_env or CREDENTIAL_HEADER.search(name):
            # The whole value is a credential ("Bearer <key>"); its literal parts are masked too.
            loader.secrets.extend(p for p in template.parts if isinstance(p, str))
        headers[name] = template
    body = value.get("body")
    if body is not None and method == "GET":
        raise loader.fail(f"{where}.body", "a GET request has no body: put the fields in the URL, or use POST")
    body = _walk_body(body, f"{where}.body", lambda text, at: loader.template(text, at, fields)[0])
    return RequestTemplate(method, url_template, headers, body)


# --------------------------------------------------------------------------- expressions


@dataclass(frozen=True)
class _Expression:
    """One compiled JMESPath expression of ``response``, with where it came from for messages."""

    key: str
    """Its key path, e.g. ``response.answer`` or ``response.metadata.speaker``."""
    text: str
    compiled: ParsedResult

    @property
    def named(self) -> str:
        return f"{self.key} {self.text!r}"

    def search(self, document: Any, where: str = "") -> Any:
        """The expression's value on ``document`` (``where``: which source, for the message).

        Raises:
            ValueError: JMESPath could not evaluate it (a function given a value of the wrong type).
        """
        from jmespath.exceptions import JMESPathError

        try:
            return self.compiled.search(document)
        except JMESPathError as exc:
            raise ValueError(f"the target map's {self.named}{where} could not be evaluated: {exc}") from None


def _functions(node: Any) -> Iterator[tuple[str, int]]:
    """``(name, argument count)`` of every function call in a parsed JMESPath tree."""
    stack = [node]
    while stack:
        current = stack.pop()
        if not isinstance(current, dict):
            continue
        children = current.get("children") or []
        if current.get("type") == "function_expression":
            yield str(current.get("value")), len(children)
        stack.extend(children)


def _compile(loader: _Loader, value: Any, where: str) -> _Expression:
    import jmespath
    from jmespath.exceptions import JMESPathError
    from jmespath.functions import Functions

    if not isinstance(value, str) or not value.strip():
        raise loader.fail(where, f"expected a JMESPath expression (a non-empty string), got {_kind(value)}")
    try:
        compiled = jmespath.compile(value)
    except JMESPathError as exc:
        raise loader.fail(
            where, f"{value!r} is not a valid JMESPath expression: {' '.join(str(exc).split())}"
        ) from None
    table = Functions().FUNCTION_TABLE
    for name, count in _functions(compiled.parsed):
        signature = table.get(name, {}).get("signature") if name in table else None
        if signature is None:
            raise loader.fail(where, f"{value!r} calls {name}(), which JMESPath does not have")
        variadic = bool(signature) and bool(signature[-1].get("variadic"))
        if count < len(signature) if variadic else count != len(signature):
            wanted = f"at least {len(signature)}" if variadic else str(len(signature))
            raise loader.fail(where, f"{value!r} calls {name}() with {count} argument(s); it takes {wanted}")
    return _Expression(where, value, compiled)


# --------------------------------------------------------------------------- reading a response


def _text(value: Any, expression: _Expression, where: str = "", *, nullable: bool = False) -> str | None:
    if isinstance(value, str) or (value is None and nullable):
        return value
    hint = f"; {NULL_HINTS['string']}" if value is None else ""
    raise ValueError(f"the target map's {expression.named}{where} gave {_brief(value)}, not a string{hint}")


def _brief(value: Any) -> str:
    if value is None:
        return "null"
    return shorten(json.dumps(value, ensure_ascii=False, default=str), 80)


@dataclass(frozen=True)
class ResponseMap:
    """A map's ``response``: the expressions that read a generate response from the API's (docs/byo.md)."""

    answer: _Expression
    sources: _Expression | None = None
    marker: _Expression | None = None
    text: _Expression | None = None
    metadata: dict[str, _Expression] = field(default_factory=dict)
    evidence: _Expression | None = None
    claims: _Expression | None = None
    usage: dict[str, _Expression] = field(default_factory=dict)
    trace_id: _Expression | None = None

    def read(self, document: Any) -> JsonObject:
        """The contract's generate response (docs/target-contract.md) read from one decoded API response.

        ``answer`` must give a string. ``sources``, ``evidence`` and ``claims`` must give lists
        (null is an error: a mistyped path gives null too). Per source, ``marker`` gives a string
        or an integer (default: the source's position from 1), ``text`` a string, each
        ``metadata`` field a string, a number or null (left out). ``usage`` counts may be null.
        The result is then checked as any generate response is (``responses.check_generate_response``).

        Raises:
            ValueError: an expression gave a value of the wrong type, could not be evaluated, or
                the result breaks the contract; the message names the expression.
        """
        answer = _text(self.answer.search(document), self.answer)
        response: JsonObject = {"answer": answer}
        for name, expression in (("evidence", self.evidence), ("claims", self.claims)):
            response[name] = self._list(expression, document) if expression is not None else []
        if self.sources is not None:
            response["sources"] = [self._source(i, s) for i, s in enumerate(self._list(self.sources, document))]
        if self.usage:
            response["usage"] = {key: expression.search(document) for key, expression in self.usage.items()}
        if self.trace_id is not None:
            trace = self.trace_id.search(document)
            response["traceId"] = trace if trace is None or isinstance(trace, str) else str(trace)
        try:
            return check_generate_response(response)
        except ValueError as exc:
            raise ValueError(f"{exc} (in what the target map read{self._culprit(str(exc))})") from None

    def _list(self, expression: _Expression, document: Any) -> list[Any]:
        value = expression.search(document)
        if not isinstance(value, list):
            hint = f"; {NULL_HINTS['list']}" if value is None else ""
            raise ValueError(f"the target map's {expression.named} gave {_brief(value)}, not a list{hint}")
        return value

    def _source(self, index: int, source: Any) -> JsonObject:
        where = f" for sources[{index}]"
        if self.marker is None:
            marker: Any = str(index + 1)
        else:
            marker = self.marker.search(source, where)
            if isinstance(marker, int) and not isinstance(marker, bool):
                marker = str(marker)
            if not isinstance(marker, str):
                raise ValueError(
                    f"the target map's {self.marker.named}{where} gave {_brief(marker)}, not a string or an integer"
                )
        out: JsonObject = {"marker": marker.strip().strip("[]")}
        if self.marker is not None and not re.match(MARKER_NAME_PATTERN, out["marker"]):
            # JMESPath's to_string(null) is 'null': the expression read a field the source does not have.
            hint = ": does the expression read a field the source has?" if out["marker"] == "null" else ""
            raise ValueError(
                f"the target map's {self.marker.named}{where} gave {shorten(out['marker'], 40)!r}, which no "
                f"citation in an answer ([N] or [S#]) can name{hint}"
            )
        if self.text is not None:
            out["text"] = _text(self.text.search(source, where), self.text, where)
        if self.metadata:
            metadata = {}
            for name, expression in self.metadata.items():
                value = expression.search(source, where)
                if value is None:
                    continue  # a field the source does not record is no disagreement (docs/citation.md)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    value = str(value)
                metadata[name] = _text(value, expression, where)
            out["metadata"] = metadata
        return out

    def _culprit(self, message: str) -> str:
        """``: response.claims 'output.checks'``, the expression behind the field the message names."""
        match = re.search(r"\b(answer|evidence|claims|sources|usage|traceId)\b", message)
        expression = (
            {
                "answer": self.answer,
                "evidence": self.evidence,
                "claims": self.claims,
                "sources": self.sources,
                "traceId": self.trace_id,
            }.get(match.group(1))
            if match
            else None
        )
        if match and match.group(1) == "usage" and self.usage:
            return ": " + ", ".join(e.named for e in self.usage.values())
        return f": {expression.named}" if expression is not None else ""


def _response(loader: _Loader, value: Any) -> ResponseMap:
    where = "response"
    if not isinstance(value, dict):
        raise loader.fail(where, f"expected an object of JMESPath expressions, got {_kind(value)}")
    _known_keys(loader, value, where, _RESPONSE_KEYS)
    if "answer" not in value:
        raise loader.fail(where, "missing 'answer', the expression that reads the answer text")
    if "sources" not in value:
        for key in _PER_SOURCE:
            if key in value:
                raise loader.fail(f"{where}.{key}", "is read per source: it needs response.sources")
    compiled: dict[str, Any] = {}
    for key in ("answer", "sources", "marker", "text", "evidence", "claims", "traceId"):
        if key in value:
            compiled[key] = _compile(loader, value[key], f"{where}.{key}")
    for key, names in (("metadata", None), ("usage", _USAGE_KEYS)):
        group = value.get(key, {})
        if not isinstance(group, dict):
            raise loader.fail(f"{where}.{key}", f"expected an object of JMESPath expressions, got {_kind(group)}")
        if names is not None:
            _known_keys(loader, group, f"{where}.{key}", names)
        compiled[key] = {name: _compile(loader, text, f"{where}.{key}.{name}") for name, text in group.items()}
    compiled["trace_id"] = compiled.pop("traceId", None)
    return ResponseMap(**compiled)


# --------------------------------------------------------------------------- the map


@dataclass(frozen=True)
class TargetMap:
    """A checked target map (docs/byo.md, "Mapped targets").

    ``secrets`` holds every ``${VAR}`` value and the value of every header built from one
    or named like a credential (``CREDENTIAL_HEADER``): the harness masks them in all it
    records. Its ``repr`` shows the file only.
    """

    path: Path
    request: RequestTemplate
    response: ResponseMap
    ingest: RequestTemplate | None = None
    secrets: tuple[str, ...] = field(default=(), repr=False)

    @property
    def origin(self) -> str:
        """``scheme://host[:port]`` of the request URL."""
        parts = urlsplit(self.request.url.fill({}))
        return f"{parts.scheme}://{parts.netloc}"

    def cannot_run(self, kind: str) -> str | None:
        """Why items of ``kind`` cannot run against this map, or None (docs/byo.md).

        ``qa`` items need ``evidence`` and ``claims``, ``adversarial`` items ``claims``,
        ``citation`` items ``sources`` or ``evidence``; ``temporal`` items write and query
        records, which a map does not describe. Other kinds (an extension's) are not refused.
        """
        mapped = {"evidence": self.response.evidence, "claims": self.response.claims, "sources": self.response.sources}
        need = {"qa": ("evidence", "claims"), "adversarial": ("claims",)}.get(kind, ())
        missing = [f"response.{key}" for key in need if mapped[key] is None]
        if kind == "citation" and mapped["sources"] is None and mapped["evidence"] is None:
            missing = ["response.sources (or response.evidence)"]
        if kind == "temporal":
            return (
                f"temporal items write and query records (POST /v1/records, /v1/query, /v1/compare), which the "
                f"target map {self.path.name} does not describe: run them against a target of the REST contract "
                "(docs/target-contract.md)"
            )
        if missing:
            return (
                f"{kind} items need the target map's {' and '.join(missing)}, which {self.path.name} does not "
                'give (docs/byo.md, "Mapped targets")'
            )
        return None


def _known_keys(loader: _Loader, value: Mapping[str, Any], where: str, known: tuple[str, ...]) -> None:
    for key in value:
        if key not in known:
            raise loader.fail(f"{where}.{key}" if where else key, f"unknown key; the keys here are {', '.join(known)}")


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), f"a {type(value).__name__}"
    )


def parse_map(data: Any, source: str, environ: Mapping[str, str] | None = None) -> TargetMap:
    """Check a decoded map file and compile it (``source``: the file, for messages).

    Args:
        data: The file's JSON value.
        source: How messages name the file.
        environ: Where ``${VAR}`` are read (default ``os.environ``).

    Raises:
        MapError: the map cannot be used; the message names ``source`` and the key path.
    """
    loader = _Loader(source, os.environ if environ is None else environ)
    if not isinstance(data, dict):
        raise MapError(f"target map {source}: expected a JSON object with request and response, got {_kind(data)}")
    _known_keys(loader, data, "", _TOP_KEYS)
    for key in ("request", "response"):
        if key not in data:
            raise loader.fail(key, "missing (docs/byo.md)")
    request = _request(loader, data["request"], "request", ITEM_FIELDS)
    response = _response(loader, data["response"])
    ingest = _request(loader, data["ingest"], "ingest", INGEST_FIELDS) if data.get("ingest") is not None else None
    return TargetMap(Path(source), request, response, ingest, tuple(dict.fromkeys(loader.secrets)))


def load_map(path: str | Path, environ: Mapping[str, str] | None = None) -> TargetMap:
    """Read, check and compile the target map at ``path`` (docs/byo.md, "Mapped targets").

    Raises:
        MapError: no such file, not JSON, or a map that cannot be used (``parse_map``).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise MapError(f"target map {path}: cannot be read ({exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MapError(f"target map {path}: not valid JSON: {exc}") from None
    return parse_map(data, str(path), environ)
