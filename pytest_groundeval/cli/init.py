"""``groundeval init [DIR]``: a new project's files (docs/byo.md, "Init"); ``byo/init.py`` writes them.

Exit codes: 0 written, 2 a usage error, a file that exists (named; nothing is written) or a write that failed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..byo.init import InitError, init_project
from ._args import Parser

PROG = "groundeval init"


def init_main(argv: list[str]) -> int:
    """``groundeval init [DIR]``: an example dataset, a ``conftest.py`` with a Python target, ``pytest.ini``, a CI workflow.

    Returns:
        0 when every file was written; 2 for a usage error, an existing file or pytest
        configuration in the way (named on stderr; nothing written), or a failed write.
    """
    parser = Parser(prog=PROG, description="Write a new project: an example dataset with floors and hashes, a "
                                           "conftest.py with a Python target, pytest.ini and a GitHub Actions "
                                           "workflow")  # fmt: skip
    parser.add_argument("dir", nargs="?", default=".", metavar="DIR", help="Where to write (default: here)")
    args = parser.parse_or_status(argv, PROG)
    if isinstance(args, int):
        return args
    root = Path(args.dir)
    try:
        written = init_project(root)
    except InitError as exc:
        print(f"{PROG}: {exc}; nothing written", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"{PROG}: {exc.filename or root}: {exc.strerror or exc}; nothing written", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path}")
    where = "" if root.resolve() == Path.cwd().resolve() else f"cd {root} && "
    print(f"next: {where}pytest    # runs groundeval/manifest.json against the target in conftest.py and gates it")
    return 0
