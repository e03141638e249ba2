"""The ``groundeval`` console script: a thin dispatcher over one module per command.

Each sub-command takes the remaining arguments: ``main(argv: list[str]) -> int``. Exit codes: 0 success (or gate
PASS), 1 gate FAIL, 2 unusable input or usage error. A reader that stops early (``groundeval gate … | head -1``)
costs the rest of the output, never the exit code: the command runs to the end and exits with its own status.

Before a command runs, the item kinds of installed packages (the ``pytest_groundeval.kinds`` entry points,
``core.kinds.extensions``, the loader the pytest plugin uses too) are registered, so reports holding an
extension's kinds and metrics read back; ``conftest.py`` kinds are not loaded here (docs/extending.md).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, TextIO

from ..core.kinds import unregister
from ..core.kinds.extensions import ExtensionError, entry_point_kinds, register_from

COMMANDS: dict[str, tuple[str, str, str]] = {
    "hash-corpus": (
        "pytest_groundeval.cli.dataset",
        "hash_corpus_main",
        "Print corpus hashes to paste into a manifest",
    ),
    "gate": ("pytest_groundeval.cli.gate", "gate_main", "Re-apply gate floors to a saved report"),
    "report": ("pytest_groundeval.cli.report", "report_main", "Print a saved report's metrics and items"),
    "merge": ("pytest_groundeval.cli.merge", "merge_main", "Merge the reports of a sharded run and gate them"),
    "mock": ("pytest_groundeval.cli.mock", "main", "Serve the deterministic OpenAI-compatible mock provider"),
    "reference": ("pytest_groundeval.cli.reference", "main", "Serve the reference target, or create an API key"),
    "generate-questions": (
        "pytest_groundeval.cli.generate_questions",
        "generate_main",
        "Generate citation items from a corpus with an LLM",
    ),
    "history": ("pytest_groundeval.cli.history", "history_main", "List, show and compare recorded runs"),
    "compare": (
        "pytest_groundeval.cli.compare",
        "compare_main",
        "Pair two saved reports on item ids and test each change for significance",
    ),
    "rejudge": ("pytest_groundeval.cli.rejudge", "rejudge_main", "Judge a recorded run's answers again"),
    "calibrate": (
        "pytest_groundeval.cli.calibrate",
        "calibrate_main",
        "Measure a citation judge against a dataset's human labels, with intervals",
    ),
    "import": (
        "pytest_groundeval.cli.importer",
        "import_main",
        "Import ragas, deepeval, promptfoo or CSV rows as a dataset",
    ),
    "init": (
        "pytest_groundeval.cli.init",
        "init_main",
        "Write a new project: example dataset, conftest.py, CI workflow",
    ),
}

USAGE = (
    "usage: groundeval [--version] {"
    + ",".join(COMMANDS)
    + "} [options]\n\n"
    + "\n".join(f"  {name:<{max(map(len, COMMANDS))}}  {help_}" for name, (_, _, help_) in COMMANDS.items())
)


class _ClosedPipeSafe:
    """A stand-in for ``sys.stdout``/``sys.stderr`` that drops output once its reader has gone.

    The first ``BrokenPipeError`` (EPIPE) points the stream's file descriptor at
    ``os.devnull`` (so the interpreter's own flush at exit succeeds too) and every
    later write is discarded, so the command finishes and returns its real status
    instead of ending in a traceback.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._closed_pipe = False

    def _drop(self) -> None:
        self._closed_pipe = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, self._stream.fileno())
            finally:
                os.close(devnull)
        except (OSError, ValueError):
            pass  # no file descriptor (a test's capture): later writes are dropped anyway

    def write(self, text: str) -> int:
        if not self._closed_pipe:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._drop()
        return len(text)

    def flush(self) -> None:
        if not self._closed_pipe:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._drop()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def main(argv: list[str] | None = None) -> int:
    """Run ``groundeval``. Returns the process exit code (see the module docstring)."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _ClosedPipeSafe(saved[0]), _ClosedPipeSafe(saved[1])
    try:
        status = _dispatch(argv)
        sys.stdout.flush()
        sys.stderr.flush()
        return status
    finally:
        sys.stdout, sys.stderr = saved


def _dispatch(argv: list[str] | None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if args else 2
    if args[0] in ("-V", "--version"):
        from importlib import metadata

        try:
            version = metadata.version("pytest-groundeval")
        except metadata.PackageNotFoundError:
            version = "unknown"
        print(f"groundeval {version}")
        return 0
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(f"groundeval: unknown command {name!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    try:
        installed = register_from(entry_point_kinds())
    except ExtensionError as exc:
        print(f"groundeval {name}: {exc}", file=sys.stderr)
        return 2
    try:
        module_name, func_name, _ = COMMANDS[name]
        func = getattr(importlib.import_module(module_name), func_name)
        return int(func(rest) or 0)
    finally:
        for kind in reversed(installed):
            unregister(kind.name)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
