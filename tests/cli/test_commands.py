"""Where the ``groundeval`` commands live (docs/architecture.md): one module per command under ``cli/``."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from pytest_groundeval.cli import COMMANDS

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_groundeval"


def _mentions(source: str) -> list[int]:
    """Lines naming ``ArgumentParser``: a call, a base class, an annotation or an import."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if (
            (isinstance(node, ast.Name) and node.id == "ArgumentParser")
            or (isinstance(node, ast.Attribute) and node.attr == "ArgumentParser")
            or (isinstance(node, ast.ImportFrom) and any(alias.name == "ArgumentParser" for alias in node.names))
        ):
            lines.append(node.lineno)
    return lines


def _builds(source: str) -> list[int]:
    """Lines that call ``ArgumentParser(...)`` or subclass it."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        targets = (
            [node.func] if isinstance(node, ast.Call) else list(node.bases) if isinstance(node, ast.ClassDef) else []
        )
        if any(ast.unparse(t).rpartition(".")[2] == "ArgumentParser" for t in targets):
            lines.append(node.lineno)
    return lines


def test_no_library_module_builds_an_argument_parser():
    offenders = [
        f"{path.relative_to(PACKAGE.parent)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] != "cli"
        for line in _mentions(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_command_modules_share_one_parser():
    # The one non-exiting parser is cli/_args.py's; no command builds a parser of its own.
    offenders = [
        f"{path.name}:{line}"
        for path in sorted((PACKAGE / "cli").glob("*.py"))
        if path.name != "_args.py"
        for line in _builds(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_scans_see_an_argument_parser():
    # The scans above must be able to fail.
    for source in (
        "import argparse\np = argparse.ArgumentParser()\n",
        "from argparse import ArgumentParser as P\n",
        "import argparse\nclass P(argparse.ArgumentParser):\n    pass\n",
    ):
        assert _mentions(source), source
    assert _builds("import argparse\np = argparse.ArgumentParser()\n") == [2]
    assert _builds("from argparse import ArgumentParser\nclass P(ArgumentParser):\n    pass\n") == [2]
    assert _builds("def f(p: argparse.ArgumentParser) -> None:\n    pass\n") == []


def test_every_command_is_a_module_of_the_cli_package():
    for name, (module_name, func_name, _) in COMMANDS.items():
        assert module_name.startswith("pytest_groundeval.cli."), name
        assert (PACKAGE / "cli" / f"{module_name.rpartition('.')[2]}.py").is_file(), name
        assert callable(getattr(importlib.import_module(module_name), func_name)), name
