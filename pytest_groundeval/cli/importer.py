"""``groundeval import``: another tool's rows as a dataset of citation items (docs/byo.md, "Import").

Reading is ``byo/rows.py``'s, writing ``byo/imported.py``'s. Exit codes: 0 written,
2 a usage error or a bad file (every bad row named by its line and column; nothing written).
"""

from __future__ import annotations

import shlex
import sys
from datetime import datetime, timezone
from pathlib import Path

from ..byo.imported import write_imported
from ..byo.rows import FORMATS, RowsError, read_rows
from ..core.dataset import DatasetError
from ._args import Parser

PROG = "groundeval import"


def _renames(pairs: list[str]) -> dict[str, str] | str:
    """``--map OLD=NEW`` pairs as a dict, or the usage error's message."""
    renames: dict[str, str] = {}
    for pair in pairs:
        old, sep, new = pair.partition("=")
        if not sep or not old or not new:
            return f"--map {pair!r}: expected OLD=NEW, e.g. --map user_question=question"
        if old in renames:
            return f"--map {old}=…: given twice"
        renames[old] = new
    return renames


def import_main(argv: list[str]) -> int:
    """``groundeval import FILE --format F --out DIR [--map OLD=NEW ...] [--live] [--list-separator SEP]``.

    Returns:
        0 when the dataset was written; 2 for a usage error, a file that cannot be read or a bad
        row (all problems are printed, each with its line and column or field), or an ``--out``
        that exists and is not empty. Nothing is written unless the exit code is 0.
    """
    parser = Parser(prog=PROG, description="Import rows of a CSV, JSON Lines, ragas, deepeval or promptfoo file "
                                           "as a dataset of citation items")  # fmt: skip
    parser.add_argument("file", metavar="FILE", help="The rows to import")
    parser.add_argument("--format", required=True, choices=FORMATS, help="How FILE names its columns")
    parser.add_argument("--out", required=True, metavar="DIR", help="Directory of the new dataset (new or empty)")
    parser.add_argument("--map", action="append", default=[], metavar="OLD=NEW",
                        help="Rename a column (promptfoo: a var) before the format's names are looked up; "
                             "repeatable")  # fmt: skip
    parser.add_argument("--live", action="store_true",
                        help="Ask every question live, dropping the recorded answers")  # fmt: skip
    parser.add_argument("--list-separator", metavar="SEP",
                        help="Split a CSV cell of contexts on SEP (default: a JSON array, or one context; "
                             "deepeval: '|')")  # fmt: skip
    args = parser.parse_or_status(argv, PROG)
    if isinstance(args, int):
        return args
    renames = _renames(args.map)
    if isinstance(renames, str):
        print(f"{PROG}: {renames}", file=sys.stderr)
        return 2
    if args.list_separator == "":
        print(f"{PROG}: --list-separator must not be empty", file=sys.stderr)
        return 2
    source, out = Path(args.file), Path(args.out)
    try:
        read = read_rows(source, args.format, renames=renames, list_separator=args.list_separator)
    except RowsError as exc:
        print(f"{PROG}: {exc}\nnothing written", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"{PROG}: {source}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    command = shlex.join(["groundeval", "import", *argv])
    try:
        imported = write_imported(
            read.rows, out, fmt=args.format, source=source, container=read.container, live=args.live,
            today=datetime.now(timezone.utc).date(), command=command,
        )  # fmt: skip
    except FileExistsError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    except (OSError, DatasetError) as exc:
        print(f"{PROG}: {exc}\nnothing written", file=sys.stderr)
        return 2
    if read.ignored:
        print(f"ignored (no field of --format {args.format} names them): {', '.join(read.ignored)}", file=sys.stderr)
    print(f"imported {imported.items} row(s) of {source.name} ({args.format}) into {out}: "
          f"{imported.recorded} recorded answer(s), {imported.live} live question(s), "
          f"{imported.contexts} distinct context(s)")  # fmt: skip
    if imported.uncited:
        print(f"note: {imported.uncited} recorded answer(s) cite no [N] marker; those items will fail "
              "(an answer without citations does not pass a citation item, docs/citation.md); "
              "--live asks the questions instead")  # fmt: skip
    if imported.live:
        print(f"note: {imported.live} live question(s): their answers are checked for citations that name the "
              "sources the target returned, not for what they say; that takes a judge and a citationSupportedRate "
              "floor (docs/byo.md, Import)")  # fmt: skip
    print(f"next: pytest --eval-dataset={out}")
    return 0
