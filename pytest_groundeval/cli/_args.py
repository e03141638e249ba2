"""The argument parser every ``groundeval`` sub-command uses."""

from __future__ import annotations

import argparse
import sys


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
