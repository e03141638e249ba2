"""What an eval item attaches to its report for the controller, and the stash keys the plugin shares.

Outcomes travel in ``report.user_properties`` as JSON built-ins, so they survive
pytest-xdist's serialisation (as pytest's own junitxml properties do).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..core.outcome import ItemOutcome
    from .options import Settings

USER_PROPERTY = "groundeval_outcome"
"""The ``user_properties`` key an item's outcome travels under."""

RUN_PROPERTY = "groundeval_run"
"""``user_properties`` key carrying the dataset version and model lineage of the run."""

SESSION_WORKERINPUT = "groundeval_session"
"""``workerinput`` key under which the controller gives xdist workers the session id."""

session_key = pytest.StashKey[str]()
"""The session id (``config.stash``): the controller's, or on a worker the one it was given."""

settings_key = pytest.StashKey["Settings"]()
"""The resolved options (``config.stash``)."""
mock_key = pytest.StashKey[Any]()
"""The session's ``ThreadedMockProvider`` (``session.stash``), when one started."""
spawned_key = pytest.StashKey[Any]()
"""The session's ``SpawnedTarget`` (``session.stash``), when the target was spawned."""
position_key = pytest.StashKey[dict]()
"""Node id -> index in ``session.items`` (``session.stash``), built on first use."""


def record_run(item: pytest.Item, dataset_version: str, models: dict) -> None:
    """Attach the run's dataset version and lineage to the item's report (for the controller)."""
    item.user_properties.append((RUN_PROPERTY, {"datasetVersion": dataset_version, "models": dict(models)}))


def record_outcome(item: pytest.Item, outcome: ItemOutcome) -> None:
    """Attach the outcome as JSON built-ins, so it survives xdist."""
    item.user_properties.append((USER_PROPERTY, outcome.to_wire()))
