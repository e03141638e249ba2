"""Concurrent dispatch of dataset items to the target while pytest reports them in order (issue 8).

Evaluations are I/O-bound: a real target answers in seconds. The dispatcher runs
item coroutines (``ItemRunner.run_async``) on one background event loop. When
pytest sets up an item, the item and the next ones this process is going to run
are submitted, so up to ``concurrency`` items are in flight; the setup then
waits for its own item's outcome. pytest still runs, reports and times each item
as its own test, in order. What is sent at once reaches the loop as one batch
(one cross-thread wake-up); while ``concurrency`` finished outcomes already wait
for pytest, items are sent ``concurrency // 2`` at a time rather than one by one.

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


def _chain(
    task: asyncio.Task[ItemOutcome], future: concurrent.futures.Future[ItemOutcome], loop: asyncio.AbstractEventLoop
) -> None:
    """Tie ``task`` (on ``loop``) to ``future`` (waited on from pytest's thread) as
    ``asyncio.run_coroutine_threadsafe`` ties its own: the task's result, error or
    cancellation goes to the future when the task ends, and a cancelled future
    cancels the task on its loop."""

    def task_done(done: asyncio.Task[ItemOutcome]) -> None:
        if done.cancelled():
            future.cancel()
        if not future.set_running_or_notify_cancel():
            return  # cancelled from pytest's side first
        error = done.exception()
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(done.result())

    def future_done(done: concurrent.futures.Future[ItemOutcome]) -> None:
        if done.cancelled() and not loop.is_closed():
            loop.call_soon_threadsafe(task.cancel)

    task.add_done_callback(task_done)
    future.add_done_callback(future_done)


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
        # In flight = sent - finished: each count has one writer (sent: pytest's thread;
        # finished: the loop, as each item's task ends), so no lock and no scan is needed.
        self._sent = 0
        self._finished = 0
        self._batch = max(1, concurrency // 2)
        """Items sent at once when the target is ahead of pytest (``_top_up``)."""
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
        """Items sent whose runs have not finished (a cancelled one counts until its task ends)."""
        return self._sent - self._finished

    def _submit(self, test_items: list[Any]) -> None:
        """Send ``test_items`` (not yet sent) to the loop with one cross-thread wake-up."""
        batch = []
        for test_item in test_items:
            if test_item.nodeid in self._futures:
                continue  # listed twice
            future: concurrent.futures.Future[ItemOutcome] = concurrent.futures.Future()
            self._futures[test_item.nodeid] = future
            batch.append((self._run(test_item), future))
        if batch:
            self._sent += len(batch)
            self.loop.call_soon_threadsafe(self._start, batch)

    def _start(self, batch: list[tuple[Any, concurrent.futures.Future[ItemOutcome]]]) -> None:
        """On the loop: a task per coroutine, its result, error or cancellation chained to its
        future as ``asyncio.run_coroutine_threadsafe`` chains them."""
        for coro, future in batch:
            task = self.loop.create_task(coro)
            task.add_done_callback(self._count_finished)
            _chain(task, future, self.loop)

    def _count_finished(self, _task: asyncio.Task[Any]) -> None:
        self._finished += 1

    def _top_up(self, test_item: Any) -> None:
        """Send the items that follow ``test_item`` until ``concurrency`` are in flight.

        Finished outcomes wait for pytest in ``_futures``; at most ``2 × concurrency``
        are held, so a fast target cannot run far ahead of the report. What is sent
        at once goes to the loop in one batch (``_submit``).
        """
        running, held = self.in_flight, len(self._futures)
        room = min(self.concurrency - running, 2 * self.concurrency - held)
        if room <= 0 or (room < self._batch and held - running >= self.concurrency):
            # With ``concurrency`` finished outcomes already waiting for pytest, the target is
            # ahead: wait until a batch can go, one wake-up of the loop for several items.
            return
        sending: list[Any] = []
        for following in self._upcoming(test_item):
            if len(sending) >= room:
                break
            key = following.nodeid
            if self._eligible(following) and key not in self._futures and key not in self._done:
                sending.append(following)
        self._submit(sending)

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
        if test_item.nodeid not in self._futures:
            # Not sent ahead, or run already and run again (a re-run: pytest-rerunfailures, docs/gate.md).
            self._done.discard(test_item.nodeid)
            self._submit([test_item])
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
