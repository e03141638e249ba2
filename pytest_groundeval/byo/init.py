"""A new project's files (docs/byo.md, "Init"): ``groundeval init [DIR]``.

``PROJECT_FILES`` are written into ``DIR`` from the templates in ``template/``:

- ``pytest.ini``: ``eval_dataset = groundeval``, so ``pytest`` in ``DIR`` runs the example;
- ``conftest.py``: a Python target (the ``groundeval_target`` fixture returning an
  object with the contract's methods, docs/target-contract.md) and, in its docstring,
  the target map that describes an HTTP API instead;
- ``groundeval/``: an example dataset of five citation items with its floors, its
  corpus (``corpus/handbook.json``), the corpus hash (computed here) and a README;
- ``.github/workflows/groundeval.yml``: shards, one report upload per shard, and a
  merge job that gates, writes the job summary and keeps one pull-request comment.

Nothing is overwritten: when any of the files exists, or ``DIR`` already holds a pytest
configuration that a new ``pytest.ini`` would silently take precedence over, nothing is written.
"""

from __future__ import annotations

import configparser
from dataclasses import dataclass
from importlib import metadata, resources
from pathlib import Path

import xxhash

__all__ = ["DATASET_DIR", "PROJECT_FILES", "SHARDS", "InitError", "init_project", "project_files"]

DATASET_DIR = "groundeval"
"""Where the example dataset goes, relative to ``DIR`` (and what ``pytest.ini`` names)."""

SHARDS = 2
"""Shards of the workflow's matrix (``--eval-shard K/2``); the example's five items fall 2 and 3."""

PROJECT_FILES = {
    "pytest.ini": "pytest.ini.tmpl",
    "conftest.py": "conftest.py.tmpl",
    f"{DATASET_DIR}/manifest.json": "manifest.json.tmpl",
    f"{DATASET_DIR}/corpus/handbook.json": "handbook.json",
    f"{DATASET_DIR}/README.md": "dataset-README.md.tmpl",
    ".github/workflows/groundeval.yml": "groundeval.yml.tmpl",
}
"""Each file ``init`` writes (relative to ``DIR``) and its template."""

_PYTEST_SECTIONS = {"pyproject.toml": "tool.pytest.ini_options", "tox.ini": "pytest", "setup.cfg": "tool:pytest"}
"""Configuration files pytest reads, and the section that makes one pytest's (a ``pytest.ini`` beside it wins)."""


class InitError(Exception):
    """``init`` would overwrite a file or shadow a pytest configuration; ``path`` names the file."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


@dataclass(frozen=True)
class ProjectFile:
    """One file ``init`` writes."""

    path: str
    """Relative to ``DIR``, ``/``-separated."""
    content: bytes
    """Its bytes."""


def _template(name: str) -> bytes:
    return resources.files(__package__).joinpath("template").joinpath(name).read_bytes()


def _requirement() -> str:
    """What the workflow installs: this version of the package, so CI gates with the plugin ``init`` came from."""
    try:
        return f'"pytest-groundeval=={metadata.version("pytest-groundeval")}"'
    except metadata.PackageNotFoundError:  # pragma: no cover - a source checkout without an install
        return "pytest-groundeval"


def project_files() -> list[ProjectFile]:
    """The files of a new project, in ``PROJECT_FILES`` order (module docstring)."""
    handbook = _template("handbook.json")
    substitutions = {
        "__HANDBOOK_HASH__": xxhash.xxh3_64_hexdigest(handbook),
        "__SHARDS__": str(SHARDS),
        "__SHARD_LIST__": ", ".join(str(k) for k in range(1, SHARDS + 1)),
        "__REQUIREMENT__": _requirement(),
        "__DATASET__": DATASET_DIR,
    }
    files = []
    for path, template in PROJECT_FILES.items():
        content = _template(template)
        if template.endswith(".tmpl"):
            text = content.decode("utf-8")
            for token, value in substitutions.items():
                text = text.replace(token, value)
            content = text.encode("utf-8")
        files.append(ProjectFile(path, content))
    return files


def _pytest_configuration(root: Path) -> Path | None:
    """A configuration file in ``root`` that pytest would read, or None."""
    for name, section in _PYTEST_SECTIONS.items():
        path = root / name
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if name == "pyproject.toml":
            if f"[{section}]" in text:
                return path
            continue
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(text)
        except configparser.Error:
            continue
        if parser.has_section(section):
            return path
    return None


def init_project(root: Path) -> list[Path]:
    """Write the files of a new project into ``root`` (created if missing), all or none.

    Returns:
        The paths written, in ``PROJECT_FILES`` order.

    Raises:
        InitError: One of the files exists (the first such is named), or ``root`` holds a
            pytest configuration (``pyproject.toml``, ``tox.ini``, ``setup.cfg``) that a new
            ``pytest.ini`` would take precedence over.
        OSError: A file could not be written (those written before it are removed again).
    """
    files = project_files()
    for file in files:
        target = root / file.path
        if target.exists() or target.is_symlink():
            raise InitError(target, "exists; groundeval init never overwrites a file (give a new directory)")
    configured = _pytest_configuration(root)
    if configured is not None:
        raise InitError(
            configured,
            "holds a pytest configuration, which the pytest.ini that groundeval init writes would take "
            "precedence over; give a new directory, or add `eval_dataset = DIR` to it yourself (docs/byo.md)",
        )
    written: list[Path] = []
    try:
        for file in files:
            target = root / file.path
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "xb") as handle:  # "x": a file created meanwhile is not overwritten either
                handle.write(file.content)
            written.append(target)
    except OSError:
        for path in written:
            path.unlink(missing_ok=True)
        raise
    return written
