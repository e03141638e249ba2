"""The controller's pytest-xdist hooks, registered only when xdist is present (as pytest-randomly's ``XdistHooks``).

``plugin.hooks`` registers ``XdistHooks`` as ``groundeval-xdist`` on the controller when
``config.pluginmanager.hasplugin("xdist")``; under ``-p no:xdist``, or without xdist
installed, it is absent and the hook names xdist declares are never looked up. The
hooks give each worker the session id and the crash journal's directory, blame a dead
worker's crash on the items it had in flight (``plugin.crash``), and tell the
controller what each worker collected.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from .crash import WORKERINPUT_KEY, ControllerJournal, crash_message
from .nodeids import eval_node_kind
from .record import SESSION_WORKERINPUT

if TYPE_CHECKING:
    from collections.abc import Sequence

    from xdist.scheduler.protocol import Scheduling
    from xdist.workermanage import WorkerController

    from .session import GateSession


class XdistHooks:
    """xdist's controller hooks for a groundeval session.

    Args:
        session: The session whose id and journal the workers get, and whose controller
            (when the session has a dataset) learns what they collected.
    """

    def __init__(self, session: GateSession) -> None:
        self.session = session

    def pytest_configure_node(self, node: WorkerController) -> None:
        session = self.session
        if session.journal is None:
            factory = getattr(session.config, "_tmp_path_factory", None)  # pytest's tmp_path_factory
            session.journal = ControllerJournal(factory.getbasetemp() if factory is not None else None)
        node.workerinput[WORKERINPUT_KEY] = str(session.journal.directory)
        # The session id: each worker's target calls carry it (docs/target-contract.md).
        node.workerinput[SESSION_WORKERINPUT] = session.session_id

    def _reported(self, nodeid: str) -> bool:
        controller = self.session.controller
        return controller is not None and controller.reported(nodeid)

    def pytest_testnodedown(self, node: WorkerController, error: object | None) -> None:
        # Before xdist hands the dead worker's pending items to others: poison its in-flight ones.
        if error is not None and self.session.journal is not None:
            self.session.journal.worker_died(node.gateway.id, self._reported)

    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Scheduling) -> None:
        journal = self.session.journal
        if journal is None or eval_node_kind(crashitem) is None:
            return None
        worker: str = report.node.gateway.id  # xdist sets the report's node (its WorkerController)
        in_flight = journal.in_flight.get(worker, [])
        if crashitem in in_flight:
            report.longrepr = crash_message(worker, in_flight)
        elif crashitem in journal.done.get(worker, ()) and crashitem not in journal.rerun:
            # Its call had finished: not the culprit. Run it again, once, to report its real result.
            journal.rerun.add(crashitem)
            try:
                sched.mark_test_pending(crashitem)
            except NotImplementedError:  # a scheduler that cannot (--dist loadscope)
                report.longrepr = (
                    f"worker {worker} crashed after this item's target call had finished, but before its "
                    "result was reported; the result went with the worker"
                )
            else:
                report.outcome = "rerun"  # type: ignore[assignment]  # xdist's documented rerun outcome
        return None

    def pytest_xdist_node_collection_finished(self, node: WorkerController, ids: Sequence[str]) -> None:
        if self.session.controller is not None:
            self.session.controller.collected(ids)

    @pytest.hookimpl
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.session.journal is not None:
            self.session.journal.cleanup()
