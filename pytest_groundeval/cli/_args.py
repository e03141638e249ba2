"""The argument parser every ``groundeval`` sub-command uses."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from ..core.kinds.extensions import unregistered_names


class UsageError(Exception):
    """A command line the sub-command cannot run; the message says why (exit code 2)."""


class ParserExit(Exception):
    """The parser finished on its own (``--help``); ``status`` is the exit code."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class Parser(argparse.ArgumentParser):
    """An argument parser that returns to its caller instead of exiting the process.

    The sub-commands run inside ``groundeval``'s ``main`` (and in tests), which
    turn errors into exit code 2 themselves.
    """

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)

    def exit(self, status: int = 0, message: str | None = None) -> None:  # type: ignore[override]
        if message:
            print(message, file=sys.stderr, end="")
        raise ParserExit(status)

    def parse_or_status(
        self, argv: list[str], prog: str | None = None, describe: Callable[[UsageError], str] = str
    ) -> argparse.Namespace | int:
        """The parsed arguments, or the exit status the command returns instead.

        ``--help`` gives its status (0). A usage error gives 2, printed on stderr as
        ``PROG: MESSAGE`` (``describe`` words the message) when ``prog`` is given, else as
        argparse prints its own (the usage line, then ``PROG: error: MESSAGE``).
        """
        try:
            return self.parse_args(argv)
        except ParserExit as exc:
            return exc.status
        except UsageError as exc:
            if prog is None:
                return print_usage_error(self, exc)
            print(f"{prog}: {describe(exc)}", file=sys.stderr)
            return 2


def add_history_argument(parser: argparse.ArgumentParser) -> None:
    """``--history URL``: the history database of ``groundeval history`` and ``groundeval rejudge`` (docs/history.md)."""
    parser.add_argument(
        "--history",
        metavar="URL",
        help="History database: sqlite:///path, postgresql://…, or 'sqlite' for .groundeval/history.db "
        "(default: $GROUNDEVAL_HISTORY, else .groundeval/history.db)",
    )


def print_usage_error(parser: argparse.ArgumentParser, error: UsageError) -> int:
    """Print ``error`` on stderr as argparse does when it exits: the usage line, then ``PROG: error: MESSAGE``.

    For the commands whose usage errors look like argparse's own (``mock``, ``reference``,
    ``generate-questions``, ``hash-corpus``). Returns 2, the exit code of a usage error.
    """
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {error}", file=sys.stderr)
    return 2


_SCHEMA_MISMATCH = ": does not match report schema"


def report_error_text(error: Exception) -> str:
    """The message of a report that cannot be read, as a command prints it.

    When the report does not validate only because it names item kinds or metrics that no
    registered kind defines (an extension's, ``core.kinds.extensions.unregistered_names``),
    the message says that once, after the report's name, instead of one pydantic error per item.
    """
    text = str(error)
    errors = getattr(error.__cause__, "errors", None)
    if not callable(errors) or _SCHEMA_MISMATCH not in text:
        return text
    unknown = unregistered_names(errors())
    if unknown is None:
        return text
    return f"{text.split(_SCHEMA_MISMATCH, 1)[0]}: {unknown}"
