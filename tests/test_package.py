"""The package's public surface: every name in __all__ resolves, and loading the plugin stays light."""

from __future__ import annotations

import subprocess
import sys

import pytest_groundeval


def test_every_exported_name_resolves():
    for name in pytest_groundeval.__all__:
        assert getattr(pytest_groundeval, name) is not None, name


def test_unknown_attribute_is_an_attribute_error():
    try:
        pytest_groundeval.no_such_thing  # noqa: B018
    except AttributeError as exc:
        assert "no_such_thing" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_loading_the_plugin_does_not_import_the_heavy_modules():
    # Every pytest run in an environment with the plugin installed imports it.
    code = (
        "import sys, pytest_groundeval.plugin; "
        "heavy = [m for m in ('pydantic', 'aiohttp', 'httpx', 'pytest_groundeval.mock') if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_py_typed_ships():
    from importlib.resources import files

    assert files("pytest_groundeval").joinpath("py.typed").is_file()
