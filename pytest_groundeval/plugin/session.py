"""What every session on the controller has, dataset or not: its id, and SIGTERM handled like Ctrl-C.

``GateSession`` is registered by ``plugin.hooks`` on the controller (or a plain run)
of every session, as ``groundeval-gate``; it imports nothing heavy, so a pytest run
that uses no dataset pays nothing for it. The work of a run with a dataset (aggregation,
the gate, the report) is ``plugin.controller.Controller``'s, registered beside it only
then; the xdist hooks are ``plugin.xdist_hooks.XdistHooks``'s, registered only when
pytest-xdist is present. Both read this object's flags.

SIGTERM (what CI cancellation sends) is turned into a KeyboardInterrupt, as pytest
does SIGINT: the session stops, the report is written and marked interrupted, the
exit status is not 0 (docs/guarantees.md).

A signal handler's exception is raised wherever the main thread happens to be; when
that is a finalizer (``__del__``, a weakref callback, a generator closed by the garbage
collector) Python prints "Exception ignored" and carries on, and the run would go on
as if Ctrl-C had not been pressed. So both signals are also latched until pytest has
seen their KeyboardInterrupt: ``raise_pending_interrupt`` raises it again, and the
dispatcher (``plugin.dispatch``) calls it while it waits for an item.
"""

from __future__ import annotations

import signal
import time
import uuid
from collections.abc import Callable, Generator
from types import FrameType
from typing import TYPE_CHECKING, Any

import pytest

from .record import session_key

if TYPE_CHECKING:
    from .controller import Controller
    from .crash import ControllerJournal


class _Latch:
    """The signal (``"SIGINT"`` or ``"SIGTERM"``) whose KeyboardInterrupt pytest has not seen yet, if any."""

    signal: str | None = None


def raise_pending_interrupt() -> None:
    """Raise the KeyboardInterrupt of a SIGINT or SIGTERM that has not stopped the session yet.

    Its first raise may have been swallowed by a finalizer (see the module docstring).
    Does nothing when no such signal came, or outside a session with a dataset.

    Raises:
        KeyboardInterrupt: as the signal handler raised it (``"SIGTERM"`` for SIGTERM).
    """
    name = _Latch.signal
    if name is not None:
        raise KeyboardInterrupt(*((name,) if name == "SIGTERM" else ()))


class GateSession:
    """The session's id and flags, and its SIGTERM handler (docs/gate.md, docs/guarantees.md).

    Args:
        config: The session's config; the id is put in its stash (``record.session_key``).
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.started_at_ms = int(time.time() * 1000)
        """Session start, Unix epoch milliseconds."""
        self.started = time.perf_counter()
        """Session start on the monotonic clock, for the report's duration."""
        self.session_id = uuid.uuid4().hex
        """The session id: sent to the target (``GROUNDEVAL_RUN_ID``), the root of each dataset's run id."""
        config.stash[session_key] = self.session_id
        self.interrupted_by: str | None = None
        """``"SIGTERM"`` once SIGTERM interrupted the session."""
        self.finishing = False
        """True once the run loop is over (set by ``pytest_runtestloop``)."""
        self.stopped_by_groundeval = False
        """True when the session stopped because the harness stopped it (target down or gone),
        not because the user or CI interrupted it; such a run exits 1, not 2."""
        self.journal: ControllerJournal | None = None
        """The crash journal of the xdist workers (``plugin.crash``), set by ``XdistHooks``."""
        self.controller: Controller | None = None
        """The run's controller when the session has a dataset (``plugin.controller``)."""
        self._previous_sigterm: Callable[[int, FrameType | None], Any] | int | signal.Handlers | None = None
        """The SIGTERM handler ``install_sigterm`` replaced (what ``signal.signal`` returned), restored at the end."""
        self._previous_sigint: Callable[[int, FrameType | None], Any] | int | signal.Handlers | None = None
        """The SIGINT handler replaced by the latching one (what ``signal.signal`` returned), restored at the end."""

    # -- SIGTERM ------------------------------------------------------------------

    def install_sigterm(self) -> None:
        """Turn SIGTERM into KeyboardInterrupt, as pytest does SIGINT, unless someone else handles it.

        In a session with a dataset, SIGINT's default handler is wrapped too, so that both
        are latched for ``raise_pending_interrupt``.
        """
        _Latch.signal = None
        try:
            if self.controller is not None and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
                self._previous_sigint = signal.signal(signal.SIGINT, self._on_sigint)
            if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
                return
            self._previous_sigterm = signal.signal(signal.SIGTERM, self._on_sigterm)
        except ValueError:  # not the main thread (pytest run from a thread): leave signals alone
            self._previous_sigterm = None

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        if not self.finishing:
            _Latch.signal = "SIGINT"
        signal.default_int_handler(signum, frame)  # raises KeyboardInterrupt, as without this handler

    def _on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        # Once: a second SIGTERM ends the process the default way.
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if self.finishing:
            # Every selected item has run: the session is writing its report and tearing
            # down. Let it finish; an interrupt here would only cut the report short.
            return
        self.interrupted_by = _Latch.signal = "SIGTERM"
        raise KeyboardInterrupt("SIGTERM")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        try:
            return (yield)
        finally:
            self.finishing = True

    @pytest.hookimpl
    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        _Latch.signal = None  # pytest has it: the session is stopping
        # Under xdist a worker's session.shouldfail reaches the controller as an interrupt
        # whose message is that reason; the harness's own stops start with "groundeval:".
        if str(excinfo.value).startswith("groundeval:"):
            self.stopped_by_groundeval = True

    @pytest.hookimpl
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        _Latch.signal = None
        if self._previous_sigint is not None:
            try:
                if signal.getsignal(signal.SIGINT) == self._on_sigint:
                    signal.signal(signal.SIGINT, self._previous_sigint)
            except ValueError:
                pass
        if self._previous_sigterm is not None:
            try:
                if signal.getsignal(signal.SIGTERM) == self._on_sigterm:
                    signal.signal(signal.SIGTERM, self._previous_sigterm)
            except ValueError:
                pass
