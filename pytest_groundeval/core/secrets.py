"""Keeping API keys out of everything the harness writes (docs/options.md, "Keys").

A target may echo the bearer key it was sent (an error page quoting the request's
``Authorization`` header), and a judge may quote its own key. ``Scrubber`` masks
the configured keys, and any piece of one left by a cut, in any text before it leaves for an output: a ``TargetError``
message (``targets.http``), an item's outcome (``core.runner``), the session's stop
message (the plugin) and a judge's rationale (``judge.client``). Every writer (the
terminal, the JSON report, JUnit XML, Markdown, HTML, the run history) takes its
text from those, so a key scrubbed there is scrubbed everywhere.

A key shorter than ``MIN_SECRET_CHARS`` is not masked: masking a 1-character key
would mangle every text holding that letter, and such a key protects nothing.
This module imports nothing else of the package.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["MASK", "MIN_SECRET_CHARS", "Scrubber"]

MIN_SECRET_CHARS = 8
"""Shortest key that is masked (docs/options.md, "Keys")."""

MASK = "***"
"""What a key is replaced with."""


class Scrubber:
    """Masks a fixed set of keys in text.

    Args:
        secrets: The keys (None and keys shorter than ``MIN_SECRET_CHARS`` are ignored).

    A ``Scrubber`` with no key to mask is falsy, and its methods return their input
    unchanged (the same object).
    """

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        # Longest first, so a key that contains another is masked whole.
        self.secrets: tuple[str, ...] = tuple(
            sorted({s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True)
        )
        # Every run of MIN_SECRET_CHARS characters of every key, built once: ``text`` looks for each.
        self._windows: tuple[str, ...] = tuple(
            dict.fromkeys(
                secret[i : i + MIN_SECRET_CHARS]
                for secret in self.secrets
                for i in range(len(secret) - MIN_SECRET_CHARS + 1)
            )
        )

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def __repr__(self) -> str:
        return f"Scrubber({len(self.secrets)} key(s))"  # never the keys

    def text(self, text: str) -> str:
        """``text`` with every key, and every piece of one, replaced by ``MASK``.

        A piece is any run of ``MIN_SECRET_CHARS`` or more characters of a key: text is
        often shortened before it reaches here (a body excerpt, a quoted reply), and a
        cut through a key leaves a piece that would no longer match the whole key.
        Overlapping and touching pieces are masked as one.
        """
        if not self.secrets:
            return text
        spans: list[tuple[int, int]] = []
        for window in self._windows:
            start = text.find(window)
            while start != -1:
                spans.append((start, start + MIN_SECRET_CHARS))
                start = text.find(window, start + 1)
        if not spans:
            return text
        spans.sort()
        merged = [list(spans[0])]
        for start, end in spans[1:]:
            if start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        parts, last = [], 0
        for start, end in merged:
            parts += [text[last:start], MASK]
            last = end
        parts.append(text[last:])
        return "".join(parts)

    def value(self, value: Any) -> Any:
        """A JSON-like value (dicts, lists, tuples, strings) with every key masked in its strings and dict keys.

        Containers holding no key are returned as they are; others are copied.
        """
        if not self.secrets:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            items = [(self.value(k), self.value(v)) for k, v in value.items()]
            if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items())):
                return value
            return dict(items)
        if isinstance(value, (list, tuple)):
            scrubbed = [self.value(v) for v in value]
            if all(a is b for a, b in zip(scrubbed, value)):
                return value
            return type(value)(scrubbed)
        return value
