"""Synthetic datasets for the benchmarks: N qa items over a small corpus (docs/dataset.md).

Run: ``python benchmarks/synthetic.py OUT_DIR --items 2000 [--records 500] [--per-record]``
writes ``OUT_DIR/manifest.json`` and the corpus under ``OUT_DIR/corpus/`` and prints the
directory. The benchmarks call ``write_dataset`` directly, into a temp dir.

The corpus holds ``records`` paragraphs, each naming a key ``K00042``; qa item
``i`` asks about key ``i % records``, expects that line as evidence and lists it
as its truth. ``instant_target.py`` answers any question carrying a key with
that line's exact byte span, so every item passes and the plugin does its full
per-item work (slicing, evidence search, claim judging).

Two layouts:

- one document (the default): ``corpus/facts.txt`` of ``records`` paragraphs under
  one label, every item's ``find``;
- one document per record (``per_record``): ``corpus/facts-00042.txt`` under label
  ``FACT_00042``, the item's ``find``. For the reference server (docs/target-contract.md):
  it retrieves several blocks for a question and the mock's answer cites the first two
  (docs/mock.md), and every record is true, so in one document an item's answer
  carries a second, true claim its truths do not list and the item fails. Restricted
  to the record's own document, retrieval finds that one block and the item passes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import xxhash

DOCUMENT_NAME = "bench/facts.txt"
"""Corpus entry name of the synthetic document (what evidence spans name)."""

LABEL = "FACT"
"""Corpus label of the synthetic document; every item's ``find``."""

_PLACES = ("Aurora", "Borealis", "Cirrus", "Delta", "Ember", "Fjord", "Glacier", "Harbor")
_MONTHS = ("January", "March", "May", "July", "September", "November")


def record_key(index: int) -> str:
    """The key written in corpus line ``index`` and in the questions about it: ``K00042``."""
    return f"K{index:05d}"


def record_line(index: int) -> str:
    """Corpus line ``index``: one plain sentence naming its key (ASCII, no line break)."""
    place = _PLACES[index % len(_PLACES)]
    month = _MONTHS[index % len(_MONTHS)]
    return (
        f"Record {record_key(index)} says the {place} station logged {index * 7 % 997} readings "
        f"in sector {index % 13} during {month}."
    )


def corpus_text(records: int) -> str:
    """The whole text document: ``records`` lines, one paragraph each (already canonical).

    Blank lines between records make each record its own paragraph, so the
    reference server (docs/target-contract.md) chunks the document record by record, as a real
    corpus of short notes would be, instead of as one 50 KB chunk.
    """
    return "\n\n".join(record_line(i) for i in range(records))


def qa_item(number: int, records: int) -> dict:
    """qa item ``number`` (0-based) in wire shape; it asks about record ``number % records``."""
    index = number % records
    line = record_line(index)
    return {
        "id": f"qa-{number:06d}",
        "kind": "qa",
        "question": f"What does record {record_key(index)} say? (question {number})",
        "find": LABEL,
        "expectedEvidence": [line],
        "truths": [line],
    }


def manifest(items: int, records: int, text: str) -> dict:
    """The manifest of a dataset of ``items`` qa items over ``text`` (the one-document layout)."""
    return {
        "version": "v1",
        "corpus": [{"name": DOCUMENT_NAME, "label": LABEL, "file": "facts.txt", "format": "text"}],
        "corpusHashes": {"facts.txt": xxhash.xxh3_64_hexdigest(text.encode("utf-8"))},
        "items": [qa_item(n, records) for n in range(items)],
    }


def record_file(index: int) -> str:
    """The corpus file of record ``index`` in the one-document-per-record layout: ``facts-00042.txt``."""
    return f"facts-{index:05d}.txt"


def record_label(index: int) -> str:
    """The corpus label of record ``index`` in the one-document-per-record layout: ``FACT_00042``."""
    return f"{LABEL}_{index:05d}"


def per_record_manifest(items: int, records: int) -> dict:
    """The manifest of ``items`` qa items, each finding only its record's own document."""
    entries = [
        {"name": f"bench/{record_file(i)}", "label": record_label(i), "file": record_file(i), "format": "text"}
        for i in range(records)
    ]
    hashes = {record_file(i): xxhash.xxh3_64_hexdigest(record_line(i).encode("utf-8")) for i in range(records)}
    qa = [qa_item(n, records) | {"find": record_label(n % records)} for n in range(items)]
    return {"version": "v1", "corpus": entries, "corpusHashes": hashes, "items": qa}


def write_dataset(directory: str | Path, items: int, records: int = 500, *, per_record: bool = False) -> Path:
    """Write a dataset of ``items`` qa items over a ``records``-line corpus into ``directory``.

    The manifest is indented like a hand-edited one (one key per line), so its
    size and parse cost are those of a real manifest, not of a minified blob.

    Args:
        directory: Created if missing.
        items: Number of qa items (100,000 gives a manifest of about 40 MB).
        records: Paragraphs in the corpus.
        per_record: One document (and label) per record instead of one document
            (the module docstring says when that matters).

    Returns:
        The path of ``manifest.json``.
    """
    root = Path(directory)
    (root / "corpus").mkdir(parents=True, exist_ok=True)
    if per_record:
        for i in range(records):
            (root / "corpus" / record_file(i)).write_bytes(record_line(i).encode("utf-8"))
        data = per_record_manifest(items, records)
    else:
        text = corpus_text(records)
        (root / "corpus" / "facts.txt").write_bytes(text.encode("utf-8"))
        data = manifest(items, records, text)
    path = root / "manifest.json"
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write a synthetic qa dataset for the benchmarks")
    parser.add_argument("out", help="Directory to write manifest.json and corpus/ into")
    parser.add_argument("--items", type=int, default=2000, help="Number of qa items")
    parser.add_argument("--records", type=int, default=500, help="Paragraphs in the corpus")
    parser.add_argument("--per-record", action="store_true", help="One document and label per record")
    args = parser.parse_args(argv)
    print(write_dataset(args.out, args.items, args.records, per_record=args.per_record).parent)
    return 0


if __name__ == "__main__":
    sys.exit(main())
