"""Where a run happened (docs/gate.md, "The report": ``environment``): plugin version, Python, platform, git commit."""

from __future__ import annotations

import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from .wire import WireModel

__all__ = ["PACKAGE_NAME", "Environment", "environment_info"]

PACKAGE_NAME = "pytest-groundeval"
"""Distribution name whose version is recorded in ``environment.pluginVersion``."""


class Environment(WireModel):
    """Where the run happened, for reading reports side by side."""

    plugin_version: str
    """pytest-groundeval version, ``"unknown"`` if not installed as a distribution."""
    python: str
    """Python version, e.g. ``"3.11.7"``."""
    platform: str
    """``platform.platform()``."""
    git_commit: str | None = None
    """``git rev-parse HEAD`` in the run's working directory; None outside a git checkout."""


def environment_info(cwd: str | Path | None = None) -> dict[str, Any]:
    """The ``environment`` block: plugin version, Python, platform, git commit.

    Args:
        cwd: Directory whose git commit is recorded; the process's cwd by default.

    Returns:
        A dict with wire keys ``pluginVersion``, ``python``, ``platform``,
        ``gitCommit`` (None when git is missing, times out, or ``cwd`` is not in
        a repository).
    """
    try:
        version = metadata.version(PACKAGE_NAME)
    except metadata.PackageNotFoundError:
        version = "unknown"
    return Environment(
        plugin_version=version,
        python=platform.python_version(),
        platform=platform.platform(),
        git_commit=_git_commit(cwd),
    ).to_wire()


def _git_commit(cwd: str | Path | None) -> str | None:
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = proc.stdout.strip()
    return commit if proc.returncode == 0 and commit else None
