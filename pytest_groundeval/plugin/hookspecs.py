"""The plugin's own hooks, for extensions (docs/extending.md).

Added to pytest's hooks by ``plugin.hooks.pytest_addhooks``. Implement them in a
``conftest.py`` or a plugin, as any pytest hook; each is called with keyword
arguments, and an implementation may take only those it needs. Imports nothing
but pytest, so the plugin stays light to load.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..core.judging import Judge, Scorer
    from ..core.kinds.base import Kind
    from ..core.report import FinishedReport


def pytest_groundeval_register_kinds(config: pytest.Config) -> Iterable[Kind | type[Kind]] | None:
    """Return a list or tuple of item kinds (``Kind`` subclasses or instances) to register for this session.

    Called once per process (a plain run, the xdist controller and each worker) at
    ``pytest_configure``, before collection; every implementation's kinds are registered
    (``core.kinds.register``), get their pytest marker, and are removed when the session ends.
    Any other return value, or a kind ``core.kinds.register`` refuses, is a usage error naming
    the implementing file (docs/extending.md). Only the ``conftest.py`` files pytest loads at
    start-up (the rootdir's and those of the paths on the command line) are asked.
    """


@pytest.hookspec(firstresult=True)
def pytest_groundeval_make_judge(config: pytest.Config) -> Judge | None:
    """Return a ``core.judging.Judge`` for citation paragraphs, replacing the HTTP judge; None: no say.

    Called in each process that runs citation items, once per item runner, on the event loop
    that then awaits ``judge`` (so a judge may open async clients here); ``close`` is awaited
    when the runner closes. The first non-None answer wins.
    """


@pytest.hookspec(firstresult=True)
def pytest_groundeval_make_scorer(config: pytest.Config) -> Scorer | None:
    """Return a ``core.judging.Scorer`` for citation paragraphs' coverage, replacing the HTTP scorer; None: no say.

    Called as ``pytest_groundeval_make_judge`` is.
    """


def pytest_groundeval_report(config: pytest.Config, report: FinishedReport) -> Any:
    """See each dataset's finished report before it is written, and add to its ``extensions``.

    Called on the controller (or in a plain run) at the end of the session, once per dataset,
    whether or not ``--eval-report`` writes a file; ``report.data`` is the report without its
    items, ``report.items()`` reads them back, and what an implementation puts in
    ``report.extensions[<its name>]`` (JSON values) is written to the report. The return value
    is ignored.
    """


def is_wrapper(impl: Any) -> bool:
    """Whether a hook implementation is a wrapper (called around the others, not one of them).

    The hooks above whose implementations the plugin calls one by one skip wrappers.
    """
    return bool(getattr(impl, "hookwrapper", False) or getattr(impl, "wrapper", False))
