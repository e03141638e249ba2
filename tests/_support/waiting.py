"""Waiting for what a server thread records after the client already has its answer."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_for(predicate: Callable[[], object], what: str, timeout_s: float = 10) -> None:
    """Return once ``predicate()`` is true; fail the test naming ``what`` after ``timeout_s`` seconds.

    Eventual consistency, not timing: a server logs a request when its handler ends, which
    may be after the client has read the last byte (a stream's ``[DONE]``).
    """
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)
