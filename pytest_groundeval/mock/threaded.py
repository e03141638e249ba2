"""The mock provider on its own thread and event loop, for synchronous code (docs/mock.md).

:class:`ThreadedMockProvider` wraps ``server.MockProvider``: it starts a daemon thread
running an event loop, starts the server there and forwards the log, counts and
fault reset to it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from pytest_groundeval.mock.noise import NO_NOISE, NoiseSettings
from pytest_groundeval.mock.server import DEFAULT_LOG_LIMIT, MockProvider, RequestRecord


class ThreadedMockProvider:
    """The same mock provider on its own thread and event loop, for synchronous fixtures.

    Use as ``with ThreadedMockProvider() as mock:``. Attributes mirror
    :class:`MockProvider`; the log is safe to read from any thread.

    Args:
        host: Interface to bind (loopback by default).
        port: Port to bind; 0 picks a free one.
        shutdown_timeout: Seconds :meth:`stop` waits for in-flight requests.
        start_timeout: Seconds to wait for the server to start.
        log_limit: Requests the log keeps, the most recent (:class:`MockProvider`).
        noise: Seeded noise on generations (docs/mock.md, "Noise"); off by default.

    Raises:
        ValueError: ``log_limit`` is negative or not an int.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        shutdown_timeout: float = 1.0,
        start_timeout: float = 10.0,
        log_limit: int | None = DEFAULT_LOG_LIMIT,
        noise: NoiseSettings = NO_NOISE,
    ) -> None:
        self.provider = MockProvider(host, port, shutdown_timeout=shutdown_timeout, log_limit=log_limit, noise=noise)
        self._start_timeout = start_timeout
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the loop thread and the server; returns once it is listening.

        Raises:
            RuntimeError: Already started.
            OSError: The address cannot be bound.
        """
        if self._loop is not None:
            raise RuntimeError("ThreadedMockProvider already started")
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="groundeval-mock", daemon=True)
        thread.start()
        self._loop, self._thread = loop, thread
        try:
            asyncio.run_coroutine_threadsafe(self.provider.start(), loop).result(self._start_timeout)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop the server, then the loop and its thread. Idempotent."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self.provider.stop(), loop).result()
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
            self._loop = self._thread = None

    def __enter__(self) -> ThreadedMockProvider:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """OpenAI-style base URL ``http://HOST:PORT/v1``."""
        return self.provider.base_url

    @property
    def root_url(self) -> str:
        """``http://HOST:PORT``."""
        return self.provider.root_url

    @property
    def noise(self) -> NoiseSettings:
        """The seeded noise on generations; assign to change it for later requests (docs/mock.md, "Noise")."""
        return self.provider.noise

    @noise.setter
    def noise(self, settings: NoiseSettings) -> None:
        self.provider.noise = settings

    @property
    def log(self) -> list[RequestRecord]:
        """A copy of the request log (the last ``log_limit`` requests), in arrival order."""
        return self.provider.log

    @property
    def requests_total(self) -> int:
        """Finished requests since start or the last :meth:`clear_log`, including those the log dropped."""
        return self.provider.requests_total

    def clear_log(self) -> None:
        """Empty the request log and zero the running counts."""
        self.provider.clear_log()

    def reset_faults(self) -> None:
        """Forget the ``x<N>`` fault counters."""
        self._call_in_loop(self.provider.reset_faults)

    def limit_stats(self, spec: str) -> dict[str, int]:
        """``MockProvider.limit_stats``: what the ``conc:``/``rate:`` fault ``spec`` admitted and refused."""
        return self.provider.limit_stats(spec)

    def tokens_total(self, kind: str | None = None) -> int:
        """Prompt plus completion tokens of every finished request (a running count), optionally of one ``kind``."""
        return self.provider.tokens_total(kind)

    def task_count(self) -> int:
        """Number of tasks alive in the server's loop (a debugging aid to spot leaked tasks)."""

        async def count() -> int:
            return len(asyncio.all_tasks()) - 1  # minus this probe itself

        if self._loop is None:
            raise RuntimeError("ThreadedMockProvider is not running")
        return asyncio.run_coroutine_threadsafe(count(), self._loop).result(self._start_timeout)

    def _call_in_loop(self, func: Callable[[], None]) -> None:
        if self._loop is None:
            func()
            return

        async def run() -> None:
            func()

        asyncio.run_coroutine_threadsafe(run(), self._loop).result(self._start_timeout)
