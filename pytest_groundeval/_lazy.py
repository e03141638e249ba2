"""Lazy re-exports (PEP 562), shared by the packages that re-export names from their modules.

A package lists ``name -> submodule`` and gets a module ``__getattr__`` that imports the
submodule on first use (and keeps the value), and a ``__dir__`` listing the names. So
importing the package costs nothing its user does not touch.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str], namespace: dict[str, Any], extra: tuple[str, ...] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``.

    Args:
        package: The package's ``__name__``.
        exports: Exported name -> submodule of ``package`` that defines it.
        namespace: The package's ``globals()``; a value, once imported, is stored there.
        extra: Names defined in the package itself, listed by ``__dir__`` too.

    Raises (from ``__getattr__``):
        AttributeError: ``name`` is not exported.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted([*extra, *exports])

    return __getattr__, __dir__
