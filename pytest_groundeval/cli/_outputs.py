"""The ``--html`` / ``--markdown`` / ``--history`` options shared by ``groundeval report`` and ``merge`` (docs/ci.md)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import Any

from ..outputs.write import OutputError, read_history, write_outputs


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--html OUT``, ``--markdown OUT`` and ``--history FILE`` to a command's parser."""
    parser.add_argument("--html", metavar="OUT", help="Write the report as one self-contained HTML page")
    parser.add_argument("--markdown", metavar="OUT", help="Write the gate as a Markdown table")
    parser.add_argument("--history", metavar="FILE", help="JSON list of past runs {id, startedAt, metrics} for trends")


def outputs_from_args(report: Mapping[str, Any], args: argparse.Namespace, prog: str) -> int:
    """Write what ``--html``/``--markdown`` asked for, one ``wrote PATH`` line each.

    Returns:
        0 on success; 2 with one line on stderr when a file cannot be written or the
        history cannot be read.
    """
    try:
        history = read_history(args.history) if getattr(args, "history", None) else None
        for path in write_outputs(report, html=args.html, markdown=args.markdown, history=history):
            print(f"wrote {path}")
    except OutputError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    return 0
