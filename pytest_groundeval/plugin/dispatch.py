"""Concurrent dispatch of dataset items to the target while pytest reports them in order (issue 8).

Evaluations are I/O-bound: a real target answers in seconds. The dispatcher runs
item coroutines (``ItemRunner.run_async``) on one background event loop. When
pytest sets up an item, the item and the next ones this process is going to run
are submitted, so up to ``concurrency`` items are in flight; the setup then
waits for its own item's outcome. pytest still runs, reports and times each item
as its own test, in order.

Guarantees:
- only items this process will run are sent (``-k``/``-m``/``--lf`` deselect
  before the run; under xdist only the worker's own queue is looked at);
- a temporal item's steps run in order inside its one coroutine;
- at the end of the session, or on ``-x``/interrupt, items still in flight are
  cancelled and their outcomes discarded: nothing is reported for items that
  did not run;
- once Ctrl-C or SIGTERM came, no further item is sent, and a wait for an item
  ends within ``_POLL_S`` even when the signal's KeyboardInterrupt was swallowed
  by a finalizer (``session.raise_pending_interrupt``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Iterable
from typing import Any

from ..core.outcome import ItemOutcome
from .session import raise_pending_interrupt

_POLL_S = 0.2
"""How often a waiting setup wakes, so Ctrl-C is seen promptly."""


class ItemDispatcher:
    """Submits items ahead of pytest and hands each item its outcome when pytest reaches it.

    Args:
        run: coroutine function ``(test_item) -> ItemOutcome`` (raises ``ItemError``).
        concurrency: most items in flight at once (>= 1).
        upcoming: ``(test_item) -> iterable`` of the test items this process will run
            after ``test_item``, in order; only those for which ``eligible`` is true are sent.
        eligible: whether a test item is one this dispatcher runs.
        on_close: coroutine function run on the loop before it stops (e.g. closing HTTP sessions).
    """

    def __init__(
        self,
        run: Callable[[Any], Any],
        *,
        concurrency: int,
        upcoming: Callable[[Any], Iterable[Any]],
        eligible: Callable[[Any], bool],
        on_close: Callable[[], Any] | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        self.concurrency = concurrency
        self._run = run
        self._upcoming = upcoming
        self._eligible = eligible
        self._on_close = on_close
        self._futures: dict[str, concurrent.futures.Future[ItemOutcome]] = {}
        self._done: set[str] = set()
        self.executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=concurrency, thread_name_prefix="groundeval-target"
        )
        self.loop = asyncio.new_event_loop()
        self.loop.set_default_executor(self.executor)
        self._thread = threading.Thread(target=self._serve, name="groundeval-dispatch", daemon=True)
        self._thread.start()
        self._closed = False

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    @property
    def in_flight(self) -> int:
        """Items sent whose target calls have not finished."""
        return sum(1 for future in self._futures.values() if not future.done())

    def _submit(self, test_item: Any) -> None:
        key = test_item.nodeid
        if key in self._futures or key in self._done:
            return
        self._futures[key] = asyncio.run_coroutine_threadsafe(self._run(test_item), self.loop)

    def _top_up(self, test_item: Any) -> None:
        """Send the items that follow ``test_item`` until ``concurrency`` are in flight.

        Finished outcomes wait for pytest in ``_futures``; at most ``2 × concurrency``
        are held, so a fast target cannot run far ahead of the report.
        """
        if len(self._futures) >= 2 * self.concurrency or self.in_flight >= self.concurrency:
            return
        running = self.in_flight
        for following in self._upcoming(test_item):
            if running >= self.concurrency or len(self._futures) >= 2 * self.concurrency:
                break
            if (
                self._eligible(following)
                and following.nodeid not in self._futures
                and following.nodeid not in self._done
            ):
                self._submit(following)
                running += 1

    def outcome_for(self, test_item: Any) -> ItemOutcome:
        """Submit ``test_item`` and what follows it (up to the window), then wait for its outcome.

        Once the outcome is in, the window is topped up again before returning, so the
        target works on the next item while pytest reports this one (even at
        concurrency 1, where exactly one item is in flight at any moment).

        Raises:
            ItemError: the item could not be run.
            KeyboardInterrupt: Ctrl-C or SIGTERM came, before or during the wait; the
                item is cancelled and nothing more is sent.
        """
        raise_pending_interrupt()
        self._submit(test_item)
        self._top_up(test_item)
        future = self._futures.pop(test_item.nodeid)
        self._done.add(test_item.nodeid)
        stopping = False
        try:
            while True:
                try:
                    return future.result(timeout=_POLL_S)
                except concurrent.futures.TimeoutError:
                    pass
                raise_pending_interrupt()
        except BaseException as exc:
            if not future.done():
                future.cancel()
            # KeyboardInterrupt (Ctrl-C, SIGTERM) and the like stop the session: send nothing more.
            stopping = not isinstance(exc, Exception)
            raise
        finally:
            if not self._closed and not stopping:
                self._top_up(test_item)

    def close(self) -> None:
        """Cancel what is still in flight, run ``on_close`` and stop the loop and threads."""
        if self._closed:
            return
        self._closed = True
        for future in self._futures.values():
            future.cancel()
        self._futures.clear()

        async def finish() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if self._on_close is not None:
                await self._on_close()

        try:
            asyncio.run_coroutine_threadsafe(finish(), self.loop).result(timeout=30)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=30)
            self.executor.shutdown(wait=False, cancel_futures=True)
            if not self._thread.is_alive():
                self.loop.close()
