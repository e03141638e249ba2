"""Each dataset's gate as a test case of the JUnit XML (``--junitxml``, docs/ci.md).

The one module that touches pytest's junitxml plugin from outside: its ``LogXML``
object, found under ``_pytest.junitxml.xml_key`` in the config's stash, is given the
reports of a synthetic test case ``<manifest>::gate``, before it writes its file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest
from _pytest.junitxml import xml_key

from ..core.gate import verdict
from ..core.lineage import UNKNOWN
from ..core.render import format_check
from .record import GATE_ATTR
from .state import DatasetRun


def log_gates_to_junit(
    config: pytest.Config,
    runs: Iterable[DatasetRun],
    fails_session: Callable[[DatasetRun], bool],
    shard: tuple[int, int] | None,
) -> None:
    """Each dataset's gate as a test case ``<manifest>::gate`` of the JUnit XML (``--junitxml``).

    Given to pytest's junitxml plugin alone, as the reports of a test's call and
    teardown, before it writes its file: the terminal's counts and ``--lf`` are
    not changed by it. The case fails when the gate fails the session
    (``fails_session``); a run measured with ``--eval-no-gate``, and a shard's partial
    gate that fails only on its metrics, are skipped cases saying so. Nothing is done
    without ``--junitxml``.

    Args:
        config: The session's config.
        runs: The session's datasets; those without a gate are left out.
        fails_session: Whether a run's gate fails the session.
        shard: ``--eval-shard``'s ``(K, N)``, or None.
    """
    xml = config.stash.get(xml_key, None)
    if xml is None:
        return
    for run in runs:
        if run.gate is None:
            continue
        nodeid = f"{run.key}::gate"
        lines = [format_check(check, run.confidence) for check in run.gate.checks]
        models = run.models or {}
        props: list[tuple[str, object]] = [
            ("datasetVersion", run.manifest_version()),
            ("models", f"generate={models.get('generate', UNKNOWN)} embed={models.get('embed', UNKNOWN)}"),
            ("gate", verdict(run.gate)),
            ("items", len(run.seen)),
            ("failed", run.failed),
            ("errors", run.errored),
        ]
        if run.shard is not None:
            props.append(("shard", f"{run.shard['index']}/{run.shard['count']}"))
        props += [(f"check.{c.metric}", f"{c.outcome} {c.reason}") for c in run.gate.checks]
        # Each rate's confidence interval (docs/statistics.md), e.g. "0.8812 0.9502 wilson".
        props += [
            (f"confidence.{metric}", f"{interval.low:.4f} {interval.high:.4f} {interval.method}")
            for metric, interval in (run.confidence or {}).items()
            if interval is not None
        ]
        longrepr: Any = None  # a failure's text, or a skip's (path, line, reason) as pytest takes it
        if fails_session(run):
            outcome = "failed"
            longrepr = f"gate FAIL for dataset {run.manifest_version()}\n" + "\n".join(lines)
        elif not run.gate.gated:
            # Measured without gating: the case neither passes nor fails (docs/gate.md, --eval-no-gate).
            outcome = "skipped"
            longrepr = (run.key, None, "not gated (--eval-no-gate): metrics measured and reported, no bound applied")
        elif not run.gate.passed:
            outcome = "skipped"
            index, count = shard or (1, 1)
            longrepr = (
                run.key,
                None,
                f"partial gate of shard {index}/{count} FAIL; the merged gate decides (groundeval merge)",
            )
        else:
            outcome = "passed"
        for when, result, text in (("call", outcome, longrepr), ("teardown", "passed", None)):
            report = pytest.TestReport(
                nodeid=nodeid,
                location=(run.key, None, f"{run.key}::gate"),
                keywords={},
                outcome=result,  # type: ignore[arg-type]  # one of pytest's outcome literals
                longrepr=text,
                when=when,  # type: ignore[arg-type]  # "call" or "teardown"
                sections=[("Captured stdout call", "\n".join(lines) + "\n")] if when == "call" else [],
                duration=0.0,
                user_properties=props if when == "teardown" else [],
            )
            setattr(report, GATE_ATTR, True)
            xml.pytest_runtest_logreport(report)
