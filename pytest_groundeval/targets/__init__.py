"""Targets: the system under test, reached over REST or in process (docs/target-contract.md).

- ``protocol``: the ``Target`` protocol, its errors, ``lineage``.
- ``responses``: the response models, checked once at the target boundary.
- ``http``: ``HttpTarget`` and ``connect_url`` (a running server).
- ``spawn``: ``SpawnConfig`` / ``SpawnedTarget`` (a server started per session)
  and ``reference_command`` (the embedded reference server).
- ``mapping`` / ``mapped``: ``load_map`` and ``MappedTarget``, an existing HTTP API
  described by a target map (docs/byo.md); ``stream`` reads its Server-Sent Events.

Names are re-exported here and imported on first use, so ``Target`` and the
errors cost no HTTP library.
"""

from __future__ import annotations

from .._lazy import lazy_exports

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
    "MapError": "mapping",
    "TargetMap": "mapping",
    "load_map": "mapping",
    "MappedTarget": "mapped",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
