"""Fault injection for resilience tests (docs/mock.md).

A request asks for faults with the header ``X-Groundeval-Fault``
(:data:`contract.FAULT_HEADER`) or a model-name suffix ``+fault=``
(:data:`contract.FAULT_MODEL_SEPARATOR`), e.g. ``mock-generate+fault=429x2``.
The header wins when both are present. The spec is a comma-separated list of
tokens:

- ``delay:<ms>``: wait that many milliseconds before answering.
- ``429`` or ``429:<seconds>``: HTTP 429 with ``Retry-After`` (default 1 s).
- ``500``: HTTP 500 with an OpenAI-style error body.
- ``cut``: the connection closes mid-body (streams: after some content events,
  inside an event, before ``[DONE]``).
- ``malformed``: one stream event (or the whole non-streamed body) is invalid JSON.
- ``x<N>`` after ``429``/``500`` (``429x2``, ``429:0.1x2``, ``500x1``): only
  the first N requests carrying that exact spec fail; later ones succeed. This
  is the one stateful part of the mock, kept per server instance.
- ``prose``, ``fenced``, ``badverdict``, ``norationale`` (each optionally with
  ``x<N>``): how a judge reply is written (docs/mock.md); ``prose`` also turns a
  generated question into a sentence. Other chat behaviours ignore them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_groundeval.core import contract

DEFAULT_RETRY_AFTER_S = 1.0
"""``Retry-After`` seconds sent with a 429 that names none."""

_STATUS_RE = re.compile(r"^(429|500)(?::(\d+(?:\.\d+)?))?(?:x(\d+))?$")
_DELAY_RE = re.compile(r"^delay:(\d+(?:\.\d+)?)$")
_REPLY_RE = re.compile(r"^(prose|fenced|badverdict|norationale)(?:x(\d+))?$")

FAULT_SYNTAX = (
    "delay:<ms>, 429, 429:<seconds>, 500, cut, malformed, prose, fenced, badverdict, norationale; "
    "x<N> after 429/500 or a reply fault applies it to the first N requests only"
)
"""One-line summary of the fault grammar, quoted in error messages."""


class FaultSpecError(ValueError):
    """A fault spec that does not parse; the message names the bad token."""


@dataclass(frozen=True)
class FaultPlan:
    """What one request asked for, parsed from its fault spec.

    A plan is pure; whether its status fault still fires is decided by the
    server's per-spec counter (``fail_count``).
    """

    spec: str
    """The spec as given (stripped): the key of the ``x<N>`` counter."""
    delay_ms: float = 0.0
    """Milliseconds to wait before answering."""
    status: int | None = None
    """429 or 500 when a status fault was asked for."""
    retry_after_s: float = DEFAULT_RETRY_AFTER_S
    """``Retry-After`` of a 429, in seconds."""
    fail_count: int | None = None
    """With ``x<N>``: only the first N requests with this spec get the status fault."""
    cut: bool = False
    """Close the connection mid-body."""
    malformed: bool = False
    """Send invalid JSON (one stream event, or the whole body)."""
    reply: str | None = None
    """A judge reply fault: ``prose``, ``fenced``, ``badverdict`` or ``norationale``."""
    reply_count: int | None = None
    """With ``x<N>`` after the reply fault: only the first N requests with this spec get it."""


def parse_fault_spec(spec: str) -> FaultPlan:
    """Parse a fault spec such as ``"delay:50,429x2"``.

    Args:
        spec: Comma-separated fault tokens (module docstring).

    Returns:
        The :class:`FaultPlan`.

    Raises:
        FaultSpecError: A token is unknown or malformed, or two status faults are given.
    """
    spec = spec.strip()
    delay_ms = 0.0
    status = None
    retry_after = DEFAULT_RETRY_AFTER_S
    fail_count = None
    cut = malformed = False
    reply: str | None = None
    reply_count: int | None = None
    for raw in spec.split(","):
        token = raw.strip()
        if not token:
            continue
        if token == "cut":
            cut = True
        elif token == "malformed":
            malformed = True
        elif (m := _DELAY_RE.match(token)) is not None:
            delay_ms = float(m.group(1))
        elif (m := _REPLY_RE.match(token)) is not None:
            if reply is not None:
                raise FaultSpecError(f"fault spec {spec!r}: more than one reply fault ({token!r})")
            reply = m.group(1)
            reply_count = int(m.group(2)) if m.group(2) is not None else None
        elif (m := _STATUS_RE.match(token)) is not None:
            if status is not None:
                raise FaultSpecError(f"fault spec {spec!r}: more than one status fault ({token!r})")
            status = int(m.group(1))
            if m.group(2) is not None:
                if status != 429:
                    raise FaultSpecError(f"fault spec {spec!r}: only 429 takes a Retry-After ({token!r})")
                retry_after = float(m.group(2))
            if m.group(3) is not None:
                fail_count = int(m.group(3))
        else:
            raise FaultSpecError(f"fault spec {spec!r}: unknown token {token!r}; expected {FAULT_SYNTAX}")
    return FaultPlan(spec, delay_ms, status, retry_after, fail_count, cut, malformed, reply, reply_count)


def split_model(model: str) -> tuple[str, str | None]:
    """Split ``"mock-generate+fault=500"`` into ``("mock-generate", "500")``; no suffix gives ``(model, None)``."""
    base, sep, spec = model.partition(contract.FAULT_MODEL_SEPARATOR)
    return (base, spec) if sep else (model, None)


class FaultCounter:
    """Per-server count of requests seen per fault spec, for the ``x<N>`` suffix."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    def status_fires(self, plan: FaultPlan) -> bool:
        """Count this request under its spec; return whether its status fault fires."""
        if plan.status is None:
            return False
        if plan.fail_count is None:
            return True
        seen = self._seen.get(plan.spec, 0) + 1
        self._seen[plan.spec] = seen
        return seen <= plan.fail_count

    def reply_fires(self, plan: FaultPlan) -> str | None:
        """Count this request under its spec's reply counter; return the reply fault when it applies."""
        if plan.reply is None or plan.reply_count is None:
            return plan.reply
        key = plan.spec + "#reply"
        seen = self._seen.get(key, 0) + 1
        self._seen[key] = seen
        return plan.reply if seen <= plan.reply_count else None

    def reset(self) -> None:
        """Forget every count, so ``x<N>`` specs fail again from the start."""
        self._seen.clear()
