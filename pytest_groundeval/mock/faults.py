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
- ``prose``, ``fenced``, ``badverdict``, ``norationale`` and the other reply shapes
  of :mod:`.reply_shapes` (``think``, ``reasoning_content``, ``html200``, …; each
  optionally with ``x<N>``): how a judge reply is written (docs/mock.md); ``prose``
  also turns a generated question into a sentence. Other chat behaviours ignore them.
- ``json_schema_400``, ``response_format_400``, ``temperature_400``,
  ``max_tokens_400`` (any of them, with ``noparam`` for a body whose ``param`` is
  null): a chat request carrying that parameter is refused with HTTP 400.
- ``quota``: HTTP 429 saying the account has no quota left (``insufficient_quota``, no ``Retry-After``).
- ``conc:<K>``: a request arriving while K others with the same spec are in flight
  gets HTTP 429 (no ``Retry-After``); ``rate:<K>``: at most K requests with the same
  spec per second (fixed one-second windows), the rest HTTP 429 with the ``Retry-After``
  of the next window. Their counts (:meth:`FaultCounter.limit_stats`) are per spec.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from pytest_groundeval.core import contract
from pytest_groundeval.mock.reply_shapes import REFUSALS, REPLY_FAULTS

DEFAULT_RETRY_AFTER_S = 1.0
"""``Retry-After`` seconds sent with a 429 that names none."""

_STATUS_RE = re.compile(r"^(429|500)(?::(\d+(?:\.\d+)?))?(?:x(\d+))?$")
_DELAY_RE = re.compile(r"^delay:(\d+(?:\.\d+)?)$")
_REPLY_RE = re.compile(r"^(" + "|".join(sorted(REPLY_FAULTS, key=len, reverse=True)) + r")(?:x(\d+))?$")
_LIMIT_RE = re.compile(r"^(conc|rate):([1-9]\d*)$")

FAULT_SYNTAX = (
    "delay:<ms>, 429, 429:<seconds>, 500, quota, cut, malformed, conc:<K>, rate:<K>, a reply shape ("
    + ", ".join(REPLY_FAULTS)
    + "), a refusal ("
    + ", ".join(REFUSALS)
    + ", noparam); x<N> after 429/500 or a reply shape applies it to the first N requests only"
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
    """A judge reply fault: one of ``reply_shapes.REPLY_FAULTS`` (``prose``, ``think``, ``html200``, …)."""
    reply_count: int | None = None
    """With ``x<N>`` after the reply fault: only the first N requests with this spec get it."""
    refusals: tuple[str, ...] = ()
    """Refusal faults (``reply_shapes.REFUSALS``): HTTP 400 for a chat request carrying that parameter."""
    refusal_param: bool = True
    """False with ``noparam``: a refusal's ``param`` is null, only its message names the parameter."""
    quota: bool = False
    """The 429 says ``insufficient_quota`` (no quota left) and names no ``Retry-After``."""
    concurrency: int | None = None
    """``conc:<K>``: requests with this spec allowed in flight at once; more get HTTP 429."""
    rate: int | None = None
    """``rate:<K>``: requests with this spec allowed per one-second window; more get HTTP 429."""


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
    cut = malformed = quota = False
    reply: str | None = None
    reply_count: int | None = None
    refusals: list[str] = []
    refusal_param = True
    limits: dict[str, int] = {}
    for raw in spec.split(","):
        token = raw.strip()
        if not token:
            continue
        if token == "cut":
            cut = True
        elif token == "malformed":
            malformed = True
        elif token in REFUSALS:
            refusals.append(token)
        elif token == "noparam":
            refusal_param = False
        elif (m := _DELAY_RE.match(token)) is not None:
            delay_ms = float(m.group(1))
        elif (m := _LIMIT_RE.match(token)) is not None:
            if limits:
                raise FaultSpecError(f"fault spec {spec!r}: more than one limit ({token!r})")
            limits[m.group(1)] = int(m.group(2))
        elif (m := _REPLY_RE.match(token)) is not None:
            if reply is not None:
                raise FaultSpecError(f"fault spec {spec!r}: more than one reply fault ({token!r})")
            reply = m.group(1)
            reply_count = int(m.group(2)) if m.group(2) is not None else None
        elif token == "quota" or (m := _STATUS_RE.match(token)) is not None:
            if status is not None:
                raise FaultSpecError(f"fault spec {spec!r}: more than one status fault ({token!r})")
            if token == "quota":
                status, quota = 429, True
                continue
            assert m is not None
            status = int(m.group(1))
            if m.group(2) is not None:
                if status != 429:
                    raise FaultSpecError(f"fault spec {spec!r}: only 429 takes a Retry-After ({token!r})")
                retry_after = float(m.group(2))
            if m.group(3) is not None:
                fail_count = int(m.group(3))
        else:
            raise FaultSpecError(f"fault spec {spec!r}: unknown token {token!r}; expected {FAULT_SYNTAX}")
    return FaultPlan(
        spec,
        delay_ms,
        status,
        retry_after,
        fail_count,
        cut,
        malformed,
        reply,
        reply_count,
        refusals=tuple(refusals),
        refusal_param=refusal_param,
        quota=quota,
        concurrency=limits.get("conc"),
        rate=limits.get("rate"),
    )


def split_model(model: str) -> tuple[str, str | None]:
    """Split ``"mock-generate+fault=500"`` into ``("mock-generate", "500")``; no suffix gives ``(model, None)``."""
    base, sep, spec = model.partition(contract.FAULT_MODEL_SEPARATOR)
    return (base, spec) if sep else (model, None)


class FaultCounter:
    """Per-server counts per fault spec: requests seen (for ``x<N>``), and the ``conc:``/``rate:`` limits."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}
        self._in_flight: dict[str, int] = {}
        self._windows: dict[str, tuple[float, int, int]] = {}  # spec -> (start, window index, count in it)
        self._stats: dict[str, dict[str, int]] = {}

    def admit(self, plan: FaultPlan) -> tuple[bool, float | None]:
        """Whether a request with ``plan`` gets in under its ``conc:``/``rate:`` limit, and the
        ``Retry-After`` seconds of a refusal (None: name none). An admitted ``conc:`` request
        must be :meth:`leave`-d when it ends."""
        if plan.concurrency is None and plan.rate is None:
            return True, None
        stats = self._stats.setdefault(plan.spec, {"admitted": 0, "rejected": 0, "peak_in_flight": 0})
        if plan.concurrency is not None:
            in_flight = self._in_flight.get(plan.spec, 0)
            if in_flight >= plan.concurrency:
                stats["rejected"] += 1
                return False, None
            self._in_flight[plan.spec] = in_flight + 1
            stats["peak_in_flight"] = max(stats["peak_in_flight"], in_flight + 1)
        else:
            assert plan.rate is not None
            now = time.monotonic()
            start, index, count = self._windows.get(plan.spec, (now, 0, 0))
            current = int((now - start) // 1.0)
            if current != index:
                index, count = current, 0
            if count >= plan.rate:
                self._windows[plan.spec] = (start, index, count)
                stats["rejected"] += 1
                return False, start + (index + 1) * 1.0 - now
            self._windows[plan.spec] = (start, index, count + 1)
        stats["admitted"] += 1
        return True, None

    def leave(self, plan: FaultPlan) -> None:
        """A request admitted under a ``conc:`` limit has ended."""
        if plan.concurrency is not None:
            self._in_flight[plan.spec] = max(0, self._in_flight.get(plan.spec, 0) - 1)

    def limit_stats(self, spec: str) -> dict[str, int]:
        """``{"admitted", "rejected", "peak_in_flight"}`` of the ``conc:``/``rate:`` spec ``spec`` (zeros if unseen)."""
        return dict(self._stats.get(spec.strip(), {"admitted": 0, "rejected": 0, "peak_in_flight": 0}))

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
        """Forget every count, so ``x<N>`` specs fail again from the start and limits start afresh."""
        self._seen.clear()
        self._windows.clear()
        self._stats.clear()
