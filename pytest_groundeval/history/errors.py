"""The one exception of the history package (kept free of imports so the writer stays light)."""

from __future__ import annotations


class HistoryError(Exception):
    """A history database is unusable or a request to it is invalid; the message says what and where."""
