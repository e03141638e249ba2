"""Targets: the system under test, reached over REST or in process (docs/target-contract.md).

- ``protocol``: the ``Target`` protocol, its errors, ``lineage``.
- ``responses``: the response models, checked once at the target boundary.
- ``http``: ``HttpTarget`` and ``connect_url`` (a running server).
- ``spawn``: ``SpawnConfig`` / ``SpawnedTarget`` (a server started per session)
  and ``reference_command`` (the embedded reference server).

Names are re-exported here and imported on first use, so ``Target`` and the
errors cost no HTTP library.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Target": "protocol",
    "TargetError": "protocol",
    "TargetUnavailable": "protocol",
    "SpawnError": "protocol",
    "describe_exit": "protocol",
    "lineage": "protocol",
    "check_response": "responses",
    "check_generate_response": "responses",
    "HttpTarget": "http",
    "connect_url": "http",
    "MOCK_LLM_API_KEY": "spawn",
    "SpawnConfig": "spawn",
    "SpawnedTarget": "spawn",
    "reference_command": "spawn",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
