"""Build ``datasets/expertqa-citations`` from ExpertQA's annotated claims (docs/citation.md).

Source: chaitanyamalaviya/ExpertQA, ``data/lfqa/rand_test.jsonl`` (first 180 rows), MIT
licence. Each answer's claims carry the evidence passages the system cited (``[n] URL``
then the passage) and the annotators' ``support`` label. Each claim with at least one
cited passage and a support label becomes one ``citation`` item: the claim as a
recorded one-paragraph answer, its passages as the recorded sources (text and URL),
and the support label mapped to the paragraph's ``expectedVerdict``:

    Complete → supported, Partial → partial, Incomplete → unsupported

(``Missing`` claims cite no passage and ``N/A`` claims have no judgement: both are left
out). The distinct passages are also the corpus, so ``groundeval generate-questions``
can seed questions from them.

Usage::

    python scripts/build_expertqa_citations.py            # regenerate the dataset
    python scripts/build_expertqa_citations.py --out DIR  # write somewhere else

The output is deterministic: the same source gives byte-identical files.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

import xxhash

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "datasets" / "expertqa-citations"
VERSION = "v1-expertqa-citations"
"""The dataset's version string (distinct from every other dataset's)."""
FLOORS = {"citationMetadataAccuracy": 0.98}
"""The manifest's gate floors (docs/gate.md): the default run measures citationMetadataAccuracy
1.0000, floor 0.02 below (README.md)."""

DOCUMENT = "expertqa-citations/passages.json"
"""Corpus name of the passages document."""
PASSAGES_FILE = "passages.json"

SUPPORT_VERDICT = {"Complete": "supported", "Partial": "partial", "Incomplete": "unsupported"}
"""Annotator ``support`` label → the paragraph's ``expectedVerdict``; other labels are left out."""

_EVIDENCE = re.compile(r"^\[(\d+)\] (\S+)\n(.*)$", re.DOTALL)
_MARKER = re.compile(r"\[(\d+)\]")


def read_rows(src: Path) -> list[dict]:
    """The source rows, in file order.

    Raises:
        SystemExit: The file is missing (with a message naming it).
    """
    if not src.is_file():
        raise SystemExit(f"build_expertqa_citations: {src} not found (ExpertQA rand_test.jsonl, see the README)")
    return [json.loads(line) for line in src.read_text(encoding="utf-8").splitlines() if line.strip()]


def passages_of(claim: dict) -> dict[str, tuple[str, str]]:
    """Marker → ``(url, passage)`` of a claim's evidence entries that carry a passage (URL-only ones are dropped)."""
    found: dict[str, tuple[str, str]] = {}
    for entry in claim.get("evidence") or []:
        match = _EVIDENCE.match(entry)
        if match and match.group(3).strip():
            found.setdefault(match.group(1), (match.group(2), match.group(3).strip()))
    return found


def build_dataset(rows: Sequence[dict]) -> tuple[dict, list[dict]]:
    """The manifest (without corpus hashes) and the passage records."""
    passages: dict[str, int] = {}
    records: list[dict] = []
    items: list[dict] = []
    for row_number, row in enumerate(rows):
        for system in sorted(row["answers"]):
            for n, claim in enumerate(row["answers"][system]["claims"], start=1):
                verdict = SUPPORT_VERDICT.get(claim.get("support", ""))
                text = " ".join(claim["claim_string"].split())
                cited = passages_of(claim)
                if verdict is None or not cited or not _MARKER.search(text):
                    continue
                sources = []
                for marker, (url, passage) in sorted(cited.items(), key=lambda kv: int(kv[0])):
                    if passage not in passages:
                        passages[passage] = len(records)
                        records.append({"id": f"p{len(records) + 1:04d}", "url": url, "text": passage})
                    sources.append({"marker": marker, "document": DOCUMENT, "text": passage, "metadata": {"url": url}})
                items.append(
                    {
                        "id": f"eqa-{row_number:03d}-{system}-c{n}",
                        "kind": "citation",
                        "tags": ["expertqa", system],
                        "response": {"answer": text, "sources": sources},
                        "paragraphLabels": [{"index": 0, "expectedVerdict": verdict}],
                    }
                )
    manifest = {
        "version": VERSION,
        "floors": dict(FLOORS),
        "corpus": [{"name": DOCUMENT, "label": "EXPERTQA_PASSAGE", "file": PASSAGES_FILE, "format": "json"}],
        "corpusHashes": {},
        "items": items,
    }
    return manifest, records


def write_dataset(out: Path, manifest: dict, corpus: dict[str, bytes]) -> None:
    """Write ``manifest.json`` and ``corpus/`` (replacing an old ``corpus/``), hashing each corpus file."""
    if (out / "corpus").exists():
        shutil.rmtree(out / "corpus")
    (out / "corpus").mkdir(parents=True)
    for name, data in corpus.items():
        (out / "corpus" / name).write_bytes(data)
    manifest["corpusHashes"] = {name: xxhash.xxh3_64_hexdigest(data) for name, data in sorted(corpus.items())}
    text = json.dumps(manifest, ensure_ascii=False, indent=1) + "\n"
    (out / "manifest.json").write_bytes(text.encode("utf-8"))


def build(src: Path, out: Path) -> None:
    """Regenerate the dataset from ``src`` into ``out`` (the README and LICENSE are not touched)."""
    manifest, records = build_dataset(read_rows(src))
    corpus = {PASSAGES_FILE: (json.dumps(records, ensure_ascii=False, indent=0) + "\n").encode("utf-8")}
    write_dataset(out, manifest, corpus)


def main(argv: list[str] | None = None) -> int:
    """Command line: ``--src FILE --out DIR``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--src", type=Path, required=True, help="The source file, e.g. ../shared/data/expertqa/rand_test.first180.jsonl"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    build(args.src, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
