"""Plain-text helpers shared by every message the harness prints."""

from __future__ import annotations

ELLIPSIS = "…"


def shorten(text: str, limit: int, *, collapse: bool = True) -> str:
    """``text`` cut to at most ``limit`` characters, ending in ``…`` when cut.

    Args:
        text: Any text (an answer, a response body, a claim).
        limit: Most characters returned (>= 1), the ellipsis included.
        collapse: Join runs of white space (newlines included) into one space
            first, so the result is one line. False keeps the text as it is
            (for a body excerpt quoted with ``!r``).
    """
    if collapse:
        text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


MAX_LISTED = 5
"""How many claims or strings a failure message lists before summarising the rest."""


def listed(lines: list[str]) -> list[str]:
    """At most ``MAX_LISTED`` lines, then one saying how many more there are."""
    if len(lines) <= MAX_LISTED:
        return lines
    return lines[:MAX_LISTED] + [f"… and {len(lines) - MAX_LISTED} more"]
