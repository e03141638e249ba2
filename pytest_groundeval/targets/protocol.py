"""The ``Target`` protocol and the errors every target raises (docs/target-contract.md).

A target is the system under test: the REST contract as Python methods taking
and returning wire-shaped dicts. ``HttpTarget`` (``targets.http``) reaches one
over HTTP; a user with an in-process pipeline implements ``Target`` directly.

Errors: ``TargetError`` when an operation cannot be completed, its subclass
``TargetUnavailable`` when the target cannot be reached at all (so a caller can
stop after the first one instead of waiting out one timeout per item), and its
subclass ``SpawnError`` when a spawned target fails to set up, start or stay up.

This module imports no HTTP library.
"""

from __future__ import annotations

import signal
from contextvars import ContextVar
from typing import Any, Protocol, TypeAlias, runtime_checkable

from ..core.contract import ATTEMPT_HEADER, ITEM_ID_HEADER, RUN_ID_HEADER

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "JsonObject",
    "SpawnError",
    "Target",
    "TargetError",
    "TargetUnavailable",
    "call_attempt",
    "call_headers",
    "call_ids",
    "describe_exit",
    "lineage",
]

JsonObject: TypeAlias = dict[str, Any]
"""A JSON object as sent to or received from a target: string keys, values of any JSON type
(their shapes are the response models' business, docs/target-contract.md)."""

DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024
"""Largest response body an ``HttpTarget`` accepts by default (``--eval-max-response-bytes``).

A generate answer with its evidence is a few KiB; 16 MiB leaves room for a query
over thousands of records while a compressed bomb or an endless body stops long
before it costs real memory (docs/target-contract.md, "Limits")."""

call_ids: ContextVar[tuple[str | None, str | None]] = ContextVar("groundeval_call_ids", default=(None, None))
"""``(run id, item id)`` of the target calls made in the current context (an item's task).

``ItemRunner`` sets it around each item; ``HttpTarget`` sends it as ``call_headers()``
(docs/target-contract.md, "Run and item ids"). An in-process target may read it too."""


call_attempt: ContextVar[int | None] = ContextVar("groundeval_call_attempt", default=None)
"""The attempt (1..N) the current context's target calls belong to under ``--eval-repeat N``, N > 1;
None without repeats. ``ItemRunner`` sets it around each attempt; ``HttpTarget`` sends it as
``X-Groundeval-Attempt`` (docs/target-contract.md), the reference target forwards it to its
provider, and the mock's seeded noise draws from it (docs/mock.md, "Noise"), so attempts differ.
An in-process target may read it too."""


def call_headers() -> dict[str, str]:
    """The ``X-Groundeval-Run-Id`` / ``X-Groundeval-Item-Id`` / ``X-Groundeval-Attempt`` headers of
    the current context (only those set)."""
    run_id, item_id = call_ids.get()
    headers = {}
    if run_id:
        headers[RUN_ID_HEADER] = run_id
    if item_id:
        headers[ITEM_ID_HEADER] = item_id
    attempt = call_attempt.get()
    if attempt is not None:
        headers[ATTEMPT_HEADER] = str(attempt)
    return headers


UNKNOWN_MODEL = "unknown"
"""Model name recorded when the lineage could not be learnt; it matches no baseline."""


class TargetError(Exception):
    """A target operation could not be completed.

    Raised for a non-2xx status (a redirect included), a body that is not a JSON
    object (not valid in its charset, nested too deep, larger than the limit),
    a response missing a required field or carrying a wrong type, a call that
    did not complete by its deadline, or a dropped connection. The message names the call, the URL, the status (when
    one was received) and an excerpt of the body (at most 500 characters).

    Attributes:
        call: The operation, e.g. ``"POST /v1/generate"``.
        url: The full URL requested.
        status: The HTTP status received, or None when no response arrived.
        body_excerpt: At most 500 characters of the response body ("" if none).
    """

    def __init__(
        self,
        message: str,
        *,
        call: str = "",
        url: str = "",
        status: int | None = None,
        body_excerpt: str = "",
    ) -> None:
        super().__init__(message)
        self.call = call
        self.url = url
        self.status = status
        self.body_excerpt = body_excerpt


class TargetUnavailable(TargetError):
    """The target cannot be reached: connection refused, DNS failure or connect timeout.

    Every later call would fail the same way, so callers should stop calling
    the target after the first one (docs/target-contract.md).
    """


class SpawnError(TargetUnavailable):
    """A spawned target failed: a setup command failed, or the child exited or never became ready.

    The message shows the command, the exit code (or that it is still running
    but not ready after N s) and the last lines of the child's log.

    Attributes:
        command: The command as run (placeholders substituted).
        exit_code: The child's exit code (negative: killed by that signal), or
            None when it is still running.
        log_tail: The last lines of the log (or of the setup command's output).
    """

    def __init__(self, message: str, *, command: str, exit_code: int | None, log_tail: str) -> None:
        super().__init__(message, call="spawn", url="")
        self.command = command
        self.exit_code = exit_code
        self.log_tail = log_tail


# --------------------------------------------------------------------------- protocol


@runtime_checkable
class Target(Protocol):
    """The system under test: the REST contract of docs/target-contract.md as Python methods.

    Every argument and return value is a plain dict in wire shape (camelCase
    keys, JSON built-ins). ``HttpTarget`` implements it over HTTP; a user with an
    in-process pipeline implements it directly and returns it from an override
    of the ``groundeval_target`` fixture (docs/target-contract.md option 4). Methods raise
    ``TargetError`` (or ``TargetUnavailable``) when an operation cannot be
    completed.
    """

    def info(self) -> JsonObject | None:
        """Return the model lineage, or None when the target does not say.

        Returns:
            ``{"models": {"generate": str, "embed": str}}`` (``GET /v1/info``), or
            None when unsupported (HTTP 404).
        """
        ...

    def ingest(self, document: JsonObject) -> JsonObject:
        """Store one corpus document (``POST /v1/documents``); idempotent on name and hash.

        Args:
            document: ``{"name": str, "label": str, "format": "json" | "text",
                "contentHash": str, "content": list | dict | str}`` — ``content``
                is the JSON records or the text.

        Returns:
            ``{"documentId": str | int, "txStart": int}`` (ms since the epoch).
            The same name and hash again returns the same ``documentId``.
        """
        ...

    def generate(self, question: str, find: str | None) -> JsonObject:
        """Answer a question from the stored corpus (``POST /v1/generate``).

        Args:
            question: The question text.
            find: The corpus label to restrict retrieval to, or None for all.

        Returns:
            ``{"answer": str, "traceId": str, "evidence": [{"marker": "S1",
            "document": name, "start": int, "end": int}], "claims": [{"text": str,
            "start": int, "end": int, "markers": ["S1"], "verdict": str}],
            "usage": {"promptTokens": int, "completionTokens": int}}``. Claim
            offsets are UTF-8 byte offsets into ``answer``; evidence offsets into
            the document's canonical text (docs/dataset.md); ``verdict`` is one of
            ``contract.CLAIM_VERDICTS``.
        """
        ...

    def records(self, step: JsonObject) -> JsonObject:
        """Write one bitemporal record change (``POST /v1/records``, docs/dataset.md).

        Args:
            step: ``{"op": "create" | "update" | "delete", "target": id | None,
                "label": str, "properties": dict, "validTime": {"start": str,
                "end": str | None}}`` (valid times RFC 3339).

        Returns:
            ``{"id": str | int, "txStart": int}`` (ms since the epoch).
        """
        ...

    def query(self, body: JsonObject) -> JsonObject:
        """Read records as of a transaction and valid time (``POST /v1/query``).

        Args:
            body: ``{"label": str, "target": id | None, "asOfTx": int | None,
                "asOfValid": str | None}``.

        Returns:
            ``{"records": [{"id", "label", "properties", "validTime", "txStart",
            "txEnd"}]}``.
        """
        ...

    def compare(self, body: JsonObject) -> JsonObject:
        """Diff records between two transaction times (``POST /v1/compare``).

        Args:
            body: ``{"target": id | None, "label": str, "fromTx": int, "toTx": int}``.

        Returns:
            ``{"added": [record], "removed": [record], "changed": [{"id",
            "before", "after"}]}``.
        """
        ...

    def close(self) -> None:
        """Release the target's resources (connections, files)."""
        ...


def lineage(target: Any, generate: str | None = None, embed: str | None = None) -> dict[str, str]:
    """The model lineage of ``target`` (docs/target-contract.md: ``GET /v1/info``).

    Args:
        target: Any ``Target``.
        generate, embed: Fallback model names (``--eval-model-generate`` / ``--eval-model-embed``).

    Returns:
        ``{"generate": name, "embed": name}``: from ``info()``, else the fallbacks,
        else ``"unknown"`` (which matches no baseline).

    Raises:
        TargetError: the target refused the harness's key (HTTP 401).
    """
    info = None
    try:
        info = target.info()
    except TargetError as exc:
        if exc.status == 401:
            raise
    except Exception:  # noqa: BLE001 - /v1/info is optional; its absence (or failure) means "fall back"
        info = None
    models = (info or {}).get("models") or {}
    return {
        "generate": models.get("generate") or generate or UNKNOWN_MODEL,
        "embed": models.get("embed") or embed or UNKNOWN_MODEL,
    }


def describe_exit(returncode: int) -> str:
    """Return ``"exit code N"``, or ``"killed by SIGNAME (exit code -N)"`` for a signal death."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name} (exit code {returncode})"
    return f"exit code {returncode}"
