"""The dispatcher's hand-off between pytest's thread and its event loop (plugin/dispatch.py)."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass

import pytest

from pytest_groundeval.plugin.dispatch import ItemDispatcher


@dataclass(frozen=True)
class Node:
    nodeid: str


def _dispatcher(run, items, concurrency=2):
    order = {item.nodeid: i for i, item in enumerate(items)}
    return ItemDispatcher(
        run,
        concurrency=concurrency,
        upcoming=lambda item: items[order[item.nodeid] + 1 :],
        eligible=lambda item: True,
    )


def test_results_and_errors_reach_pytest_in_order_and_every_item_runs_once():
    items = [Node(f"i{n}") for n in range(7)]
    ran = []

    async def run(item):
        ran.append(item.nodeid)
        await asyncio.sleep(0)
        if item.nodeid == "i3":
            raise ValueError("i3 broke")
        return item.nodeid.upper()

    dispatcher = _dispatcher(run, items, concurrency=3)
    try:
        got = []
        for item in items:
            try:
                got.append(dispatcher.outcome_for(item))
            except ValueError as exc:
                got.append(str(exc))
        assert got == ["I0", "I1", "I2", "i3 broke", "I4", "I5", "I6"]
        assert sorted(ran) == [item.nodeid for item in items]
        assert dispatcher.in_flight == 0
    finally:
        dispatcher.close()


def test_an_item_run_again_is_sent_again():
    # A re-run (pytest-rerunfailures runs an item's protocol again) asked for an item whose outcome was
    # taken already: KeyError, reported as an error of every re-run item.
    items = [Node(f"i{n}") for n in range(3)]
    ran = []

    async def run(item):
        ran.append(item.nodeid)
        return f"{item.nodeid} run {ran.count(item.nodeid)}"

    dispatcher = _dispatcher(run, items)
    try:
        assert dispatcher.outcome_for(items[0]) == "i0 run 1"
        assert dispatcher.outcome_for(items[0]) == "i0 run 2"
        assert [dispatcher.outcome_for(item) for item in items[1:]] == ["i1 run 1", "i2 run 1"]
        assert sorted(ran) == ["i0", "i0", "i1", "i2"]
    finally:
        dispatcher.close()


def test_close_cancels_what_is_still_in_flight_on_the_loop():
    items = [Node(f"i{n}") for n in range(4)]
    cancelled = threading.Event()
    started = threading.Event()

    async def run(item):
        if item.nodeid == "i0":
            return "first"
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    dispatcher = _dispatcher(run, items, concurrency=2)
    assert dispatcher.outcome_for(items[0]) == "first"  # i1 and i2 are sent behind it
    assert started.wait(5)
    dispatcher.close()
    assert cancelled.wait(5)


def test_a_task_cancelled_on_the_loop_is_a_cancelled_wait_in_pytest():
    items = [Node("i0")]

    async def run(item):
        raise asyncio.CancelledError

    dispatcher = _dispatcher(run, items, concurrency=1)
    try:
        with pytest.raises(BaseException) as caught:
            dispatcher.outcome_for(items[0])
        assert type(caught.value).__name__ == "CancelledError"
    finally:
        dispatcher.close()


def test_a_wait_cancelled_in_pytest_cancels_its_task_on_the_loop():
    # What outcome_for does when Ctrl-C ends its wait: future.cancel() must stop the target call.
    import concurrent.futures

    from pytest_groundeval.plugin.dispatch import _chain

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    cancelled = threading.Event()

    async def call():
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    future: concurrent.futures.Future = concurrent.futures.Future()
    try:
        loop.call_soon_threadsafe(lambda: _chain(loop.create_task(call()), future, loop))
        with pytest.raises(concurrent.futures.TimeoutError):
            future.result(timeout=0.05)
        assert future.cancel()
        assert cancelled.wait(5)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()
