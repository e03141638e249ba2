"""Shared fixtures for the project's own tests."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def load_script() -> Callable[[str], ModuleType]:
    """Import ``scripts/<name>.py`` by path (``scripts/`` is not a package), once per session."""

    def load(name: str) -> ModuleType:
        if name in sys.modules:
            return sys.modules[name]
        spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        # dataclasses resolve annotations through sys.modules, so the module must be registered to execute.
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module

    return load
