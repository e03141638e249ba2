"""Writing the outputs made from a report: the HTML page and the Markdown gate table (docs/ci.md).

``write_outputs`` is what ``groundeval report`` and ``groundeval merge`` call with a
report's wire dict; ``write_session_outputs`` is what the plugin calls at the end of a
session (``--eval-html``, ``--eval-markdown``, the CI job summary) with each dataset's.
Every file goes through ``write_text_atomic``. No pytest import here.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .html import html_parts
from .markdown import render_markdown


class OutputError(ValueError):
    """An output file cannot be written, or a history file cannot be read; the message names the file."""


def write_text_atomic(path: str | Path, text: str | Iterable[str]) -> Path:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file in the same directory and ``os.replace``.

    ``text`` may be a string or consecutive pieces of one (``outputs.html.html_parts``),
    written as they come, so the whole text is never held.

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
            if isinstance(text, str):
                out.write(text)
            else:
                for part in text:
                    out.write(part)
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
        written.append(write_text_atomic(html, html_parts(report, history)))
    if markdown:
        written.append(write_text_atomic(markdown, render_markdown(report)))
    return written


def shown_path(path: str | Path) -> str:
    """A path as the user would type it: relative to the current directory when under it."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def session_markdown(reports: Sequence[Mapping[str, Any]]) -> str:
    """The Markdown gate tables of a session's reports: one untitled table, or one per dataset titled by version."""
    titled = len(reports) > 1
    return "\n".join(
        render_markdown(r, title=f"groundeval {r['datasetVersion']}" if titled else "groundeval") for r in reports
    )


@dataclass
class SessionOutputs:
    """What ``write_session_outputs`` wrote, and what it could not (never raised: the session reports them)."""

    written: list[Path] = field(default_factory=list)
    """The files written, in order: the HTML page, then the Markdown table."""
    errors: list[str] = field(default_factory=list)
    """One message per file not written (they fail the session)."""
    step_summary_error: str | None = None
    """Why the job summary could not be appended to (a warning only: it is a courtesy)."""


def write_session_outputs(
    reports: Sequence[Mapping[str, Any]],
    *,
    html: Path | None = None,
    markdown: Path | None = None,
    step_summary: Path | None = None,
    step_summary_name: str = "step summary",
) -> SessionOutputs:
    """Write a session's HTML page, Markdown table and job summary from its reports (wire dicts), docs/ci.md.

    The page shows one dataset: a session of several writes none and says so. The
    Markdown table (``session_markdown``) is written to ``markdown`` and appended to
    ``step_summary`` (the file ``$GITHUB_STEP_SUMMARY`` names).

    Args:
        reports: One wire dict per dataset of the session (items may be only those kept, in a
            list or an ``outputs.spool.ItemSpool``: the page reads them in several passes).
        html: ``--eval-html``'s path, or None.
        markdown: ``--eval-markdown``'s path, or None.
        step_summary: The job summary file to append to, or None.
        step_summary_name: How messages name the job summary (its environment variable).

    Returns:
        What was written, and a message for each file that could not be.
    """
    out = SessionOutputs()
    text, text_error = "", None
    try:
        text = session_markdown(reports)
    except OSError as exc:  # the items could not be read back from their spool (``outputs.spool``)
        text_error = exc

    def write(path: Path, render: Callable[[], str | Iterable[str]]) -> None:
        try:
            out.written.append(write_text_atomic(path, render()))
        except (OutputError, OSError) as exc:
            # The path once: an OutputError names it again, and an OSError names the temporary file.
            cause = exc.__cause__ if isinstance(exc, OutputError) and exc.__cause__ is not None else exc
            reason = cause.strerror if isinstance(cause, OSError) and cause.strerror else str(cause)
            out.errors.append(f"cannot write {shown_path(path)}: {reason}")

    if html is not None:
        if len(reports) > 1:  # refused before the run when the paths showed it (plugin/hooks.py)
            out.errors.append(
                f"--eval-html: this run gated {len(reports)} datasets and a page shows one; nothing written"
            )
        else:
            write(html, lambda: html_parts(reports[0]))
    if markdown is not None:
        if text_error is not None:
            out.errors.append(f"cannot write {shown_path(markdown)}: {text_error}")
        else:
            write(markdown, lambda: text)
    if step_summary is not None:
        if text_error is not None:
            out.step_summary_error = f"{step_summary_name} ({step_summary}): cannot append: {text_error}"
            return out
        try:
            with open(step_summary, "a", encoding="utf-8") as summary:
                summary.write(text + "\n")
        except OSError as exc:
            out.step_summary_error = f"{step_summary_name} ({step_summary}): cannot append: {exc}"
    return out
