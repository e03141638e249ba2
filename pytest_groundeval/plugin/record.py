"""What an eval item attaches to its reports for the controller and for JUnit XML, and the stash keys the plugin shares.

Outcomes travel as attributes of the item's setup and call reports
(``report.groundeval_outcome``, ``report.groundeval_run``), JSON built-ins, so they
survive pytest-xdist's serialisation (it sends every attribute of a report) and
stay out of ``report.user_properties``, which pytest's junitxml writes verbatim:
there an item carries only its key figures (``record_figures``), as a CI test tab
shows them (docs/ci.md, "Outputs").
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pytest

from ..core.kinds import KIND_NAMES, get

if TYPE_CHECKING:
    from ..core.outcome import ItemOutcome
    from ..mock import ThreadedMockProvider
    from ..targets.spawn import SpawnedTarget
    from .options import Settings

OUTCOME_ATTR = "groundeval_outcome"
"""The report attribute an item's outcome (wire dict) travels under."""

RUN_ATTR = "groundeval_run"
"""The report attribute carrying the dataset version and model lineage of the run."""

NOTICES_ATTR = "groundeval_notices"
"""The report attribute carrying what the judge newly noticed by this item (a fallback it made, docs/judges.md)."""

GATE_ATTR = "groundeval_gate"
"""Set on the synthetic report of a dataset's gate (JUnit XML), so the controller skips it."""

SESSION_WORKERINPUT = "groundeval_session"
"""``workerinput`` key under which the controller gives xdist workers the session id."""

session_key = pytest.StashKey[str]()
"""The session id (``config.stash``): the controller's, or on a worker the one it was given."""

settings_key: pytest.StashKey[Settings] = pytest.StashKey()
"""The resolved options (``config.stash``)."""
mock_key: pytest.StashKey[ThreadedMockProvider] = pytest.StashKey()
"""The session's ``ThreadedMockProvider`` (``session.stash``), when one started."""
mock_port_key: pytest.StashKey[int] = pytest.StashKey()
"""The port the mock is to bind (``session.stash``): the one the target launched ahead of it
was told (``plugin/spawn_ahead.py``)."""
spawned_key: pytest.StashKey[SpawnedTarget] = pytest.StashKey()
"""The session's ``SpawnedTarget`` (``session.stash``), when the target was spawned."""


def session_id(config: pytest.Config) -> str:
    """The session id (the controller's, given to xdist workers); a fresh one if none was set."""
    found = config.stash.get(session_key, None)
    if found is None:
        found = config.stash[session_key] = uuid.uuid4().hex
    return found


position_key = pytest.StashKey[dict[str, int]]()
"""Node id -> index in ``session.items`` (``session.stash``), built on first use."""
outcome_key = pytest.StashKey[tuple[dict[str, Any], "ItemOutcome"]]()
"""The item's outcome as a wire dict, copied onto its reports, and the outcome itself (``item.stash``)."""
built_outcomes_key = pytest.StashKey[dict[str, "ItemOutcome"]]()
"""Outside an xdist worker: node id -> the outcome object whose wire dict a report of the item
carries (``config.stash``), so the controller in the same process takes the object rather than
validating its wire dict again; the controller removes each once its report is logged."""
run_key = pytest.StashKey[dict[str, Any]]()
"""The item's dataset version and lineage (``item.stash``), copied onto its reports."""
notices_key = pytest.StashKey[list[str]]()
"""The judge's notices first seen with the item (``item.stash``), copied onto its reports."""


def kind_figures(wire: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The figures an outcome's kind declares (``Kind.junit_figures``) as ``(name, value)``, nulls left out.

    A figure is an outcome wire key, or a key of its ``extra`` (where a kind keeps its own
    per-item figures); an outcome of a kind no longer registered has none.
    """
    kind = wire.get("kind")
    if not isinstance(kind, str) or kind not in KIND_NAMES:
        return []
    extra = wire.get("extra") or {}
    figures = []
    for key in get(kind).junit_figures:
        value = wire[key] if key in wire else extra.get(key)
        if value is not None:
            figures.append((key, value))
    return figures


@functools.lru_cache(maxsize=64)
def _run_block(dataset_version: str, models: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    return {"datasetVersion": dataset_version, "models": dict(models)}


def record_run(item: pytest.Item, dataset_version: str, models: Mapping[str, str]) -> None:
    """Attach the run's dataset version and lineage to the item's reports (for the controller).

    Items of one run share one block, which nothing changes (a block per item was a
    quarter of a KiB per item, kept to the session's end with its reports: issue 24).
    """
    try:
        block = _run_block(dataset_version, tuple(models.items()))
    except TypeError:  # a name that cannot be a cache key (a target's info() gave a list): a block of its own
        block = {"datasetVersion": dataset_version, "models": dict(models)}
    item.stash[run_key] = block


def record_outcome(item: pytest.Item, outcome: ItemOutcome) -> None:
    """Attach the outcome as JSON built-ins to the item's reports, and its key figures as JUnit properties."""
    wire = outcome.to_wire()
    item.stash[outcome_key] = (wire, outcome)
    record_figures(item, wire)


def record_figures(item: pytest.Item, wire: Mapping[str, Any]) -> None:
    """Add the outcome's key figures to ``item.user_properties`` (what ``record_property`` does).

    Only figures: the outcome (pass, fail, error), the pass rate of its attempts under
    ``--eval-repeat``, latency in ms, the figures its kind
    declares (``Kind.junit_figures``: qa's evidence and claim counts, adversarial's
    ``falsehoodSupported``), the target's trace id, tokens. Never a text of the answer,
    never the API key or the target's URL (docs/ci.md).
    """
    props = item.user_properties
    props.append(("outcome", "error" if wire.get("error") is not None else "pass" if wire.get("pass") else "fail"))
    if wire.get("passRate") is not None:  # under --eval-repeat N: attempts passed / N (docs/gate.md, Repeats)
        props.append(("passRate", f"{wire['passRate']:.4f}"))
    if wire.get("latencyMs") is not None:
        props.append(("latencyMs", f"{wire['latencyMs']:.1f}"))
    props.extend(kind_figures(wire))
    if wire.get("traceId") is not None:
        props.append(("traceId", wire["traceId"]))
    prompt, completion = wire.get("promptTokens"), wire.get("completionTokens")
    if prompt is not None or completion is not None:
        props.append(("tokens", (prompt or 0) + (completion or 0)))


def record_notices(item: pytest.Item, judge: object) -> None:
    """Attach what ``judge`` noticed since the last item (``JudgeClient.pop_notices``: each fallback it
    made, once) to the item's reports, for the controller's summary; a judge without notices has none."""
    pop = getattr(judge, "pop_notices", None)
    fresh = [str(notice) for notice in pop()] if callable(pop) else []
    if fresh:
        item.stash[notices_key] = fresh


def attach(item: pytest.Item, report: pytest.TestReport) -> None:
    """Copy what the item recorded onto its setup or call report (``pytest_runtest_makereport``)."""
    if report.when == "teardown":
        return
    run = item.stash.get(run_key, None)
    if run is not None:
        setattr(report, RUN_ATTR, run)
    recorded = item.stash.get(outcome_key, None)
    if recorded is not None and (report.when == "call" or report.failed):
        # Only on the report the controller reads it from (its call report, or the setup report
        # of an item that could not run); then the item no longer holds it, and the controller
        # drops it from the report once read (``Controller.pytest_runtest_logreport_release``): pytest keeps every report
        # and item to the end of the session, an outcome is needed only until it is counted.
        wire, built = recorded
        setattr(report, OUTCOME_ATTR, wire)
        del item.stash[outcome_key]
        if not hasattr(item.config, "workerinput"):  # no xdist worker: the controller is in this process
            item.config.stash.setdefault(built_outcomes_key, {})[report.nodeid] = built
    notices = item.stash.get(notices_key, None)
    if notices:
        setattr(report, NOTICES_ATTR, notices)
