"""Response text to a checked response, stopping at the first value of the wrong shape (docs/target-contract.md, "Limits").

``json.loads`` builds the whole tree before any field is checked, and a tree of
small containers takes far more memory than its text: 15 MiB of
``"evidence": [[], [], …]`` is four million lists (about 20 times the body),
and a model check of it then reports four million errors (gigabytes). So a
response whose text could hold more than ``FEW_VALUES`` values is decoded here,
guided by the response model of its call (``responses.CALLS``):

* the fields of the response object and of each object the model describes are
  decoded one by one; so are the elements of each list the model describes,
  and each element is checked with its own model as soon as it is complete;
* a value of the wrong kind where the model expects an object, a list or a
  scalar is refused before it is decoded (only its first ``BRIEF_CHARS``
  characters are read, to quote it);
* any other value (a scalar, an extra field, a free-form record) is decoded
  whole by the C decoder (``json.JSONDecoder.raw_decode``).

So decoding stops at the first element or field of the wrong shape, having
built nothing past it: the memory it takes is the text plus what the values
before that point decode to. A response of few values is parsed by
``json.loads`` as before (its tree is small whatever it holds). Either way the
decoded response then gets the one full check of its call
(``responses.check_response``'s rules), so both paths accept the same responses;
with several faults, the guided path names the first in the text.
"""

from __future__ import annotations

import json
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Annotated, Any, Union, cast

from pydantic import BaseModel, TypeAdapter, ValidationError

from .responses import CALLS, MODELS, field_path, first_error, plain_json_text

__all__ = ["BRIEF_CHARS", "FEW_VALUES", "NotAnObject", "ShapeError", "decode_response"]

FEW_VALUES = 2048
"""Responses whose text holds at most this many ``,``, ``[`` and ``{`` (an upper bound on
their values) are parsed whole by ``json.loads``: their tree stays small."""

BRIEF_CHARS = 256
"""Characters of a refused value read to quote it in the message."""

_WHITESPACE = re.compile(r"[ \t\n\r]*")
# The bound C matcher, called as skip(text, pos).end() in the hot loops. `*` matches the
# empty string, so the match never fails: typed without the None that Pattern.match allows.
_SKIP_WS = cast(Callable[[str, int], re.Match[str]], _WHITESPACE.match)
_DECODER = json.JSONDecoder()


class ShapeError(ValueError):
    """A value of the wrong shape; the message names the field in the words of ``check_response``."""


class NotAnObject(ValueError):
    """The response is valid JSON but not an object; the message names what it is."""


@dataclass(frozen=True)
class _Shape:
    """What the model expects at one place: ``kind`` ``object``, ``list``, ``scalar`` or ``any``."""

    kind: str
    check: Callable[[Any], Any] | None = None
    """Validates a value at this place (raises ``ValidationError``); None for the root and ``any``."""
    fields: dict[str, _Shape] = field(default_factory=dict)
    """object: the shape of each known key (by its wire name); other keys are ``any``."""
    item: _Shape | None = None
    """list: the shape of each element."""


_ANY = _Shape("any")


def _members(annotation: Any) -> list[Any]:
    """The non-None members of an Optional/Union annotation (the annotation itself otherwise)."""
    origin = typing.get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        return [a for a in typing.get_args(annotation) if a is not type(None)]
    return [annotation]


def _bare(annotation: Any) -> Any:
    while typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _shape(annotation: Any, check: Callable[[Any], Any] | None) -> _Shape:
    members = [_bare(m) for m in _members(_bare(annotation))]
    kinds = set()
    for member in members:
        origin = typing.get_origin(member) or member
        if origin is list:
            kinds.add("list")
        elif origin is dict or (isinstance(member, type) and issubclass(member, BaseModel)):
            kinds.add("object")
        elif member is Any or member is object:
            kinds.add("any")
        else:
            kinds.add("scalar")
    if len(members) != 1 or kinds == {"any"}:
        # A union of several types: each is a scalar (str | int) or anything goes.
        return _Shape("scalar", check) if kinds == {"scalar"} else _ANY
    (member,) = members
    (kind,) = kinds
    if kind == "list":
        (item,) = typing.get_args(member) or (Any,)
        return _Shape("list", check, item=_shape(item, _checker(item)))
    if kind == "object" and isinstance(member, type) and issubclass(member, BaseModel):
        return _Shape("object", check, fields=_fields(member))
    return _Shape(kind, check)


def _checker(annotation: Any) -> Callable[[Any], Any]:
    bare = _bare(annotation)
    if isinstance(bare, type) and issubclass(bare, BaseModel):
        return bare.model_validate
    return TypeAdapter(annotation).validate_python


def _fields(model: type[BaseModel]) -> dict[str, _Shape]:
    out = {}
    for name, info in model.model_fields.items():
        # Annotated[(t, *metadata)], built in two steps: the one-line spelling reads to type
        # checkers as 3.11's star-in-subscript syntax, though it is a plain tuple at run time.
        params = (info.annotation, *info.metadata)
        annotation = Annotated[params] if info.metadata else info.annotation
        out[info.alias or name] = _shape(annotation, _checker(annotation))
    return out


@cache
def _root(call: str) -> _Shape:
    return _Shape("object", None, fields=_fields(MODELS[call]))


class _Long:
    """Stands for a value too long to quote, in a message."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __repr__(self) -> str:
        return f"{self.kind} of more than {BRIEF_CHARS} characters"


def _refused(text: str, pos: int, shape: _Shape, path: tuple[str | int, ...]) -> ShapeError:
    """The error of the value at ``pos``, a container ``shape`` does not allow, read no further than needed."""
    try:
        value = _DECODER.raw_decode(text[pos : pos + BRIEF_CHARS])[0]
    except (ValueError, RecursionError):
        value = _Long("a list" if text[pos] == "[" else "an object")
    if shape.check is not None:
        try:
            shape.check(value)
        except ValidationError as exc:
            return ShapeError(first_error(exc, path))
    expected = {"object": "an object", "list": "a list"}.get(shape.kind, "not a list or object")
    return ShapeError(f"field '{field_path(path)}' must be {expected}, got {value!r}")


def _decode(text: str, pos: int, shape: _Shape, path: tuple[str | int, ...]) -> tuple[Any, int]:
    """Decode the value at ``text[pos]`` (no leading white space) as ``shape`` expects; return it and its end."""
    char = text[pos : pos + 1]
    if shape.kind == "any" or char not in ("[", "{"):
        return _DECODER.raw_decode(text, pos)
    if (shape.kind, char) not in (("object", "{"), ("list", "[")):
        raise _refused(text, pos, shape, path)
    if char == "{" and not shape.fields:
        return _DECODER.raw_decode(
            text, pos
        )  # a free-form record: nothing inside it to check, the C decoder takes it whole
    skip = _SKIP_WS
    if char == "{":
        out: dict[str, Any] = {}
        pos = skip(text, pos + 1).end()
        if text.startswith("}", pos):
            return out, pos + 1
        while True:
            if not text.startswith('"', pos):
                raise json.JSONDecodeError("Expecting property name enclosed in double quotes", text, pos)
            key, pos = _DECODER.raw_decode(text, pos)
            pos = skip(text, pos).end()
            if not text.startswith(":", pos):
                raise json.JSONDecodeError("Expecting ':' delimiter", text, pos)
            pos = skip(text, pos + 1).end()
            out[key], pos = _decode(text, pos, shape.fields.get(key, _ANY), (*path, key))
            pos = skip(text, pos).end()
            if text.startswith("}", pos):
                return out, pos + 1
            if not text.startswith(",", pos):
                raise json.JSONDecodeError("Expecting ',' delimiter", text, pos)
            pos = skip(text, pos + 1).end()
    items: list[Any] = []
    item = shape.item or _ANY
    pos = skip(text, pos + 1).end()
    if text.startswith("]", pos):
        return items, pos + 1
    while True:
        value, pos = _decode(text, pos, item, (*path, len(items)))
        if item.check is not None:
            try:
                item.check(value)
            except ValidationError as exc:
                raise ShapeError(first_error(exc, (*path, len(items)))) from None
        items.append(value)
        pos = skip(text, pos).end()
        if text.startswith("]", pos):
            return items, pos + 1
        if not text.startswith(",", pos):
            raise json.JSONDecodeError("Expecting ',' delimiter", text, pos)
        pos = skip(text, pos + 1).end()


def _check_list_syntax(text: str, pos: int) -> None:
    """Raise what ``json.loads`` would for the list at ``text[pos]``, holding one element at a time."""
    skip = _SKIP_WS
    pos = skip(text, pos + 1).end()
    if not text.startswith("]", pos):
        while True:
            pos = skip(text, _DECODER.raw_decode(text, pos)[1]).end()
            if text.startswith("]", pos):
                break
            if not text.startswith(",", pos):
                raise json.JSONDecodeError("Expecting ',' delimiter", text, pos)
            pos = skip(text, pos + 1).end()
    end = skip(text, pos + 1).end()
    if end != len(text):
        raise json.JSONDecodeError("Extra data", text, pos + 1)


def few_values(text: str) -> bool:
    """Whether ``text`` holds at most ``FEW_VALUES`` commas and opening brackets (C-speed counts)."""
    count = text.count(",")
    if count > FEW_VALUES:
        return False
    count += text.count("[")
    return count <= FEW_VALUES and count + text.count("{") <= FEW_VALUES


def decode_response(call: str, text: str) -> dict[str, Any]:
    """Decode and check the response text of target method ``call`` (``generate``, ``query``, …).

    Returns:
        The response object, checked by ``responses.CALLS[call]``.

    Raises:
        json.JSONDecodeError: the text is not valid JSON (up to the first shape error).
        RecursionError: the JSON nests deeper than the C decoder can follow.
        NotAnObject: the JSON value is not an object.
        ValueError: the response breaks docs/target-contract.md (``ShapeError`` when
            found while decoding); the message names the first bad field.
    """
    if few_values(text):
        body = json.loads(text)
    else:
        start = _SKIP_WS(text, 0).end()
        if text.startswith("[", start):
            _check_list_syntax(text, start)
            raise NotAnObject("a list")  # said without building it
        if not text.startswith("{", start):
            body = json.loads(text)  # a scalar (one value, bounded by the text), or a syntax error
        else:
            body, end = _decode(text, start, _root(call), ())
            if _SKIP_WS(text, end).end() != len(text):
                raise json.JSONDecodeError("Extra data", text, end)
    if not isinstance(body, dict):
        raise NotAnObject(f"a {type(body).__name__}")
    return CALLS[call](body, plain=plain_json_text(text))
