"""Build ``datasets/hard`` from the real labelled data in ``../shared/data``.

The hard dataset holds the TruthfulQA-multi cases that ``datasets/v1`` leaves
out by a mechanical rule (``datasets/hard/README.md`` says which and why): the
split is made in one pass by ``scripts/build_v1.py`` (``build_datasets``), so
the two datasets can never disagree on where an item belongs.

Usage::

    python scripts/build_hard.py [--data DIR] [--out DIR]

``--data`` defaults to ``../shared/data`` relative to the repository root,
``--out`` to ``datasets/hard``.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parent
DEFAULT_OUT = SCRIPTS.parent / "datasets" / "hard"


def _build_v1() -> ModuleType:
    """``scripts/build_v1.py`` as a module (``scripts/`` is not a package)."""
    if "build_v1" in sys.modules:
        return sys.modules["build_v1"]
    spec = importlib.util.spec_from_file_location("build_v1", SCRIPTS / "build_v1.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # dataclasses resolve annotations through sys.modules, so the module must be registered to execute.
    sys.modules["build_v1"] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    """Command line: build from ``--data`` into ``--out``. Returns 0, or 2 on unusable input."""
    v1 = _build_v1()
    parser = argparse.ArgumentParser(description="Build datasets/hard from the shared labelled data")
    parser.add_argument("--data", type=Path, default=v1.DEFAULT_DATA, help="Shared data directory")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="Output dataset directory")
    args = parser.parse_args(argv)
    try:
        files = v1.build_hard(args.data)
    except v1.BuildError as exc:
        print(f"build_hard: {exc}", file=sys.stderr)
        return 2
    v1.write(files, args.out)
    print(f"build_hard: wrote {len(files)} files to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
