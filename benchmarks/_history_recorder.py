"""A pytest plugin for bench_history.py: records each eval outcome to history, as the controller will.

Loaded with ``-p _history_recorder`` (this directory on ``PYTHONPATH``) when
``BENCH_HISTORY_URL`` is set. It does the work the controller is to do, with the same imports (the
driver-level writer, no SQLAlchemy): open a
run at session start, hand every item outcome (from ``report.user_properties``)
to a ``RunRecorder`` as its report arrives, finish the run at session end. The
outcome wire dict today carries no question, answer or trace, so the same
context as ``bench_history.records`` is added to each record to write rows of
realistic size.
"""

from __future__ import annotations

import os

import pytest

from pytest_groundeval.plugin.record import USER_PROPERTY
from pytest_groundeval.history.writer import HistoryWriter, RunRecorder

CONTEXT = {
    "question": "What does record 17 say about the harbour fees in 2019?",
    "answer": "The harbour fee rose to 40 crowns [1]. It was cut in 2021 [2]. " * 3,
    "tags": ["harbour", "batch-1"],
    "sources": {"1": {"document": "fees.json"}, "2": {"document": "minutes.md"}},
    "trace": {"evidence": [{"marker": str(i), "document": "fees.json", "start": i * 80, "end": i * 80 + 60,
                            "text": "Record text of about sixty characters, give or take a few."} for i in range(1, 4)],
              "claims": [{"text": "The harbour fee rose to 40 crowns.", "verdict": "supported", "markers": ["1"]}] * 3},
    "toolTrace": [{"tool": "search", "hits": ["d1", "d7", "d9"]}, {"tool": "sql", "hits": ["r12"]}],
    "iterations": 2,
}

_state: dict = {}


def pytest_sessionstart(session: pytest.Session) -> None:
    store = HistoryWriter.open(os.environ["BENCH_HISTORY_URL"])
    _state["store"] = store
    _state["recorder"] = RunRecorder(store, {"dataset": {"version": "bench"}, "models": {}},
                                     batch_size=int(os.environ.get("BENCH_HISTORY_BATCH", "100")),
                                     background=os.environ.get("BENCH_HISTORY_BACKGROUND", "1") == "1")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when != "call":
        return
    wire = dict(report.user_properties).get(USER_PROPERTY)
    if wire is not None:
        _state["recorder"].add({**wire, **CONTEXT})
        _state["added"] = _state.get("added", 0) + 1


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    recorder = _state.pop("recorder", None)
    if recorder is not None:
        recorder.finish(metrics={"items": _state.pop("added", 0)}, gate=None)
        print(f"\nhistory: {recorder.recorded} items recorded")
    store = _state.pop("store", None)
    if store is not None:
        store.close()
