"""``groundeval hash-corpus``: print corpus hashes to paste into a manifest (docs/dataset.md).

It reads the manifest's corpus list without the validating loader, so it works
exactly when the manifest's hashes are wrong.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ..core.dataset.corpus import hash_file
from ..core.dataset.manifest import inside_corpus
from ._args import Parser


def _corpus_files(root: Path) -> list[str]:
    """Corpus files named by the manifest; every file under corpus/ if the manifest is unusable.

    Raises:
        OSError: A listed file lies outside corpus/, or there is nothing to list.
    """
    files: list[str] = []
    try:
        corpus = json.loads((root / "manifest.json").read_bytes().decode("utf-8-sig"))["corpus"]
        files = sorted({entry["file"] for entry in corpus if isinstance(entry["file"], str)})
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        pass
    outside = [name for name in files if not inside_corpus(name)]
    if outside:
        raise OSError(f"{root / 'manifest.json'}: corpus file {outside[0]!r} is not a path inside corpus/")
    if files:
        return files
    corpus_dir = root / "corpus"
    if not corpus_dir.is_dir():
        raise OSError(f"{root}: neither a usable manifest.json corpus list nor a corpus/ directory")
    return sorted(p.relative_to(corpus_dir).as_posix() for p in corpus_dir.rglob("*") if p.is_file())


def _current_hashes(root: Path) -> dict[str, Any]:
    try:
        hashes = json.loads((root / "manifest.json").read_bytes().decode("utf-8-sig")).get("corpusHashes")
        return hashes if isinstance(hashes, dict) else {}
    except (OSError, ValueError, AttributeError, RecursionError):
        return {}


def hash_corpus_main(argv: list[str]) -> int:
    """``groundeval hash-corpus --dataset DIR``: print corpus hashes to paste into a manifest.

    Prints one ``"file": "digest"`` line per corpus file, sorted by file name, each
    followed by a comma except the last, so the lines paste as the body of the
    ``corpusHashes`` object. Files come from the manifest's ``corpus`` list, or
    every file under ``corpus/`` when the manifest is unusable. The manifest's
    current hashes are never checked (fixing them is the point); files whose hash
    changed are listed on stderr.

    Returns:
        0 on success; 2 on a usage error or unreadable input (one-line message on stderr).
    """
    parser = Parser(
        prog="groundeval hash-corpus",
        description="Print xxh3_64 hashes of a dataset's corpus files, ready to paste into corpusHashes",
    )
    parser.add_argument("--dataset", required=True, metavar="DIR", help="Dataset directory (or its manifest.json)")
    args = parser.parse_or_status(argv)
    if isinstance(args, int):
        return args
    root = Path(args.dataset)
    if root.name == "manifest.json" and root.is_file():
        root = root.parent
    try:
        if not root.is_dir():
            raise OSError(f"{root}: not a dataset directory")
        files = _corpus_files(root)
        digests = [(name, hash_file(root / "corpus" / name)) for name in files]
    except OSError as exc:
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        print(f"groundeval hash-corpus: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    lines = [f"{json.dumps(name, ensure_ascii=False)}: {json.dumps(digest)}" for name, digest in digests]
    print(",\n".join(lines))
    if not (root / "manifest.json").is_file():
        # Nothing to compare with: a dataset being written (docs/byo.md), every file under corpus/.
        print(f"no manifest.json in {root} yet: paste these as its corpusHashes", file=sys.stderr)
        return 0
    current = _current_hashes(root)
    changed = [name for name, digest in digests if current.get(name) != digest]
    if changed:
        print(f"changed or new since manifest.json: {', '.join(changed)}", file=sys.stderr)
    return 0
