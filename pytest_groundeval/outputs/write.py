"""Writing the outputs made from a report: the HTML page and the Markdown gate table (docs/ci.md).

``write_outputs`` is what ``groundeval report`` and ``groundeval merge`` call with a
report's wire dict; the plugin's ``--eval-html`` / ``--eval-markdown`` use
``write_text_atomic`` with the same renderers (``plugin/controller.py``).
No pytest import here.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .html import render_html
from .markdown import render_markdown


class OutputError(ValueError):
    """An output file cannot be written, or a history file cannot be read; the message names the file."""


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file in the same directory and ``os.replace``.

    Raises:
        OutputError: The directory does not exist or is not writable.
    """
    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise OutputError(f"{target}: cannot write: {exc}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            out.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # an artifact others read, like core/report.py's files
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def read_history(path: str | Path) -> list[dict[str, Any]]:
    """Read a history file for the HTML trends: a JSON list of ``{id, startedAt, metrics}``, oldest first.

    Raises:
        OutputError: The file cannot be read, is not JSON, or an entry lacks ``id`` or
            a ``metrics`` object (the message gives the entry's index).
    """
    try:
        runs = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise OutputError(f"{path}: cannot read history: {exc}") from exc
    if not isinstance(runs, list):
        raise OutputError(f"{path}: history must be a JSON list of runs, got {type(runs).__name__}")
    for i, run in enumerate(runs):
        if not isinstance(run, dict) or "id" not in run or not isinstance(run.get("metrics"), dict):
            raise OutputError(f"{path}: history[{i}] must be an object with 'id', 'startedAt' and a 'metrics' object")
    return runs


def write_outputs(
    report: Mapping[str, Any],
    *,
    html: str | Path | None = None,
    markdown: str | Path | None = None,
    history: Sequence[Mapping[str, Any]] | None = None,
) -> list[Path]:
    """Write the HTML page and/or the Markdown table of a report (wire dict); returns the paths written.

    Raises:
        OutputError: A file cannot be written.
    """
    written = []
    if html:
        written.append(write_text_atomic(html, render_html(report, history)))
    if markdown:
        written.append(write_text_atomic(markdown, render_markdown(report)))
    return written
