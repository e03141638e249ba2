"""The pytest plugin (entry point ``pytest11: groundeval``): hooks and session fixtures.

pytest registers this module; it re-exports the hooks of ``plugin.hooks`` and the
fixtures of ``plugin.fixtures`` so both are found on it. See docs/plugin.md for
what the plugin does and docs/architecture.md for where each part lives.
"""

from __future__ import annotations

from .fixtures import groundeval_mock, groundeval_offline_runner, groundeval_runner, groundeval_target
from .hooks import (
    pytest_addhooks,
    pytest_addoption,
    pytest_collect_file,
    pytest_collection_modifyitems,
    pytest_collection_modifyitems_targets,
    pytest_configure,
    pytest_report_header,
    pytest_runtest_makereport,
)
from .record import spawned_key

__all__ = [
    "groundeval_mock",
    "groundeval_offline_runner",
    "groundeval_runner",
    "groundeval_target",
    "pytest_addhooks",
    "pytest_addoption",
    "pytest_collect_file",
    "pytest_collection_modifyitems",
    "pytest_collection_modifyitems_targets",
    "pytest_configure",
    "pytest_report_header",
    "pytest_runtest_makereport",
    "spawned_key",
]
