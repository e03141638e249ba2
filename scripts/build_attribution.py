"""Build ``datasets/attribution`` from TimeQA's Wikipedia entity paragraphs (docs/citation.md).

Source: wenhuchen/Time-Sensitive-QA, ``dataset/human_annotated_test.json``, BSD-3-Clause;
the paragraphs are Wikipedia text (CC BY-SA). Each entity's introduction paragraph
becomes one corpus record and one citable source with metadata ``{"entity": <title>}``.

Entities qualify when they are people (the first sentence follows the title with a
parenthesis holding a year, as "Lucy Wills ( 10 May 1888 – 26 April 1964 )"), their
title is two or three capitalised words without parentheses, the first sentence of
the introduction names the title verbatim, and the second sentence names no
qualifying entity. With the n qualifying people in file order e0 … e(n-1), pair k is
(A, B) = (e(i), e(i+s mod n)) for s = 1, 2, 3 and i = 0 … n-1 in that order (the first
``--pairs``); C = e(i+s+1 mod n). Pair k is item ``attr-<k>-<variant>`` whose recorded
answer has two paragraphs citing source [1] (entity A) and [2] (entity B):

- paragraph 0: A's first sentence, cited [1] — labelled ``supported``;
- paragraph 1, by ``k % 5``:

  0. ``supported``: B's first sentence, cited [2];
  1. ``wrong_speaker`` (swap): B's first sentence with B's title replaced by A's,
     cited [2] — the mention pattern sees A, the cited source is B's: the
     deterministic check catches it;
  2. ``wrong_attribution``: B's second sentence (no name in it), cited [1] — no
     mention, so only a judge can see the content is in [2];
  3. ``unsupported``: C's second sentence (in no source), cited [2];
  4. ``wrong_speaker`` (surname): B's first sentence with B's title replaced by A's
     last word only, cited [2] — the full-name mention pattern misses it: a judge-only
     wrong speaker.

The labels are true by construction, not human judgements. ``mentionPattern`` is an
alternation of every qualifying title, longest first, as the named group ``entity``.

Usage::

    python scripts/build_attribution.py [--src FILE] [--out DIR] [--pairs N]

The output is deterministic: the same source gives byte-identical files.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))

from build_expertqa_citations import write_dataset  # noqa: E402

DEFAULT_OUT = REPO / "datasets" / "attribution"
VERSION = "v1-attribution"
"""The dataset's version string (distinct from every other dataset's)."""
FLOORS = {"citationMetadataAccuracy": 0.88}
"""The manifest's gate floors (docs/gate.md): the default run measures citationMetadataAccuracy
0.9000 (the 12 swap items' second paragraphs are the mismatches), floor 0.02 below (README.md)."""
DOCUMENT = "attribution/entities.json"
ENTITIES_FILE = "entities.json"
DEFAULT_PAIRS = 60
"""Entity pairs (items) built by default."""

VARIANTS = ("supported", "swap", "misattributed", "unsupported", "surname")
"""Paragraph-1 variants, chosen by ``pair index % 5``."""
VARIANT_LABEL = {
    "supported": "supported",
    "swap": "wrong_speaker",
    "misattributed": "wrong_attribution",
    "unsupported": "unsupported",
    "surname": "wrong_speaker",
}
"""The ``expectedVerdict`` of paragraph 1 per variant (true by construction)."""

_TITLE = re.compile(r"^[A-Z][A-Za-z'-]+(?: [A-Z][A-Za-z'-]+){1,2}$")
_SENTENCE_END = re.compile(r"(?<= \.) (?=[A-Z])")
_LIFE_DATES = re.compile(r"^\( [^)]*\b\d{4}\b[^)]*\)")


def sentences(paragraph: str) -> list[str]:
    """TimeQA's tokenised paragraph split at `` . `` followed by a capital letter."""
    return [s.strip() for s in _SENTENCE_END.split(paragraph) if s.strip()]


def qualifying(entities: list[dict]) -> list[dict]:
    """``[{"entity", "link", "text", "first", "second"}]`` of the entities that qualify (module docstring)."""
    candidates = []
    for entity in entities:
        paras = entity.get("paras") or []
        if len(paras) < 2:
            continue
        title, intro = paras[0].strip(), " ".join(paras[1].split())
        parts = sentences(intro)
        if not _TITLE.match(title) or len(parts) < 2 or title not in parts[0]:
            continue
        if len(parts[0]) < 60 or len(parts[1]) < 40:
            continue
        after = parts[0].split(title, 1)[1].lstrip()
        if not _LIFE_DATES.match(after):
            continue
        candidates.append(
            {"entity": title, "link": entity.get("link", ""), "text": intro, "first": parts[0], "second": parts[1]}
        )
    titles = {c["entity"] for c in candidates}
    seen: set[str] = set()
    chosen = []
    for c in candidates:
        if c["entity"] in seen or any(t in c["second"] for t in titles):
            continue
        seen.add(c["entity"])
        chosen.append(c)
    return chosen


def build_dataset(entities: list[dict], pairs: int) -> tuple[dict, list[dict]]:
    """The manifest (without corpus hashes) and the corpus records."""
    chosen = qualifying(entities)
    n = len(chosen)
    triples = [(chosen[i], chosen[(i + s) % n], chosen[(i + s + 1) % n]) for s in (1, 2, 3) for i in range(n)]
    items = []
    for k, (a, b, c) in enumerate(triples[:pairs]):
        variant = VARIANTS[k % len(VARIANTS)]
        if variant == "supported":
            second, marker = b["first"], "2"
        elif variant == "swap":
            second, marker = b["first"].replace(b["entity"], a["entity"]), "2"
        elif variant == "misattributed":
            second, marker = b["second"], "1"
        elif variant == "unsupported":
            second, marker = c["second"], "2"
        else:
            second, marker = b["first"].replace(b["entity"], a["entity"].split()[-1]), "2"
        answer = f"{a['first']} [1]\n\n{second} [{marker}]"
        items.append(
            {
                "id": f"attr-{k:03d}-{variant}",
                "kind": "citation",
                "tags": ["attribution", variant],
                "response": {
                    "answer": answer,
                    "sources": [
                        {"marker": "1", "document": DOCUMENT, "text": a["text"], "metadata": {"entity": a["entity"]}},
                        {"marker": "2", "document": DOCUMENT, "text": b["text"], "metadata": {"entity": b["entity"]}},
                    ],
                },
                "paragraphLabels": [
                    {"index": 0, "expectedVerdict": "supported"},
                    {"index": 1, "expectedVerdict": VARIANT_LABEL[variant]},
                ],
            }
        )
    titles = sorted({e["entity"] for e in chosen}, key=lambda t: (-len(t), t))
    manifest = {
        "version": VERSION,
        "floors": dict(FLOORS),
        "corpus": [{"name": DOCUMENT, "label": "WIKIPEDIA_ENTITY", "file": ENTITIES_FILE, "format": "json"}],
        "corpusHashes": {},
        "mentionPattern": "(?P<entity>" + "|".join(re.escape(t) for t in titles) + ")",
        "items": items,
    }
    records = [{"entity": e["entity"], "link": e["link"], "text": e["text"]} for e in chosen]
    return manifest, records


def build(src: Path, out: Path, pairs: int = DEFAULT_PAIRS) -> None:
    """Regenerate the dataset from ``src`` into ``out`` (README and LICENSE untouched)."""
    if not src.is_file():
        raise SystemExit(f"build_attribution: {src} not found (TimeQA human_annotated_test.json, see the README)")
    manifest, records = build_dataset(json.loads(src.read_text(encoding="utf-8")), pairs)
    corpus = {ENTITIES_FILE: (json.dumps(records, ensure_ascii=False, indent=0) + "\n").encode("utf-8")}
    write_dataset(out, manifest, corpus)


def main(argv: list[str] | None = None) -> int:
    """Command line: ``--src FILE --out DIR --pairs N``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--src", type=Path, required=True, help="The source file, e.g. ../shared/data/timeqa/human_annotated_test.json"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--pairs", type=int, default=DEFAULT_PAIRS)
    args = parser.parse_args(argv)
    build(args.src, args.out, args.pairs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
