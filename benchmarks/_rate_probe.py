"""A pytest plugin for the benchmarks: the steady-state item rate of a run, start-up excluded.

Loaded with ``-p _rate_probe`` (``benchmarks/`` on ``PYTHONPATH``). On the
controller (or a plain run) it notes the time each test's last report arrives;
at the end it writes ``{"items": n, "first_s": t0, "last_s": t1, "rate": (n - 1) /
(t1 - t0)}`` to the file named by ``BENCH_RATE_FILE``. Counting from the first
finished item leaves out interpreter start-up, collection and the spawn of the
target and mock (all done before the first item finishes), so runs of different
lengths compare. Under xdist the workers' reports reach the controller as they
happen, so the rate is that of all workers together.
"""

from __future__ import annotations

import json
import os
import time

import pytest


class RateProbe:
    """Collects the finish time of each test on the controller and writes the rate at the end."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.finished: list[float] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown":
            self.finished.append(time.perf_counter())

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self) -> None:
        if len(self.finished) < 2:
            return
        first, last = self.finished[0], self.finished[-1]
        result = {"items": len(self.finished), "first_s": first, "last_s": last}
        result["rate"] = (len(self.finished) - 1) / (last - first)
        with open(self.path, "w", encoding="utf-8") as handle:
            json.dump(result, handle)


def pytest_configure(config: pytest.Config) -> None:
    path = os.environ.get("BENCH_RATE_FILE")
    if path and not hasattr(config, "workerinput"):
        config.pluginmanager.register(RateProbe(path), "bench-rate-probe")
