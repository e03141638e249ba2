"""``groundeval`` itself: the dispatcher over the commands (pytest_groundeval/cli/__init__.py)."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import tomllib

from pytest_groundeval.cli import main as groundeval

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_groundeval_version(capsys):
    assert groundeval(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("groundeval ")
    # The installed distribution's version, which is the one pyproject.toml declares.
    version = tomllib.loads(PYPROJECT.read_text("utf-8"))["project"]["version"]
    assert out == f"groundeval {metadata.version('pytest-groundeval')}\n"
    assert metadata.version("pytest-groundeval") == version
