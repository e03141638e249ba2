"""JSON values a manifest or a request body may not hold, and where the first one is (docs/dataset.md, docs/target-contract.md).

Python's ``json`` accepts more than JSON tools agree on, and everything the
loader accepts is later sent to a target as JSON. So a manifest is refused when
it holds

* a duplicate key in one object (the later value would silently win);
* ``NaN``, ``Infinity`` or ``-Infinity`` (not JSON; a target's parser refuses them);
* a number too large for a 64-bit float (``1e400`` would read as infinity);
* an integer outside ±(2**53 − 1), the range every JSON implementation reads
  exactly (RFC 7493, I-JSON);
* a string (or key) holding a lone UTF-16 surrogate (``"\\ud800"``), which no
  UTF-8 text can carry, so it cannot be sent on.

``DECODER`` raises on the first of these while parsing at C speed, without
saying where; ``first_problem`` then walks the one value at fault by hand to
give its JSON path and offset. Lone surrogates come only from ``\\u`` escapes,
so the loader looks for them only where ``SURROGATE_ESCAPE`` matches.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

MAX_SAFE_INTEGER = 2**53 - 1
"""The largest integer magnitude a manifest may hold (RFC 7493: exact in every JSON implementation)."""

SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""A ``\\u`` escape of a UTF-16 surrogate (paired or lone): where a lone surrogate can come from."""

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_WHITESPACE = re.compile(r"[ \t\n\r]*")
# The bound C matcher, called as skip(text, pos).end() in the hot loops. `*` matches the
# empty string, so the match never fails: typed without the None that Pattern.match allows.
_SKIP_WS = cast(Callable[[str, int], re.Match[str]], _WHITESPACE.match)
_CONSTANTS = ("NaN", "Infinity", "-Infinity")


class Refused(Exception):
    """A value the manifest may not hold was decoded (raised by ``DECODER``'s hooks)."""


class DuplicateKey(Refused):
    """A key occurs twice in one JSON object."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def duplicate_key_message(key: str) -> str:
    """What is wrong with a duplicate key, in the loader's words."""
    return f"duplicate key {key!r} in one JSON object; the later value would silently win, so remove one"


def no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` that refuses a repeated key.

    Raises:
        DuplicateKey: a key occurs twice.
    """
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return result


def number_problem(token: str) -> str | None:
    """Why a JSON number literal (or ``NaN``/``Infinity``) may not be in a manifest, or None.

    Args:
        token: The literal as written, e.g. ``"12"``, ``"1e400"``, ``"NaN"``.
    """
    if token in _CONSTANTS:
        return f"{token} is not a JSON number (JSON has no NaN or Infinity); write a finite number or null"
    match = _NUMBER.fullmatch(token)
    if match is None:  # pragma: no cover - the decoder only hands over number literals
        return f"{token!r} is not a JSON number"
    if match.group(1) is None and match.group(2) is None:
        digits = token.lstrip("-")
        if len(digits) > 16 or int(digits) > MAX_SAFE_INTEGER:
            shown = token if len(token) <= 24 else token[:20] + f"… ({len(digits)} digits)"
            return (
                f"the integer {shown} is outside ±{MAX_SAFE_INTEGER}, the range every JSON implementation "
                "reads exactly (RFC 7493); write it as a string if it is an identifier"
            )
        return None
    try:
        value = float(token)
    except (OverflowError, ValueError):  # pragma: no cover - float() of a JSON number does not raise
        value = math.inf
    if not math.isfinite(value):
        shown = token if len(token) <= 24 else token[:20] + "…"
        return f"the number {shown} is too large for a 64-bit float (it would read as infinity)"
    return None


def lone_surrogate_problem(value: str) -> str | None:
    """Why a decoded string may not be in a manifest (a lone surrogate), or None."""
    if value.isascii():
        return None
    found = _LONE_SURROGATE.search(value)
    if found is None:
        return None
    return (
        f"holds a lone UTF-16 surrogate (\\u{ord(found.group()):04x} at character {found.start()}), "
        "which is not text and cannot be sent as UTF-8; fix the escape or remove it"
    )


def _checked_int(token: str) -> int:
    if len(token) > 15:
        problem = number_problem(token)
        if problem is not None:
            raise Refused(problem)
    return int(token)


def _checked_float(token: str) -> float:
    value = float(token)
    if value - value != 0.0:  # inf - inf is nan; cheaper than math.isfinite through a hook
        raise Refused(number_problem(token) or token)
    return value


def _refuse_constant(token: str) -> Any:
    raise Refused(number_problem(token) or token)


DECODER = json.JSONDecoder(
    object_pairs_hook=no_duplicate_keys,
    parse_int=_checked_int,
    parse_float=_checked_float,
    parse_constant=_refuse_constant,
)
"""A JSON decoder raising ``Refused`` on the first value a manifest may not hold (C speed)."""

NUMBERS_ONLY = json.JSONDecoder(parse_int=_checked_int, parse_float=_checked_float, parse_constant=_refuse_constant)
"""Like ``DECODER`` but a repeated key keeps its last value, as JSON parsers commonly do (for
request bodies: the reference target, docs/target-contract.md)."""

LENIENT = json.JSONDecoder(parse_int=lambda _: 0, parse_float=lambda _: 0.0, parse_constant=lambda _: None)
"""A decoder that never refuses a number (each reads as 0 or null), for reading around a known problem."""


@dataclass(frozen=True)
class Problem:
    """The first value at fault inside one JSON value.

    Attributes:
        offset: Character offset in the text of the value (or key) at fault.
        path: JSON path parts from the document root: keys and list indexes.
        what: What is wrong, in plain words.
    """

    offset: int
    path: tuple[str | int, ...]
    what: str


def first_problem(text: str, pos: int, path: Sequence[str | int] = (), *, duplicates: bool = True) -> Problem | None:
    """Walk the JSON value starting at ``text[pos]`` and return its first refused value, or None.

    Args:
        text: The whole document.
        pos: Offset where the value starts (no leading whitespace).
        path: The value's JSON path parts from the document root.
        duplicates: Whether a repeated key is a problem (``DECODER``) or not (``NUMBERS_ONLY``).

    Returns:
        The first problem in document order, or None when the value holds none,
        is not valid JSON, or nests too deeply to walk (the caller then reports
        what it knows).
    """
    try:
        return _walk(text, pos, tuple(path), duplicates)[0]
    except (ValueError, IndexError, RecursionError):
        return None


def _walk(text: str, pos: int, path: tuple[str | int, ...], duplicates: bool) -> tuple[Problem | None, int]:
    skip = _SKIP_WS
    char = text[pos]
    if char == "{":
        seen: set[str] = set()
        pos = skip(text, pos + 1).end()
        if text[pos] == "}":
            return None, pos + 1
        while True:
            key_at = pos
            if text[pos] != '"':
                raise ValueError("expected a key")
            key, pos = LENIENT.raw_decode(text, pos)
            what = lone_surrogate_problem(key)
            if what is not None:
                return Problem(key_at, path, f"the key {key!r} {what}"), pos
            if duplicates and key in seen:
                return Problem(key_at, path, duplicate_key_message(key)), pos
            seen.add(key)
            pos = skip(text, pos).end()
            if text[pos] != ":":
                raise ValueError("expected ':'")
            problem, pos = _walk(text, skip(text, pos + 1).end(), (*path, key), duplicates)
            if problem is not None:
                return problem, pos
            pos = skip(text, pos).end()
            if text[pos] == "}":
                return None, pos + 1
            if text[pos] != ",":
                raise ValueError("expected ',' or '}'")
            pos = skip(text, pos + 1).end()
    if char == "[":
        pos = skip(text, pos + 1).end()
        if text[pos] == "]":
            return None, pos + 1
        index = 0
        while True:
            problem, pos = _walk(text, pos, (*path, index), duplicates)
            if problem is not None:
                return problem, pos
            pos = skip(text, pos).end()
            if text[pos] == "]":
                return None, pos + 1
            if text[pos] != ",":
                raise ValueError("expected ',' or ']'")
            pos = skip(text, pos + 1).end()
            index += 1
    if char == '"':
        value, end = LENIENT.raw_decode(text, pos)
        what = lone_surrogate_problem(value)
        return (Problem(pos, path, f"the string {what}") if what else None), end
    for constant in _CONSTANTS:
        if text.startswith(constant, pos):
            return Problem(pos, path, number_problem(constant) or constant), pos + len(constant)
    number = _NUMBER.match(text, pos)
    if number is not None and number.end() > pos:
        what = number_problem(number.group())
        return (Problem(pos, path, what) if what else None), number.end()
    _, end = LENIENT.raw_decode(text, pos)  # true, false, null
    return None, end
