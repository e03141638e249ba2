"""The ``--html`` / ``--markdown`` / ``--history`` / ``--trends`` options of ``report`` and ``merge`` (docs/ci.md)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..history.errors import HistoryError
from ..history.urls import is_database_url
from ..outputs.write import OutputError, read_history, write_outputs


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--html OUT``, ``--markdown OUT``, ``--history URL`` and ``--trends FILE`` to a command's parser."""
    parser.add_argument("--html", metavar="OUT", help="Write the report as one self-contained HTML page")
    parser.add_argument("--markdown", metavar="OUT", help="Write the gate as a Markdown table")
    trends = parser.add_mutually_exclusive_group()
    trends.add_argument(
        "--history",
        metavar="URL",
        help="History database whose earlier runs of the same dataset and lineage the HTML page shows trends over",
    )
    trends.add_argument(
        "--trends", metavar="FILE", help="JSON list of past runs {id, startedAt, metrics}, oldest first, for trends"
    )


def output_collision(outputs: list[tuple[str, str | None]], inputs: list[tuple[str, str | None]]) -> str | None:
    """Why the files a command would write collide, or None (docs/ci.md: a stored report is never overwritten).

    Paths are compared resolved (``./r.json`` and ``r.json`` are one file). Each output
    needs its own path, and no output may be one of the command's inputs (a report it
    reads, a baseline, a floors or trends file): writing it would destroy what it reads.

    Args:
        outputs: ``(option, path)`` of each file the command would write (``-o``, ``--html``,
            ``--markdown``); a None path is not written.
        inputs: ``(what, path)`` of each file it reads (``"input report"``, ``"--baseline"``, …).

    Returns:
        One line naming both options and the path, or None when every path is distinct.
    """
    written = [(name, value, Path(value).resolve()) for name, value in outputs if value]
    for i, (name, value, resolved) in enumerate(written):
        for other, _, other_resolved in written[i + 1 :]:
            if resolved == other_resolved:
                return f"{name} and {other} name the same file ({value!r}): each output needs its own path"
        for what, source in inputs:
            if source and Path(source).resolve() == resolved:
                return (
                    f"{name} names the {what} ({value!r}): writing it would overwrite a file this command reads; "
                    "give another path (nothing was written)"
                )
    return None


def _trends(report: Mapping[str, Any], args: argparse.Namespace, prog: str) -> list[dict[str, Any]] | None:
    """The past runs the HTML page shows trends over, from ``--trends FILE`` or ``--history URL``.

    Raises:
        OutputError: the file cannot be read, or the database cannot be opened or read.
    """
    trends_file, history_url = getattr(args, "trends", None), getattr(args, "history", None)
    if history_url is not None and not is_database_url(history_url):
        print(
            f"{prog}: --history FILE (a JSON list of runs) is deprecated; use --trends FILE "
            "(--history names the history database, as on every command)",
            file=sys.stderr,
        )
        trends_file, history_url = history_url, None
    if trends_file is not None:
        return read_history(trends_file)
    if history_url is None or not getattr(args, "html", None):
        return None  # only the HTML page draws trends
    # SQLAlchemy loads only when a command reads the history database.
    from ..history.stored_report import trends_at

    try:
        return trends_at(
            history_url, report.get("datasetVersion"), report.get("models"), int(report.get("startedAtMs") or 0) - 1
        )
    except HistoryError as exc:
        raise OutputError(f"--history: {exc}") from exc


def trends_from_args(report: Mapping[str, Any], args: argparse.Namespace, prog: str) -> list[dict[str, Any]] | None:
    """The HTML page's trends for ``report`` (as ``outputs_from_args`` reads them), read before
    anything is written, so that a bad trends file or database leaves no half-written output.

    Raises:
        OutputError: the trends file or the history database cannot be read.
    """
    return _trends(report, args, prog)


def outputs_from_args(report: Mapping[str, Any], args: argparse.Namespace, prog: str, *, trends: Any = ...) -> int:
    """Write what ``--html``/``--markdown`` asked for, one ``wrote PATH`` line each.

    The HTML trends come from ``--trends FILE``, or from the runs recorded in the history
    database ``--history URL`` before this report's run (same dataset version and lineage).
    ``--history FILE`` still reads a JSON file of runs, with a deprecation warning.

    ``trends``: the trends already read (``trends_from_args``), else they are read here.

    Returns:
        0 on success; 2 with one line on stderr when a file cannot be written or the
        trends cannot be read.
    """
    try:
        history = _trends(report, args, prog) if trends is ... else trends
        for path in write_outputs(report, html=args.html, markdown=args.markdown, history=history):
            print(f"wrote {path}")
    except OutputError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    return 0
