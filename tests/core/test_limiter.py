"""The AIMD limiter's rules, observed through its state, never through timing (core/limiter.py, docs/judges.md)."""

from __future__ import annotations

import asyncio

import pytest

from pytest_groundeval.core.limiter import AimdLimiter


def run(coro):
    return asyncio.run(coro)


async def take(limiter: AimdLimiter, n: int):
    return [await limiter.acquire() for _ in range(n)]


def test_a_429_halves_the_requests_in_flight_once_per_round():
    async def scenario():
        limiter = AimdLimiter(8)
        slots = await take(limiter, 8)
        slots[0].rate_limited()
        limiter.release(slots[0])  # 8 in flight, counting the rejected one: 8 -> 4
        assert (limiter.limit, limiter.decreases, limiter.known_good) == (4, 1, 7)
        slots[1].rate_limited()
        limiter.release(slots[1])  # the same burst: answered already, no second halving
        assert (limiter.limit, limiter.decreases, limiter.rate_limited) == (4, 1, 2)
        for slot in slots[2:]:
            limiter.release(slot)
        fresh = await take(limiter, 4)  # sent after the decrease: a new round
        fresh[0].rate_limited()
        limiter.release(fresh[0])
        assert (limiter.limit, limiter.decreases) == (2, 2)
        assert [(c.before, c.after) for c in limiter.changes] == [(8, 4), (4, 2)]

    run(scenario())


def test_the_limit_recovers_one_slot_per_success_then_one_per_round():
    async def scenario():
        limiter = AimdLimiter(8)
        slots = await take(limiter, 8)
        slots[0].rate_limited()
        for slot in slots:
            limiter.release(slot)
        assert limiter.limit == 4 and limiter.known_good == 7
        limits = []
        for _ in range(3):  # below the level of the last 429: one slot per success
            slot = await limiter.acquire()
            slot.succeeded()
            limiter.release(slot)
            limits.append(limiter.limit)
        assert limits == [5, 6, 7]
        for _ in range(6):  # at that level: one slot per round of 7 successes
            slot = await limiter.acquire()
            slot.succeeded()
            limiter.release(slot)
        assert limiter.limit == 7
        slot = await limiter.acquire()
        slot.succeeded()
        limiter.release(slot)
        assert limiter.limit == 8
        for _ in range(20):  # never beyond the ceiling
            slot = await limiter.acquire()
            slot.succeeded()
            limiter.release(slot)
        assert limiter.limit == 8

    run(scenario())


def test_no_request_is_dropped_and_none_runs_beyond_the_ceiling():
    async def scenario():
        limiter = AimdLimiter(6)
        done = []

        async def request(i: int) -> None:
            while True:
                async with limiter.slot() as slot:
                    await asyncio.sleep(0)
                    if i % 5 == 0 and limiter.rate_limited < 6:  # some requests are rate limited once or more
                        slot.rate_limited()
                        continue
                    slot.succeeded()
                    done.append(i)
                    return

        await asyncio.gather(*(request(i) for i in range(60)))
        assert sorted(done) == list(range(60))
        assert limiter.in_flight == 0 and limiter.decreases >= 1 and limiter.peak_in_flight == 6

    run(scenario())


def test_after_a_halving_nothing_new_starts_until_fewer_than_the_limit_are_in_flight():
    async def scenario():
        limiter = AimdLimiter(8)
        slots = await take(limiter, 8)
        slots[0].rate_limited()
        limiter.release(slots[0])
        for slot in slots[1:4]:
            limiter.release(slot)
        assert (limiter.limit, limiter.in_flight) == (4, 4)
        waiting = asyncio.ensure_future(limiter.acquire())
        for _ in range(3):
            await asyncio.sleep(0)
        assert not waiting.done()  # 4 in flight, limit 4
        limiter.release(slots[4])
        slot = await waiting
        assert limiter.in_flight == 4
        for held in [*slots[5:], slot]:
            limiter.release(held)
        assert limiter.in_flight == 0

    run(scenario())


def test_retry_after_holds_new_requests_and_an_unbounded_limiter_halves_what_is_in_flight():
    async def scenario():
        limiter = AimdLimiter(None)
        slots = await take(limiter, 6)
        slots[0].rate_limited(retry_after=0.05)
        limiter.release(slots[0])
        assert limiter.limit == 3 and limiter.held_for > 0
        for slot in slots[1:]:
            limiter.release(slot)
        slot = await limiter.acquire()  # waits out the hold, then gets in
        assert limiter.held_for == 0 and limiter.in_flight == 1
        limiter.release(slot)

    run(scenario())


def test_a_cancelled_waiter_gives_its_slot_back():
    async def scenario():
        limiter = AimdLimiter(1)
        first = await limiter.acquire()
        waiter = asyncio.ensure_future(limiter.acquire())
        await asyncio.sleep(0)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        limiter.release(first)
        assert limiter.in_flight == 0
        second = await limiter.acquire()
        assert limiter.in_flight == 1
        limiter.release(second)

    run(scenario())


@pytest.mark.parametrize(("ceiling", "floor"), [(0, 1), (4, 0), (2, 3)])
def test_bad_bounds_are_refused(ceiling, floor):
    with pytest.raises(ValueError, match="floor"):
        AimdLimiter(ceiling, floor=floor)
