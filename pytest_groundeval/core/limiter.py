"""Requests in flight to one endpoint, adapted to its rate limits: AIMD (docs/judges.md, "Rate limits").

An :class:`AimdLimiter` bounds the requests one client (a judge, an ``--eval-url``
target) has in flight. A request that comes back rate limited (HTTP 429) halves
them: the limit becomes half of what was in flight, and it recovers one slot at a
time as requests succeed. This is additive increase, multiplicative decrease, the
rule TCP's congestion control has used since Jacobson, "Congestion Avoidance and
Control" (SIGCOMM 1988), and RFC 5681:

- **decrease**: the first 429 of a round sets ``limit = max(floor, min(limit, in_flight) // 2)``
  (``in_flight`` counting the rejected request) and starts a new round; 429s of
  requests sent before that (the same burst) do not halve again;
- **increase**: each success below the level where the last 429 came (``known_good``,
  one less than the requests in flight then) adds one slot, so a halved client is back
  within one round of successes; at or above that level it takes ``limit`` successes
  (a round) to add one, probing slowly for more;
- **Retry-After**: a 429 that names a wait holds every request not yet sent until
  then (``hold``), since the endpoint's limit is the client's, not one request's.

A limit of ``None`` (``ceiling=None``) bounds nothing until the first 429. One
limiter per client object, never shared between clients: each judge of a jury, and
the target, adapt to their own endpoint. Standard library only; asyncio, one loop.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["AimdLimiter", "LimitChange", "Slot", "retry_after_seconds"]


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """Seconds a 429/503 asks the client to wait: ``retry-after-ms`` (OpenAI's), else ``Retry-After``
    (seconds or an HTTP date, RFC 9110 section 10.2.3); None when it names none or an unreadable one."""
    if not headers:
        return None
    milliseconds = headers.get("retry-after-ms")
    if milliseconds:
        try:
            return max(0.0, float(milliseconds) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(value) if value.strip() else None
        except (TypeError, ValueError):
            return None
        if parsed is None:
            return None
        return max(0.0, parsed.timestamp() - time.time())


@dataclass(frozen=True)
class LimitChange:
    """One change of the limit, kept in :attr:`AimdLimiter.changes`."""

    before: int | None
    """The limit before (None: unbounded)."""
    after: int
    """The limit after."""
    in_flight: int
    """Requests in flight when it changed (a decrease counts the rejected one)."""
    reason: str
    """``rate limited`` or ``recovered``."""


class Slot:
    """One request's place in the limiter; say how it ended with :meth:`succeeded` or :meth:`rate_limited`."""

    __slots__ = ("round", "outcome", "retry_after")

    def __init__(self, round_: int) -> None:
        self.round = round_
        self.outcome = "other"
        self.retry_after: float | None = None

    def succeeded(self) -> None:
        """The request got an answer (any status but 429): the limit may grow."""
        self.outcome = "ok"

    def rate_limited(self, retry_after: float | None = None) -> None:
        """The request got HTTP 429; ``retry_after``: the seconds it asked to wait, if it named any."""
        self.outcome = "rate_limited"
        self.retry_after = retry_after


class _Held:
    """What :meth:`AimdLimiter.slot` returns: an async context manager holding one slot (a class: it
    is entered once per request, and ``contextlib.asynccontextmanager`` costs a generator each time)."""

    __slots__ = ("_limiter", "_slot")

    def __init__(self, limiter: AimdLimiter) -> None:
        self._limiter = limiter
        self._slot: Slot | None = None

    async def __aenter__(self) -> Slot:
        self._slot = await self._limiter.acquire()
        return self._slot

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._slot is not None  # entered
        self._limiter.release(self._slot)


class AimdLimiter:
    """Requests in flight bounded by a limit that halves on a 429 and recovers one slot at a time.

    Use ``async with limiter.slot() as slot:`` around each request, then ``slot.succeeded()``
    or ``slot.rate_limited(retry_after)``; a slot left as it is (a timeout, a 5xx) changes
    nothing. Wait before resending a rate-limited request; its wait holds the others too.

    Args:
        ceiling: Most requests in flight (None: no bound until the first 429).
        floor: Fewest requests the limit halves to (at least 1).
        keep: How many :class:`LimitChange` records :attr:`changes` keeps (the latest).

    Raises:
        ValueError: ``ceiling`` or ``floor`` below 1, or ``floor`` above ``ceiling``.
    """

    def __init__(self, ceiling: int | None, *, floor: int = 1, keep: int = 256) -> None:
        if floor < 1 or (ceiling is not None and ceiling < floor):
            raise ValueError(f"a limiter needs 1 <= floor <= ceiling, got floor {floor}, ceiling {ceiling}")
        self.ceiling = ceiling
        self.floor = floor
        self.limit: int | None = ceiling
        """Requests allowed in flight now (None: unbounded)."""
        self.known_good: int | None = ceiling
        """Below this level each success adds a slot; at or above it, each round of successes does."""
        self.in_flight = 0
        """Requests holding a slot."""
        self.peak_in_flight = 0
        """Most requests ever in flight at once."""
        self.decreases = 0
        """Times the limit was halved."""
        self.rate_limited = 0
        """429s reported, including those that did not halve again (same round)."""
        self.succeeded = 0
        """Requests reported as answered."""
        self.changes: deque[LimitChange] = deque(maxlen=keep)
        """The latest changes of the limit, oldest first."""
        self._round = 0
        self._credit = 0
        self._resume_at = 0.0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._wake_pending = False

    def __repr__(self) -> str:
        return f"AimdLimiter(limit={self.limit}, in_flight={self.in_flight}, ceiling={self.ceiling})"

    @property
    def held_for(self) -> float:
        """Seconds new requests still wait for a ``Retry-After`` (0 when none holds them)."""
        if not self._resume_at:  # never held: no clock to read
            return 0.0
        return max(0.0, self._resume_at - time.monotonic())

    def hold(self, seconds: float) -> None:
        """Send nothing new for ``seconds`` (a server's ``Retry-After``); a longer hold already set stays."""
        self._resume_at = max(self._resume_at, time.monotonic() + max(0.0, seconds))

    def _free(self) -> bool:
        return self.limit is None or self.in_flight < self.limit

    async def acquire(self) -> Slot:
        """Wait for a free slot (and for any hold to pass), in arrival order; the caller must :meth:`release` it."""
        while self.held_for > 0:
            await asyncio.sleep(self.held_for)
        if self._free() and not self._waiters:
            self._take()
        else:
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(future)
            try:
                await future  # _wake counts the slot as taken before it resolves the future
            except BaseException:
                if future in self._waiters:
                    self._waiters.remove(future)
                elif future.done() and not future.cancelled():
                    self.in_flight -= 1  # handed a slot it will not use
                    self._wake()
                raise
        return Slot(self._round)

    def _take(self) -> None:
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)

    def release(self, slot: Slot) -> None:
        """Give ``slot`` back and adapt the limit to how its request ended."""
        if slot.outcome == "rate_limited":
            self._on_rate_limited(slot)
        elif slot.outcome == "ok":
            self._on_success()
        self.in_flight -= 1
        self._wake()

    def slot(self) -> _Held:
        """``async with limiter.slot() as slot:``: :meth:`acquire`, then :meth:`release` however the body ends."""
        return _Held(self)

    def _on_rate_limited(self, slot: Slot) -> None:
        self.rate_limited += 1
        if slot.retry_after is not None:
            self.hold(slot.retry_after)
        if slot.round != self._round:
            return  # sent before the last decrease: that burst has been answered already
        before = self.limit
        in_flight = self.in_flight if before is None else min(before, self.in_flight)
        after = max(self.floor, in_flight // 2)
        self.known_good = max(self.floor, in_flight - 1)
        self.limit = after
        self._round += 1
        self._credit = 0
        self.decreases += 1
        self.changes.append(LimitChange(before, after, self.in_flight, "rate limited"))

    def _on_success(self) -> None:
        self.succeeded += 1
        limit = self.limit
        if limit is None or (self.ceiling is not None and limit >= self.ceiling):
            return
        if self.known_good is not None and limit < self.known_good:
            grow = True
        else:
            self._credit += 1  # successes at this level: a round of them adds a slot
            grow = self._credit >= limit
        if grow:
            self._credit = 0
            self.limit = limit + 1
            self.changes.append(LimitChange(limit, limit + 1, self.in_flight, "recovered"))

    def _wake(self) -> None:
        """Hand free slots to the waiters, oldest first; during a hold, once it has passed."""
        held = self.held_for
        if held > 0:
            if self._waiters and not self._wake_pending:
                self._wake_pending = True
                asyncio.get_running_loop().call_later(held, self._wake_after_hold)
            return
        while self._waiters and self._free():
            future = self._waiters.popleft()
            if not future.done():
                self._take()
                future.set_result(None)

    def _wake_after_hold(self) -> None:
        self._wake_pending = False
        self._wake()
