"""The ``groundeval`` console script: a thin dispatcher over one module per command.

Each sub-command takes the remaining arguments: ``main(argv: list[str]) -> int``. Exit codes: 0 success (or gate
PASS), 1 gate FAIL, 2 unusable input or usage error.
"""

from __future__ import annotations

import importlib
import sys

COMMANDS: dict[str, tuple[str, str, str]] = {
    "hash-corpus": ("pytest_groundeval.cli.dataset", "hash_corpus_main", "Print corpus hashes to paste into a manifest"),
    "gate": ("pytest_groundeval.cli.gate", "gate_main", "Re-apply gate floors to a saved report"),
    "report": ("pytest_groundeval.cli.report", "report_main", "Print a saved report's metrics and items"),
    "merge": ("pytest_groundeval.cli.merge", "merge_main", "Merge the reports of a sharded run and gate them"),
    "mock": ("pytest_groundeval.mock", "main", "Serve the deterministic OpenAI-compatible mock provider"),
    "reference": ("pytest_groundeval.reference.cli", "main", "Serve the reference target, or create an API key"),
}

USAGE = "usage: groundeval [--version] {" + ",".join(COMMANDS) + "} [options]\n\n" + "\n".join(
    f"  {name:<12} {help_}" for name, (_, _, help_) in COMMANDS.items()
)


def main(argv: list[str] | None = None) -> int:
    """Run ``groundeval``. Returns the process exit code."""
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
    module_name, func_name, _ = COMMANDS[name]
    func = getattr(importlib.import_module(module_name), func_name)
    return int(func(rest) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
